// The config-sources acceptance on the real runtime: `kemu up --datapath linux --runtime runc` as root, a
// busybox-static image from a loopback registry. A Deployment's pod reads a ConfigMap and a Secret through
// env, envFrom and a projected volume and prints them with its own shell; a ConfigMap change reaches the
// mounted file inside the container; a missing key holds the container in CreateContainerConfigError with
// the kubelet's message; the downward API gives labels, annotations, pod IP, node name and limits; an
// `echo done` pod completes with its log; a preStop hook runs in the container before it gets SIGTERM, and
// one that outlasts the grace period is cut short by it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeObject, Pod } from '@kemu/core';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestRegistry } from '../../packages/cri/src/test-util-registry.js';
import { busyboxOnRegistry, qosTreeCleanup, runcPeers } from '../cluster/runc-util.js';
import { linuxDatapathAvailable, runningPod, until } from '../cluster/util.js';

const ok = linuxDatapathAvailable('the config-sources tests on runc', runcPeers);

describe.runIf(ok)('a pod configured from a ConfigMap and a Secret, on the runc runtime', () => {
  let cluster: Cluster;
  let registry: TestRegistry;
  let image: string;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-podspec-runc-'));
  const imagesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-podspec-runc-images-'));
  const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-podspec-runc-host-'));
  // The image's user (uid 1000) writes its events into this hostPath directory.
  fs.chmodSync(hostDir, 0o777);
  const removeQosTree = qosTreeCleanup('cgroupfs');

  beforeAll(async () => {
    ({ registry, image } = await busyboxOnRegistry(imagesDir));
    cluster = await Cluster.start({ stateDir, nodes: 1, fast: true, datapath: 'linux', runtime: 'runc' });
    await cluster.store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: 'default' }, data: { LOG_LEVEL: 'debug', 'app.properties': 'color=blue\n' } });
    await cluster.store.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-creds', namespace: 'default' }, stringData: { username: 'app', password: 's3cr3t' } });
  }, 120_000);

  afterAll(async () => {
    // runc containers outlive the kubelet as they would on a node, so the suite removes what it ran (even
    // after a failed test) before it stops the cluster.
    if (cluster) {
      for (const kind of ['Deployment', 'ReplicaSet', 'Pod']) {
        for (const o of (await cluster.store.list(kind, { namespace: 'default' })).items) {
          await cluster.store.delete(kind, 'default', o.metadata.name!, { gracePeriodSeconds: 0 }).catch(() => undefined);
        }
      }
      const runtime = cluster.runtimeOf(cluster.nodes[0].name)!;
      await until('no sandboxes left', async () => ((await runtime.ListPodSandbox({})).items ?? []).length === 0, 60_000).catch(() => undefined);
    }
    await cluster?.stop();
    await registry?.stop();
    for (const d of [stateDir, imagesDir, hostDir]) fs.rmSync(d, { recursive: true, force: true });
    removeQosTree();
  }, 90_000);

  const log = async (pod: string) => (await cluster.extensions().podLog!('default', pod, {})) as string;
  const exec = (pod: string, command: string[]) => cluster.extensions().podExec!('default', pod, { command });

  it('gives the Deployment pod env, envFrom and projected files it prints itself, and the file follows a ConfigMap change', async () => {
    await cluster.store.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'api', namespace: 'default' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'api' } },
        template: {
          metadata: { labels: { app: 'api' } },
          spec: {
            terminationGracePeriodSeconds: 0,
            // The image's user (uid 1000) reads the 0400 Secret file through the group fsGroup gives it.
            securityContext: { fsGroup: 2000 },
            containers: [
              {
                name: 'api',
                image,
                command: ['sh', '-c', 'echo "level=$CFG_LOG_LEVEL user=$DB_USER pass=$DB_PASSWORD dsn=$DSN"; cat /etc/config/app.properties /etc/config/creds/password; echo; stat -L -c "%a %g" /etc/config/creds/password; echo ready; exec sleep 3600'],
                envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'app-config' } }],
                env: [
                  { name: 'DB_USER', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'username' } } },
                  { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'password' } } },
                  { name: 'DSN', value: '$(DB_USER)@db/$(CFG_LOG_LEVEL) $$(kept)' },
                ],
                volumeMounts: [{ name: 'config', mountPath: '/etc/config', readOnly: true }],
              },
            ],
            volumes: [
              {
                name: 'config',
                projected: {
                  sources: [
                    { configMap: { name: 'app-config', items: [{ key: 'app.properties', path: 'app.properties' }] } },
                    { secret: { name: 'db-creds', items: [{ key: 'password', path: 'creds/password', mode: 0o400 }] } },
                  ],
                },
              },
            ],
          },
        },
      },
    } as KubeObject);
    const pod = await until(
      'the api pod Running',
      async () => ((await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=api' })).items as Pod[]).find((p) => p.status?.containerStatuses?.[0]?.state?.running),
      90_000,
    );
    const name = pod.metadata.name!;
    const out = await until('the container printed its config', async () => {
      const text = await log(name);
      return text.includes('ready') && text;
    });
    expect(out).toBe('level=debug user=app pass=s3cr3t dsn=app@db/debug $(kept)\ncolor=blue\ns3cr3t\n440 2000\nready\n');

    const cm = await cluster.store.get('ConfigMap', 'default', 'app-config');
    await cluster.store.update({ ...cm, data: { ...cm.data, 'app.properties': 'color=green\n' } });
    // The kubelet's sync period in fast mode is short; a minute bounds it generously.
    await until('the mounted file updated inside the container', async () => (await exec(name, ['cat', '/etc/config/app.properties'])).stdout === 'color=green\n', 60_000);

    await cluster.store.delete('Deployment', 'default', 'api');
  }, 240_000);

  it('holds a container whose Secret key is missing in CreateContainerConfigError with the kubelet message', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'nokey', namespace: 'default' },
      spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image, env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'db-creds', key: 'token' } } }] }] },
    });
    const waiting = await until(
      'CreateContainerConfigError',
      async () => {
        const w = ((await cluster.store.get('Pod', 'default', 'nokey')) as Pod).status?.containerStatuses?.[0]?.state?.waiting;
        return w?.reason === 'CreateContainerConfigError' && w;
      },
      90_000,
    );
    expect(waiting.message).toBe("couldn't find key token in Secret default/db-creds");
    await cluster.store.delete('Pod', 'default', 'nokey', { gracePeriodSeconds: 0 });
  }, 120_000);

  it('exposes labels, annotations, the pod IP, the node name and the limits through the downward API', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'downward', namespace: 'default', labels: { app: 'downward', tier: 'web' }, annotations: { owner: 'team-a' } },
      spec: {
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: 'app',
            image,
            command: ['sh', '-c', 'echo "node=$NODE ip=$POD_IP mem=$MEM_MI"; cat /etc/podinfo/labels; echo; cat /etc/podinfo/annotations; echo; cat /etc/podinfo/cpu_limit; echo; echo ready; exec sleep 3600'],
            resources: { limits: { memory: '64Mi', cpu: '500m' } },
            env: [
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'MEM_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
            ],
            volumeMounts: [{ name: 'podinfo', mountPath: '/etc/podinfo' }],
          },
        ],
        volumes: [
          {
            name: 'podinfo',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'annotations', fieldRef: { fieldPath: "metadata.annotations['owner']" } },
                { path: 'cpu_limit', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
              ],
            },
          },
        ],
      },
    });
    const running = await runningPod(cluster.store, 'downward', 90_000);
    const out = await until('the container printed its pod info', async () => {
      const text = await log('downward');
      return text.includes('ready') && text;
    });
    expect(out).toBe(`node=${running.spec.nodeName} ip=${running.status?.podIP} mem=64\napp="downward"\ntier="web"\nteam-a\n500\nready\n`);
    expect(running.status?.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  }, 150_000);

  it('runs a Job-style `echo done` pod to Succeeded with "done" in its log', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'once', namespace: 'default' },
      spec: { restartPolicy: 'Never', containers: [{ name: 'job', image, command: ['echo', 'done'] }] },
    });
    await until('Succeeded', async () => ((await cluster.store.get('Pod', 'default', 'once')) as Pod).status?.phase === 'Succeeded', 90_000);
    expect(await log('once')).toBe('done\n');
  }, 120_000);

  it("runs the preStop hook in the container before the container's SIGTERM", async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'stopper', namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 20,
        containers: [
          {
            name: 'app',
            image,
            command: ['sh', '-c', "trap 'echo sigterm >> /out/events; exit 0' TERM; echo started >> /out/events; while true; do sleep 1; done"],
            lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo prestop >> /out/events'] } } },
            volumeMounts: [{ name: 'out', mountPath: '/out' }],
          },
        ],
        volumes: [{ name: 'out', hostPath: { path: hostDir, type: 'Directory' } }],
      },
    });
    await runningPod(cluster.store, 'stopper', 90_000);
    const events = path.join(hostDir, 'events');
    await until('the container started', async () => fs.existsSync(events) && fs.readFileSync(events, 'utf8') === 'started\n');
    await cluster.store.delete('Pod', 'default', 'stopper');
    await until('the pod is gone', async () => !(await cluster.store.list('Pod', { namespace: 'default' })).items.some((p) => p.metadata.name === 'stopper'), 60_000);
    expect(fs.readFileSync(events, 'utf8')).toBe('started\nprestop\nsigterm\n');
  }, 150_000);

  it('cuts a preStop hook that outlasts the grace period short and then sends SIGTERM', async () => {
    const events = path.join(hostDir, 'slow-events');
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'slowstop', namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 3,
        containers: [
          {
            name: 'app',
            image,
            command: ['sh', '-c', "trap 'echo sigterm >> /out/slow-events; exit 0' TERM; echo started >> /out/slow-events; while true; do sleep 1; done"],
            // A hook of 60 s against a 3 s grace period: the kubelet stops waiting for it when the grace is spent.
            lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo prestop >> /out/slow-events; sleep 60; echo prestop-finished >> /out/slow-events'] } } },
            volumeMounts: [{ name: 'out', mountPath: '/out' }],
          },
        ],
        volumes: [{ name: 'out', hostPath: { path: hostDir, type: 'Directory' } }],
      },
    });
    await runningPod(cluster.store, 'slowstop', 90_000);
    await until('the container started', async () => fs.existsSync(events) && fs.readFileSync(events, 'utf8') === 'started\n');
    await cluster.store.delete('Pod', 'default', 'slowstop');
    await until('the pod is gone', async () => !(await cluster.store.list('Pod', { namespace: 'default' })).items.some((p) => p.metadata.name === 'slowstop'), 50_000);
    expect(fs.readFileSync(events, 'utf8')).toBe('started\nprestop\nsigterm\n');
  }, 150_000);

  it("runs the container as the pod's runAsUser and runAsGroup, with its fsGroup and supplementalGroups", async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'ids', namespace: 'default' },
      spec: {
        restartPolicy: 'Never',
        securityContext: { runAsUser: 2000, runAsGroup: 3000, fsGroup: 5000, supplementalGroups: [4000] },
        containers: [{ name: 'app', image, command: ['sh', '-c', 'id -u; id -g; id -G'] }],
      },
    });
    await until('Succeeded', async () => ((await cluster.store.get('Pod', 'default', 'ids')) as Pod).status?.phase === 'Succeeded', 90_000);
    const [uid, gid, groups] = (await log('ids')).trim().split('\n');
    expect([uid, gid]).toEqual(['2000', '3000']);
    expect(groups.split(' ').sort()).toEqual(['3000', '4000', '5000']);
  }, 120_000);
});
