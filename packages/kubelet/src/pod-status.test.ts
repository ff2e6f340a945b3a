import type { ContainerStatus, Pod } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { containerConfig, containerHash, linuxResources, sandboxConfig } from './cri-config.js';
import { podPhase } from './pod-status.js';

const pod = (restartPolicy: 'Always' | 'OnFailure' | 'Never', inits: string[] = []): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { restartPolicy, initContainers: inits.map((name) => ({ name })), containers: [{ name: 'a' }, { name: 'b' }] },
});

const running = (name: string): ContainerStatus => ({ name, ready: true, restartCount: 0, image: '', imageID: '', state: { running: {} } });
const exited = (name: string, exitCode: number): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  image: '',
  imageID: '',
  state: { terminated: { exitCode } },
});
const waiting = (name: string, lastExit?: number): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 1,
  image: '',
  imageID: '',
  state: { waiting: { reason: 'CrashLoopBackOff' } },
  lastState: lastExit === undefined ? {} : { terminated: { exitCode: lastExit } },
});

describe('podPhase (kubelet getPhase)', () => {
  it.each([
    ['all running', 'Always', [running('a'), running('b')], 'Running'],
    ['one not created yet', 'Always', [running('a'), { ...waiting('b'), restartCount: 0 }], 'Pending'],
    ['crash looping counts as stopped, pod stays Running', 'Always', [running('a'), waiting('b', 1)], 'Running'],
    ['all succeeded under Never', 'Never', [exited('a', 0), exited('b', 0)], 'Succeeded'],
    ['one failed under Never', 'Never', [exited('a', 0), exited('b', 2)], 'Failed'],
    ['all succeeded under OnFailure', 'OnFailure', [exited('a', 0), exited('b', 0)], 'Succeeded'],
    ['failed under OnFailure restarts: Running', 'OnFailure', [exited('a', 0), exited('b', 1)], 'Running'],
    ['all exited under Always: Running (restarting)', 'Always', [exited('a', 0), exited('b', 0)], 'Running'],
  ] as const)('%s', (_n, policy, statuses, phase) => {
    expect(podPhase(pod(policy), [], [...statuses])).toBe(phase);
  });

  it('is Pending while an init container has not succeeded, Failed when it failed under Never', () => {
    expect(podPhase(pod('Always', ['i']), [running('i')], [])).toBe('Pending');
    expect(podPhase(pod('Never', ['i']), [exited('i', 1)], [])).toBe('Failed');
    expect(podPhase(pod('Always', ['i']), [exited('i', 1)], [])).toBe('Pending');
  });
});

describe('CRI configuration from a pod', () => {
  it('maps hostPorts, DNS, namespaces and labels like kuberuntime', () => {
    const p: Pod = {
      ...pod('Always'),
      spec: {
        containers: [{ name: 'web', ports: [{ containerPort: 80, hostPort: 8080, protocol: 'UDP' }, { containerPort: 9090 }] }],
        hostPID: true,
      },
    };
    const cfg = sandboxConfig(p, 2, { nodeName: 'n1', podLogsDir: '/var/log/pods', clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' });
    expect(cfg.metadata).toEqual({ name: 'p', namespace: 'ns', uid: 'u1', attempt: 2 });
    expect(cfg.logDirectory).toBe('/var/log/pods/ns_p_u1');
    expect(cfg.portMappings).toEqual([
      { protocol: 1, containerPort: 80, hostPort: 8080, hostIp: '' },
      { protocol: 0, containerPort: 9090, hostPort: 0, hostIp: '' },
    ]);
    expect(cfg.dnsConfig?.searches).toEqual(['ns.svc.cluster.local', 'svc.cluster.local', 'cluster.local']);
    expect(cfg.linux?.securityContext?.namespaceOptions).toEqual({ network: 0, pid: 2, ipc: 0 });
    expect(cfg.labels).toMatchObject({ 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.pod.name': 'p' });
  });

  it('shares one PID namespace across the pod with shareProcessNamespace', () => {
    const p: Pod = { ...pod('Always'), spec: { containers: [{ name: 'web' }], shareProcessNamespace: true } };
    const ctx = { nodeName: 'n1', podLogsDir: '/var/log/pods', clusterDNS: [], clusterDomain: 'cluster.local' };
    expect(sandboxConfig(p, 0, ctx).linux?.securityContext?.namespaceOptions?.pid).toBe(0);
    const c = containerConfig(p, p.spec.containers[0], 0, { volumePaths: new Map(), kind: 'regular' });
    expect(c.linux?.securityContext?.namespaceOptions?.pid).toBe(0);
    const own = containerConfig({ ...p, spec: { containers: p.spec.containers } }, p.spec.containers[0], 0, { volumePaths: new Map(), kind: 'regular' });
    expect(own.linux?.securityContext?.namespaceOptions?.pid).toBe(1);
  });

  it('turns requests and limits into cgroup values', () => {
    expect(linuxResources({ name: 'c', resources: { requests: { cpu: '250m' }, limits: { cpu: '500m', memory: '128Mi' } } })).toEqual({
      cpuShares: 256,
      cpuPeriod: 100000,
      cpuQuota: 50000,
      memoryLimitInBytes: 134217728,
    });
    expect(linuxResources({ name: 'c' }).cpuShares).toBe(2);
    expect(containerHash({ name: 'c', image: 'a' })).not.toBe(containerHash({ name: 'c', image: 'b' }));
  });
});
