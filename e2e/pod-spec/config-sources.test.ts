// The composed cluster on embedded defaults: a pod whose env and mounted files come from a ConfigMap and
// a Secret (env, envFrom, a projected volume), what `kemu exec` shows of them, a ConfigMap change reaching
// the mounted file, the kubelet's error for a missing key, and a Job-style `echo done` pod completing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeObject, Pod } from '@kemu/core';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningPod, until } from '../cluster/util.js';

let cluster: Cluster;
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-podspec-'));

beforeAll(async () => {
  cluster = await Cluster.start({ stateDir, nodes: 2, fast: true });
  await cluster.store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: 'default' }, data: { LOG_LEVEL: 'debug', 'app.properties': 'color=blue\n' } });
  await cluster.store.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-creds', namespace: 'default' }, stringData: { username: 'app', password: 's3cr3t' } });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const exec = (pod: string, command: string[]) => cluster.extensions().podExec!('default', pod, { command });

describe('a pod configured from a ConfigMap and a Secret', () => {
  it('sees env, envFrom and projected files, and the file follows a ConfigMap change', async () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'busybox:1.36',
            command: ['sleep', 'infinity'],
            envFrom: [{ configMapRef: { name: 'app-config' } }],
            env: [
              { name: 'DB_USER', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'username' } } },
              { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'password' } } },
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'DSN', value: 'postgres://$(DB_USER):$(DB_PASSWORD)@db:5432/$(LOG_LEVEL) $$(kept)' },
            ],
            volumeMounts: [{ name: 'config', mountPath: '/etc/app', readOnly: true }],
          },
        ],
        volumes: [
          {
            name: 'config',
            projected: {
              sources: [
                { configMap: { name: 'app-config', items: [{ key: 'app.properties', path: 'app.properties' }] } },
                { secret: { name: 'db-creds', items: [{ key: 'password', path: 'secret/password', mode: 0o400 }] } },
                { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
              ],
            },
          },
        ],
      },
    };
    // A Service of the namespace that exists before the pod shows in its env (enableServiceLinks).
    const svc = (await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'redis-primary', namespace: 'default' },
      spec: { selector: { app: 'redis' }, ports: [{ name: 'redis', port: 6379, targetPort: 6379 }] },
    } as KubeObject)) as KubeObject & { spec: { clusterIP: string } };
    await cluster.store.create(pod);
    const running = await runningPod(cluster.store, 'web');

    const env = (await exec('web', ['env'])).stdout.split('\n');
    expect(env).toEqual(
      expect.arrayContaining([
        'LOG_LEVEL=debug',
        'DB_USER=app',
        'DB_PASSWORD=s3cr3t',
        `NODE=${running.spec.nodeName}`,
        `POD_IP=${running.status?.podIP}`,
        'DSN=postgres://app:s3cr3t@db:5432/debug $(kept)',
        `REDIS_PRIMARY_SERVICE_HOST=${svc.spec.clusterIP}`,
        'REDIS_PRIMARY_SERVICE_PORT=6379',
        'REDIS_PRIMARY_SERVICE_PORT_REDIS=6379',
        `REDIS_PRIMARY_PORT=tcp://${svc.spec.clusterIP}:6379`,
      ]),
    );
    expect(await exec('web', ['cat', '/etc/app/app.properties'])).toEqual({ stdout: 'color=blue\n', stderr: '', exitCode: 0 });
    expect((await exec('web', ['cat', '/etc/app/secret/password'])).stdout).toBe('s3cr3t');
    expect((await exec('web', ['cat', '/etc/app/labels'])).stdout).toBe('app="web"');

    const cm = await cluster.store.get('ConfigMap', 'default', 'app-config');
    await cluster.store.update({ ...cm, data: { ...cm.data, 'app.properties': 'color=green\n' } });
    await until('mounted file updated', async () => (await exec('web', ['cat', '/etc/app/app.properties'])).stdout === 'color=green\n', 15_000);
  });

  it('gives every pod of a Deployment the same env and files from the ConfigMap and Secret', async () => {
    await cluster.store.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'api', namespace: 'default' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'api' } },
        template: {
          metadata: { labels: { app: 'api' } },
          spec: {
            containers: [
              {
                name: 'api',
                image: 'busybox:1.36',
                command: ['sleep', 'infinity'],
                envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'app-config' } }],
                env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'password' } } }],
                volumeMounts: [{ name: 'creds', mountPath: '/etc/creds', readOnly: true }],
              },
            ],
            volumes: [{ name: 'creds', projected: { sources: [{ secret: { name: 'db-creds' } }] } }],
          },
        },
      },
    } as KubeObject);
    const pods = await until('two api pods Running', async () => {
      const ps = ((await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=api' })).items as Pod[]).filter(
        (p) => p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running,
      );
      return ps.length === 2 && ps;
    }, 60_000);
    for (const p of pods) {
      const name = p.metadata.name!;
      const env = (await exec(name, ['env'])).stdout.split('\n');
      expect(env).toEqual(expect.arrayContaining(['CFG_LOG_LEVEL=debug', 'DB_PASSWORD=s3cr3t']));
      expect((await exec(name, ['sh', '-c', 'cat /etc/creds/username; echo; cat /etc/creds/password'])).stdout).toBe('app\ns3cr3t');
    }
  });

  it('holds a container whose Secret key is missing in CreateContainerConfigError with the kubelet message', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'nokey', namespace: 'default' },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36', env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'token' } } }] }] },
    });
    const waiting = await until('CreateContainerConfigError', async () => {
      const p = (await cluster.store.get('Pod', 'default', 'nokey')) as Pod;
      const w = p.status?.containerStatuses?.[0]?.state?.waiting;
      return w?.reason === 'CreateContainerConfigError' && w;
    });
    expect(waiting.message).toBe("couldn't find key token in Secret default/db-creds");
  });

  it('runs a Job-style `echo done` pod to Succeeded with "done" in its log', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'once', namespace: 'default' },
      spec: { restartPolicy: 'Never', containers: [{ name: 'job', image: 'busybox:1.36', command: ['echo', 'done'] }] },
    });
    await until('Succeeded', async () => ((await cluster.store.get('Pod', 'default', 'once')) as Pod).status?.phase === 'Succeeded');
    expect(await cluster.extensions().podLog!('default', 'once', {})).toBe('done\n');
  });
});

describe('a generic ephemeral volume', () => {
  it('gets a claim of its own, provisioned and attached on the pod\'s node, and deleted with the pod', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'scratchy', namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 0,
        containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', 'infinity'], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
        volumes: [
          {
            name: 'scratch',
            ephemeral: { volumeClaimTemplate: { metadata: { labels: { purpose: 'scratch' } }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'standard', resources: { requests: { storage: '1Gi' } } } } },
          },
        ],
      },
    });
    const pod = await runningPod(cluster.store, 'scratchy', 60_000);
    const pvc = await cluster.store.get('PersistentVolumeClaim', 'default', 'scratchy-scratch');
    expect(pvc.status?.phase).toBe('Bound');
    expect(pvc.metadata.labels).toEqual({ purpose: 'scratch' });
    expect(pvc.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Pod', name: 'scratchy', uid: pod.metadata.uid, controller: true });
    expect(pvc.metadata.annotations?.['volume.kubernetes.io/selected-node']).toBe(pod.spec.nodeName);
    await cluster.store.delete('Pod', 'default', 'scratchy');
    await until('claim gone with the pod', async () => !(await cluster.store.list('PersistentVolumeClaim', { namespace: 'default' })).items.some((c) => c.metadata.name === 'scratchy-scratch'), 30_000);
  });
});
