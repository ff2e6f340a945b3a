// A pod's env and volume files from ConfigMaps, Secrets and the downward API, through the kubelet and the
// sim runtime: what the container sees (ExecSync `env`, `cat`), refresh on change, and the kubelet's
// errors when a source is missing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod, Store } from '@kemu/core';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const running: TestKubelet[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const k of running.splice(0)) await k.stop();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function start(extra: Partial<TestKubelet['opts']> = {}): Promise<TestKubelet> {
  const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-root-'));
  dirs.push(rootDir);
  const k = await startTestKubelet({ rootDir, syncFrequencyMs: 150, ...extra });
  running.push(k);
  await k.store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: 'default' }, data: { LOG_LEVEL: 'debug', 'app.properties': 'color=blue\n' } });
  await k.store.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: 'default' }, stringData: { password: 'hunter2', user: 'app' } });
  return k;
}

async function exec(k: TestKubelet, pod: string, cmd: string[]) {
  const list = await k.cri.runtimeService.ListContainers!({ filter: { labelSelector: { 'io.kubernetes.pod.name': pod } } }, undefined as never);
  const c = list.containers?.find((x) => x.state === 1);
  if (!c) throw new Error(`no running container in ${pod}`);
  const r = await k.cri.runtimeService.ExecSync!({ containerId: c.id, cmd, timeout: 5 }, undefined as never);
  return { stdout: Buffer.from(r.stdout ?? []).toString(), stderr: Buffer.from(r.stderr ?? []).toString(), exitCode: r.exitCode };
}

const phase = (store: Store, name: string) => store.get('Pod', 'default', name).then((p) => p.status?.phase);
const waitingOf = (p: Pod) => p.status?.containerStatuses?.[0]?.state?.waiting;

function sourcedPod(name: string): Pod {
  return testPod(name, {
    containers: [
      {
        name: 'app',
        image: 'busybox',
        envFrom: [{ configMapRef: { name: 'app-config' } }, { prefix: 'DB_', secretRef: { name: 'db' } }],
        env: [
          { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'DSN', value: '$(DB_user):$(PASSWORD)@db/$(POD_NAME)' },
        ],
        volumeMounts: [
          { name: 'config', mountPath: '/etc/config' },
          { name: 'creds', mountPath: '/etc/creds', readOnly: true },
          { name: 'all', mountPath: '/etc/all' },
          { name: 'config', mountPath: '/etc/pinned.properties', subPath: 'app.properties' },
        ],
      },
    ],
    volumes: [
      { name: 'config', configMap: { name: 'app-config' } },
      { name: 'creds', secret: { secretName: 'db', items: [{ key: 'password', path: 'nested/pw', mode: 0o400 }] } },
      {
        name: 'all',
        projected: {
          sources: [
            { configMap: { name: 'app-config', items: [{ key: 'LOG_LEVEL', path: 'level' }] } },
            { secret: { name: 'db', items: [{ key: 'user', path: 'user' }] } },
            { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          ],
        },
      },
    ],
  });
}

describe('pod env and volume sources', () => {
  it('gives the container its env and files from a ConfigMap, a Secret and the downward API', async () => {
    const k = await start();
    const pod = sourcedPod('web');
    pod.metadata.labels = { app: 'web', tier: 'front' };
    await k.store.create(pod);
    await until('pod running', async () => (await phase(k.store, 'web')) === 'Running');

    const env = (await exec(k, 'web', ['env'])).stdout.split('\n');
    expect(env).toEqual(
      expect.arrayContaining(['LOG_LEVEL=debug', 'DB_user=app', 'DB_password=hunter2', 'PASSWORD=hunter2', 'POD_NAME=web', 'DSN=app:hunter2@db/web']),
    );
    expect((await exec(k, 'web', ['cat', '/etc/config/app.properties'])).stdout).toBe('color=blue\n');
    expect((await exec(k, 'web', ['cat', '/etc/pinned.properties'])).stdout).toBe('color=blue\n');
    expect((await exec(k, 'web', ['cat', '/etc/creds/nested/pw'])).stdout).toBe('hunter2');
    expect((await exec(k, 'web', ['cat', '/etc/all/level', '/etc/all/user'])).stdout).toBe('debugapp');
    expect((await exec(k, 'web', ['cat', '/etc/all/labels'])).stdout).toBe('app="web"\ntier="front"');
    expect(await exec(k, 'web', ['cat', '/etc/creds/password'])).toMatchObject({ exitCode: 1, stderr: 'cat: /etc/creds/password: No such file or directory\n' });

    // On disk as the kubelet lays it out, with the item's mode.
    const uid = (await k.store.get('Pod', 'default', 'web')).metadata.uid!;
    const secretDir = path.join(k.opts.rootDir!, 'pods', uid, 'volumes', 'kubernetes.io~secret', 'creds');
    expect(fs.readlinkSync(path.join(secretDir, 'nested'))).toBe('..data/nested');
    expect(fs.statSync(path.join(secretDir, 'nested', 'pw')).mode & 0o777).toBe(0o400);

    // A changed ConfigMap reaches the mounted files on the next sync; env stays as the container started.
    const cm = await k.store.get('ConfigMap', 'default', 'app-config');
    await k.store.update({ ...cm, data: { LOG_LEVEL: 'warn', 'app.properties': 'color=green\n' } });
    await until('file refreshed', async () => (await exec(k, 'web', ['cat', '/etc/config/app.properties'])).stdout === 'color=green\n');
    expect((await exec(k, 'web', ['cat', '/etc/all/level'])).stdout).toBe('warn');
    // A subPath mount keeps the file the container started with, as upstream.
    expect((await exec(k, 'web', ['cat', '/etc/pinned.properties'])).stdout).toBe('color=blue\n');
    expect((await exec(k, 'web', ['env'])).stdout).toContain('LOG_LEVEL=debug');
  });

  it('writes binary ConfigMap and Secret data to the volume byte for byte', async () => {
    const k = await start();
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await k.store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bin', namespace: 'default' }, binaryData: { 'blob.bin': bytes.toString('base64') } });
    await k.store.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bin', namespace: 'default' }, data: { 'key.der': bytes.reverse().toString('base64') } });
    bytes.reverse();
    await k.store.create(
      testPod('bin', {
        containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'cm', mountPath: '/cm' }, { name: 's', mountPath: '/s' }] }],
        volumes: [{ name: 'cm', configMap: { name: 'bin' } }, { name: 's', secret: { secretName: 'bin' } }],
      }),
    );
    await until('pod running', async () => (await phase(k.store, 'bin')) === 'Running');
    const uid = (await k.store.get('Pod', 'default', 'bin')).metadata.uid!;
    const vol = (plugin: string, name: string) => path.join(k.opts.rootDir!, 'pods', uid, 'volumes', plugin, name);
    expect(fs.readFileSync(path.join(vol('kubernetes.io~configmap', 'cm'), 'blob.bin'))).toEqual(bytes);
    expect(fs.readFileSync(path.join(vol('kubernetes.io~secret', 's'), 'key.der'))).toEqual(Buffer.from(bytes).reverse());
    const list = await k.cri.runtimeService.ListContainers!({ filter: { labelSelector: { 'io.kubernetes.pod.name': 'bin' } } }, undefined as never);
    const r = await k.cri.runtimeService.ExecSync!({ containerId: list.containers![0]!.id, cmd: ['cat', '/cm/blob.bin'], timeout: 5 }, undefined as never);
    expect(Buffer.from(r.stdout ?? [])).toEqual(bytes);
  });

  it('holds a container whose key is missing in CreateContainerConfigError with the kubelet message, then starts it', async () => {
    const k = await start();
    await k.store.create(testPod('nokey', { containers: [{ name: 'app', image: 'busybox', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'missing' } } }] }] }));
    const p = await until('config error', async () => {
      const got = await k.store.get('Pod', 'default', 'nokey');
      return waitingOf(got)?.reason === 'CreateContainerConfigError' && got;
    });
    expect(waitingOf(p)?.message).toBe("couldn't find key missing in ConfigMap default/app-config");
    const events = (await k.store.list('Event', { namespace: 'default' })).items;
    expect(events.some((e) => e.reason === 'Failed' && e.message === "Error: couldn't find key missing in ConfigMap default/app-config")).toBe(true);
    // Once the key exists the pod worker's retry starts the container.
    const cm = await k.store.get('ConfigMap', 'default', 'app-config');
    await k.store.update({ ...cm, data: { ...cm.data, missing: 'here now' } });
    await until('running after the key appears', async () => (await phase(k.store, 'nokey')) === 'Running', 10_000);
    expect((await exec(k, 'nokey', ['env'])).stdout).toContain('X=here now');
  });

  it('writes the managed /etc/hosts with the pod\'s name, FQDN and hostAliases', async () => {
    const k = await start();
    await k.store.create(testPod('named', { hostname: 'db-0', subdomain: 'db', hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }] }));
    await until('pod running', async () => (await phase(k.store, 'named')) === 'Running');
    const ip = (await k.store.get('Pod', 'default', 'named')).status?.podIP;
    expect((await exec(k, 'named', ['cat', '/etc/hosts'])).stdout).toBe(
      [
        '# Kubernetes-managed hosts file.',
        '127.0.0.1\tlocalhost',
        '::1\tlocalhost ip6-localhost ip6-loopback',
        'fe00::0\tip6-localnet',
        'fe00::0\tip6-mcastprefix',
        'fe00::1\tip6-allnodes',
        'fe00::2\tip6-allrouters',
        `${ip}\tdb-0.db.default.svc.cluster.local\tdb-0`,
        '',
        '# Entries added by HostAliases.',
        '10.1.2.3\tfoo.local\tbar.local',
        '',
      ].join('\n'),
    );
  });

  it('projects a service account token from the TokenRequest source, requested once while fresh', async () => {
    const requests: { pod: string; audience?: string; seconds: number }[] = [];
    const k = await start({
      serviceAccountTokens: async (pod, audience, seconds) => {
        requests.push({ pod: pod.metadata.name ?? '', audience, seconds });
        return `token-${requests.length}`;
      },
    });
    await k.store.create(
      testPod('sa', {
        containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'api', mountPath: '/var/run/secrets/tokens' }] }],
        volumes: [{ name: 'api', projected: { sources: [{ serviceAccountToken: { path: 'token', audience: 'vault', expirationSeconds: 3600 } }] } }],
      }),
    );
    await until('pod running', async () => (await phase(k.store, 'sa')) === 'Running');
    expect((await exec(k, 'sa', ['cat', '/var/run/secrets/tokens/token'])).stdout).toBe('token-1');
    await new Promise((r) => setTimeout(r, 500)); // a few resyncs
    expect(requests).toEqual([{ pod: 'sa', audience: 'vault', seconds: 3600 }]);
  });

  it('keeps a pod whose projected token cannot be had in ContainerCreating, saying why', async () => {
    const k = await start();
    await k.store.create(testPod('notoken', { volumes: [{ name: 'api', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }] }));
    const ev = await until('FailedMount', async () =>
      (await k.store.list('Event', { namespace: 'default' })).items.find((e) => e.reason === 'FailedMount' && e.involvedObject.name === 'notoken'),
    );
    expect(ev.message).toBe('MountVolume.SetUp failed for volume "api" : the cluster serves no TokenRequest API: no service account token to project');
  });

  it('mounts a generic ephemeral volume from the pod-owned claim <pod>-<volume>, and refuses a claim the pod does not own', async () => {
    const k = await start();
    const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-ephemeral-pv-'));
    dirs.push(hostDir);
    fs.writeFileSync(path.join(hostDir, 'hello'), 'from the claim');
    const template = { spec: { accessModes: ['ReadWriteOnce' as const], resources: { requests: { storage: '1Gi' } } } };
    const created = await k.store.create(
      testPod('eph', {
        containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
        volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: template } }],
      }),
    );
    await k.store.create({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-eph' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: hostDir } } });
    const pvc = await k.store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'eph-scratch', namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'eph', uid: created.metadata.uid!, controller: true }] },
      spec: { ...template.spec, volumeName: 'pv-eph' },
    });
    await k.store.updateStatus({ ...pvc, status: { phase: 'Bound' } });
    await until('pod running', async () => (await phase(k.store, 'eph')) === 'Running');
    expect((await exec(k, 'eph', ['cat', '/scratch/hello'])).stdout).toBe('from the claim');

    await k.store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'other-scratch', namespace: 'default' },
      spec: { ...template.spec },
    });
    await k.store.create(testPod('other', { volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: template } }] }));
    const ev = await until('FailedMount', async () =>
      (await k.store.list('Event', { namespace: 'default' })).items.find((e) => e.reason === 'FailedMount' && e.involvedObject.name === 'other'),
    );
    expect(ev.message).toBe('MountVolume.SetUp failed for volume "scratch" : PVC default/other-scratch was not created for pod default/other (pod is not owner)');
  });

  it('keeps a pod whose ConfigMap volume is missing in ContainerCreating with a FailedMount event; optional ones mount empty', async () => {
    const k = await start();
    await k.store.create(testPod('novol', { volumes: [{ name: 'cfg', configMap: { name: 'absent' } }] }));
    const ev = await until('FailedMount', async () =>
      (await k.store.list('Event', { namespace: 'default' })).items.find((e) => e.reason === 'FailedMount' && e.involvedObject.name === 'novol'),
    );
    expect(ev.message).toBe('MountVolume.SetUp failed for volume "cfg" : configmap "absent" not found');
    const p = await k.store.get('Pod', 'default', 'novol');
    expect(p.status?.phase).toBe('Pending');
    expect(waitingOf(p)?.reason).toBe('ContainerCreating');

    await k.store.create(
      testPod('optvol', {
        containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }],
        volumes: [{ name: 'cfg', configMap: { name: 'absent', optional: true } }],
      }),
    );
    await until('optional volume pod running', async () => (await phase(k.store, 'optvol')) === 'Running');
    expect((await exec(k, 'optvol', ['cat', '/cfg/anything'])).exitCode).toBe(1);
  });
});
