import type { Deployment } from '@kemu/core';
import { expect, it } from 'vitest';
import { describeObject } from './describe.js';

it('describes a Deployment as kubectl does: replicas line, strategy, template, conditions', () => {
  const d = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z', labels: { app: 'web' }, annotations: { 'deployment.kubernetes.io/revision': '2' } },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'web' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] } },
    },
    status: {
      replicas: 3,
      updatedReplicas: 3,
      availableReplicas: 3,
      unavailableReplicas: 0,
      conditions: [
        { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
        { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
      ],
    },
  } as Deployment;
  const out = describeObject(d, [], Date.parse('2026-01-01T00:10:00Z')).split('\n');
  expect(out).toContain('Replicas:              3 desired | 3 updated | 3 total | 3 available | 0 unavailable');
  expect(out).toContain('RollingUpdateStrategy: 0 max unavailable, 1 max surge');
  expect(out).toContain('Selector:              app=web');
  expect(out).toContain('    Image:       nginx:1.27');
  expect(out).toContain('    Port:        80/TCP');
  expect(out.slice(out.indexOf('Conditions:'), out.indexOf('Conditions:') + 5)).toEqual([
    'Conditions:',
    '  Type          Status   Reason',
    '  ----          ------   ------',
    '  Available     True     MinimumReplicasAvailable',
    '  Progressing   True     NewReplicaSetAvailable',
  ]);
});
