// `kemu get` for the workload kinds: kubectl's names resolve, and the columns are kubectl's.
import type { Deployment, Job } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { printTable, resolveKind } from './printers.js';

describe('kemu get for workload kinds', () => {
  it('resolves kubectl names and short names', () => {
    expect(['deploy', 'rs', 'sts', 'ds', 'cj', 'svc', 'ep', 'netpol', 'sa', 'pdb', 'hpa', 'rc', 'endpointslices', 'ing'].map(resolveKind)).toEqual([
      'Deployment',
      'ReplicaSet',
      'StatefulSet',
      'DaemonSet',
      'CronJob',
      'Service',
      'Endpoints',
      'NetworkPolicy',
      'ServiceAccount',
      'PodDisruptionBudget',
      'HorizontalPodAutoscaler',
      'ReplicationController',
      'EndpointSlice',
      'Ingress',
    ]);
  });

  it('prints READY, UP-TO-DATE, AVAILABLE for Deployments and COMPLETIONS for Jobs', () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    const d = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: { spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
      status: { replicas: 3, readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
    } as Deployment;
    expect(printTable('Deployment', [d], { now }).split('\n')).toEqual(['NAME   READY   UP-TO-DATE   AVAILABLE   AGE', 'web    2/3     3            2           10m']);
    const j = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'pi', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { completions: 5, template: { spec: { containers: [{ name: 'c', image: 'perl' }] } } },
      status: { succeeded: 5, startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:00:42Z', conditions: [{ type: 'Complete', status: 'True' }] },
    } as Job;
    expect(printTable('Job', [j], { now }).split('\n')[0].split(/\s+/)).toEqual(['NAME', 'STATUS', 'COMPLETIONS', 'DURATION', 'AGE']);
  });
});
