import { createMemoryStore, type Pod, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContainerConfigError } from './container-config-error.js';
import { expandCommandAndArgs, expandSubPathExpr, makeEnvironmentVariables } from './container-env.js';
import { containerResourceValue, formatMap } from './downward-api.js';
import { storeObjectSource } from './object-source.js';
import { serviceEnvVars, servicesForPod } from './service-env.js';

let store: Store;
beforeEach(async () => {
  store = await createMemoryStore();
  await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1' } });
  await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: 'ns1' }, data: { LEVEL: 'debug', '9lives': 'x', '1st': 'y', URL: 'http://$(HOST)' } });
  await store.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: 'ns1' }, stringData: { password: 's3cr=t', user: 'admin' } });
  await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, status: { allocatable: { cpu: '4', memory: '8Gi' } } });
});
afterEach(() => store.close());

function pod(container: Partial<Pod['spec']['containers'][0]>, spec: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-1', namespace: 'ns1', uid: 'u-1', labels: { app: 'web', tier: 'fe' }, annotations: { note: 'a "quoted" value' } },
    spec: { nodeName: 'n1', serviceAccountName: 'sa', containers: [{ name: 'main', image: 'busybox', ...container }], ...spec },
  };
}

const ctx = { podIPs: ['10.244.1.5', 'fd00::5'], hostIPs: ['192.0.2.10'] };
const run = (p: Pod) => makeEnvironmentVariables(p, p.spec.containers[0], storeObjectSource(store, 'n1'), ctx);
const asMap = (env: { name: string; value: string }[]) => Object.fromEntries(env.map((e) => [e.name, e.value]));

describe('makeEnvironmentVariables', () => {
  it('takes envFrom with prefixes, skipping invalid names with one warning, then env over it', async () => {
    const p = pod({
      envFrom: [{ configMapRef: { name: 'app' } }, { prefix: 'DB_', secretRef: { name: 'creds' } }],
      env: [
        { name: 'LEVEL', value: 'info' },
        { name: 'WHO', value: '$(DB_user)@$(LEVEL) $$(LEVEL) $(NOPE)' },
      ],
    });
    const { env, warnings } = await run(p);
    expect(asMap(env)).toEqual({ LEVEL: 'info', URL: 'http://$(HOST)', DB_password: 's3cr=t', DB_user: 'admin', WHO: 'admin@info $(LEVEL) $(NOPE)' });
    expect(warnings).toEqual([
      {
        reason: 'InvalidEnvironmentVariableNames',
        message: 'Keys [1st, 9lives] from the EnvFrom configMap ns1/app were skipped since they are considered invalid environment variable names.',
      },
    ]);
  });

  it('resolves valueFrom of every kind', async () => {
    const p = pod({
      resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { memory: '128Mi' } },
      env: [
        { name: 'LVL', valueFrom: { configMapKeyRef: { name: 'app', key: 'LEVEL' } } },
        { name: 'PW', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
        { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        { name: 'IPS', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } },
        { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
        { name: 'CPU_REQ', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
        { name: 'CPU_LIM', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
        { name: 'MEM_LIM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
        { name: 'MEM_REQ', valueFrom: { resourceFieldRef: { containerName: 'main', resource: 'requests.memory' } } },
      ],
    });
    expect(asMap((await run(p)).env)).toEqual({
      LVL: 'debug',
      PW: 's3cr=t',
      POD: 'web-1',
      NS: 'ns1',
      UID: 'u-1',
      APP: 'web',
      NODE: 'n1',
      SA: 'sa',
      IP: '10.244.1.5',
      IPS: '10.244.1.5,fd00::5',
      HOST_IP: '192.0.2.10',
      CPU_REQ: '250',
      CPU_LIM: '4', // no limit: the node's allocatable
      MEM_LIM: '128',
      MEM_REQ: String(64 * 1024 * 1024),
    });
  });

  it('fails with the kubelet messages for a missing object or key, and skips optional ones', async () => {
    const err = (p: Pod) => run(p).then(() => undefined, (e) => e);
    const cases: [Partial<Pod['spec']['containers'][0]>, string][] = [
      [{ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'app', key: 'MISSING' } } }] }, "couldn't find key MISSING in ConfigMap ns1/app"],
      [{ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } }] }, "couldn't find key token in Secret ns1/creds"],
      [{ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'gone', key: 'k' } } }] }, 'configmap "gone" not found'],
      [{ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'gone', key: 'k' } } }] }, 'secret "gone" not found'],
      [{ envFrom: [{ configMapRef: { name: 'gone' } }] }, 'configmap "gone" not found'],
      [{ envFrom: [{ secretRef: { name: 'gone' } }] }, 'secret "gone" not found'],
      [{ env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.bogus' } } }] }, 'unsupported fieldPath: spec.bogus'],
    ];
    for (const [c, message] of cases) {
      const e = await err(pod(c));
      expect(e, message).toBeInstanceOf(ContainerConfigError);
      expect(e.message).toBe(message);
    }
    const optional = pod({
      envFrom: [{ configMapRef: { name: 'gone', optional: true } }, { secretRef: { name: 'gone', optional: true } }],
      env: [
        { name: 'A', valueFrom: { configMapKeyRef: { name: 'app', key: 'MISSING', optional: true } } },
        { name: 'B', valueFrom: { secretKeyRef: { name: 'gone', key: 'k', optional: true } } },
        { name: 'C', value: 'set' },
      ],
    });
    expect(asMap((await run(optional)).env)).toEqual({ C: 'set' });
  });
});

describe('Service variables', () => {
  const svc = (name: string, namespace: string, clusterIP: string, ports: { name?: string; port: number; protocol?: string }[]) => ({
    metadata: { name, namespace },
    spec: { clusterIP, ports },
  });

  it('writes host, port, named ports and docker-link variables', () => {
    expect(asMap(serviceEnvVars([svc('redis-primary', 'ns1', '10.96.0.11', [{ port: 6379 }, { name: 'metrics', port: 9121, protocol: 'UDP' }])]))).toEqual({
      REDIS_PRIMARY_SERVICE_HOST: '10.96.0.11',
      REDIS_PRIMARY_SERVICE_PORT: '6379',
      REDIS_PRIMARY_SERVICE_PORT_METRICS: '9121',
      REDIS_PRIMARY_PORT: 'tcp://10.96.0.11:6379',
      REDIS_PRIMARY_PORT_6379_TCP: 'tcp://10.96.0.11:6379',
      REDIS_PRIMARY_PORT_6379_TCP_PROTO: 'tcp',
      REDIS_PRIMARY_PORT_6379_TCP_PORT: '6379',
      REDIS_PRIMARY_PORT_6379_TCP_ADDR: '10.96.0.11',
      REDIS_PRIMARY_PORT_9121_UDP: 'udp://10.96.0.11:9121',
      REDIS_PRIMARY_PORT_9121_UDP_PROTO: 'udp',
      REDIS_PRIMARY_PORT_9121_UDP_PORT: '9121',
      REDIS_PRIMARY_PORT_9121_UDP_ADDR: '10.96.0.11',
    });
    expect(serviceEnvVars([svc('v6', 'ns1', 'fd00::10', [{ port: 80 }])]).find((e) => e.name === 'V6_PORT')?.value).toBe('tcp://[fd00::10]:80');
  });

  it('lists the namespace\'s services only with enableServiceLinks, the kubernetes service always, headless never', () => {
    const all = [
      svc('kubernetes', 'default', '10.96.0.1', [{ name: 'https', port: 443 }]),
      svc('web', 'ns1', '10.96.0.20', [{ port: 80 }]),
      svc('other', 'ns2', '10.96.0.30', [{ port: 80 }]),
      svc('headless', 'ns1', 'None', [{ port: 80 }]),
    ];
    expect(servicesForPod(all, 'ns1', true).map((s) => s.metadata.name)).toEqual(['kubernetes', 'web']);
    expect(servicesForPod(all, 'ns1', false).map((s) => s.metadata.name)).toEqual(['kubernetes']);
  });
});

describe('command, args and subPathExpr', () => {
  it('expand against the final environment', () => {
    const env = [
      { name: 'GREETING', value: 'hello' },
      { name: 'POD', value: 'web-1' },
    ];
    expect(expandCommandAndArgs({ name: 'c', command: ['echo', '$(GREETING)'], args: ['$$(GREETING)', '$(UNSET)'] }, env)).toEqual({
      command: ['echo', 'hello'],
      args: ['$(GREETING)', '$(UNSET)'],
    });
    expect(expandSubPathExpr('logs/$(POD)', env)).toBe('logs/web-1');
    expect(() => expandSubPathExpr('$(NOPE)/$(ALSO)', env)).toThrow('missing value for ALSO, NOPE');
  });
});

describe('downward API values', () => {
  it('formats label maps sorted and quoted, and divides resources rounding up', () => {
    expect(formatMap({ tier: 'fe', app: 'web', q: 'a "b"' })).toBe('app="web"\nq="a \\"b\\""\ntier="fe"');
    const c = { name: 'c', resources: { limits: { cpu: '1500m', memory: '1G' } } };
    expect(containerResourceValue(c, 'limits.cpu', undefined, {})).toBe('2');
    expect(containerResourceValue(c, 'limits.cpu', '1m', {})).toBe('1500');
    expect(containerResourceValue(c, 'limits.memory', '1Mi', {})).toBe('954');
    expect(() => containerResourceValue(c, 'limits.gpu', undefined, {})).toThrow('unsupported container resource : limits.gpu');
  });
});
