// Cluster DNS on the linux datapath, as root: the DNS server answers on the first node's address inside
// that node's real network namespace, kube-proxy's real iptables DNAT the kube-dns ClusterIP to it, and a
// pod on another node asks with ISC's dig and with glibc (getent, reading the resolv.conf the kubelet wrote)
// from inside its own network namespace.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod, Service } from '@kemu/core';
import { peers } from '@kemu/test-peers';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxDatapathAvailable, until } from './util.js';

const ok = linuxDatapathAvailable('cluster DNS on the linux datapath', [peers.dig]);

const pod = (name: string, nodeName: string, labels: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels },
  spec: {
    nodeName,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', "trap 'exit 0' TERM; sleep infinity & wait"] }],
  },
});

describe.runIf(ok)('cluster DNS from a real pod network namespace', () => {
  let cluster: Cluster;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-dns-linux-'));
  const exec = async (command: string[]) => cluster.extensions().podExec!('default', 'client', { command });

  beforeAll(async () => {
    cluster = await Cluster.start({ stateDir, nodes: 2, fast: true, datapath: 'linux', runtime: 'process' });
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('answers dig and glibc in a pod on another node through the kube-dns ClusterIP', async () => {
    await cluster.store.create(pod('client', 'kemu-node-2', { app: 'client' }));
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80 }] },
    });
    const web = await cluster.store.get('Service', 'default', 'web');
    await until('client Running', async () => (await cluster.store.get('Pod', 'default', 'client')).status?.phase === 'Running', 60_000);
    const dig = await until('dig answered through the ClusterIP', async () => {
      const r = await exec(['dig', '+short', '+time=1', '+tries=1', '@10.96.0.10', 'web.default.svc.cluster.local']);
      return r.stdout.trim() === web.spec.clusterIP && r;
    });
    expect(dig.exitCode).toBe(0);
    // glibc's stub with the pod's own resolv.conf: the short name through the search list.
    expect((await exec(['cat', '/etc/resolv.conf'])).stdout).toContain('nameserver 10.96.0.10');
    const getent = await exec(['getent', 'hosts', 'web']);
    expect(getent.stdout.trim().split(/\s+/)).toEqual([web.spec.clusterIP, 'web.default.svc.cluster.local']);
    expect((await exec(['getent', 'hosts', 'nope'])).exitCode).not.toBe(0);
    // And kemu trace's lookup sends its queries from the same namespace.
    const t = (await cluster.trace('client', 'dns:web')) as { reachable: boolean; ip: string; dns: { queries: { rcode?: string }[] } };
    expect([t.reachable, t.ip]).toEqual([true, web.spec.clusterIP]);
  }, 120_000);
});
