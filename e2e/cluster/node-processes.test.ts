// Nodes in processes of their own (`kemu up --node-processes`): each node's kubelet, runtime and CSI driver
// run in a `kemu node` process that reaches the control plane over its API socket. Killing a node process
// and starting it again must find its pods in the runtime's state, not recreate them.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NetworkPolicy, Service } from '@kemu/core';
import { Cluster, type LinuxClusterNetwork } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxDatapathAvailable, pinnedPod, runningPod, until } from './util.js';
import { peers, requirePeers } from '@kemu/test-peers';
import { startEtcd } from '../storage/processes.js';

const cliBuilt = fs.existsSync(path.join(import.meta.dirname, '..', '..', 'packages', 'kemu', 'dist', 'cli.js'));
if (!cliBuilt) console.log('skipping the node-process tests: packages/kemu is not built (npx nx build kemu)');
const linuxOk = linuxDatapathAvailable('the node-process tests on the linux datapath');
const etcdOk = requirePeers('the node joining through etcd', [peers.etcd]);

for (const mode of ['sim', 'linux'] as const) {
  describe.runIf(cliBuilt && (mode === 'sim' || linuxOk))(`nodes in their own processes (${mode} datapath)`, () => {
    let cluster: Cluster;
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-e2e-procs-${mode}-`));
    const running = (name: string) => runningPod(cluster.store, name);

    beforeAll(async () => {
      cluster = await Cluster.start({
        stateDir,
        nodes: 2,
        fast: true,
        datapath: mode,
        runtime: mode === 'linux' ? 'process' : 'sim',
        nodeProcesses: true,
        apiSocket: path.join(stateDir, 'kemu.sock'),
      });
    }, 90_000);

    afterAll(async () => {
      await cluster?.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
    }, 60_000);

    it('each node is its own process, registered through the API socket and serving its runtime', async () => {
      expect(cluster.nodes).toHaveLength(0);
      const pids = [...cluster.remoteNodes.values()].map((n) => n.child.pid);
      expect(new Set(pids).size).toBe(2);
      expect(pids).not.toContain(process.pid);
      for (const n of cluster.remoteNodes.values()) {
        const cmdline = fs.readFileSync(`/proc/${n.child.pid}/cmdline`, 'utf8').split('\0');
        expect(cmdline).toEqual(expect.arrayContaining(['node', '--name', n.spec.name]));
        expect(fs.statSync(n.criSocket).mode & 0o777).toBe(0o660);
        expect((await n.runtime.Version({ version: 'v1' })).runtimeApiVersion).toBe('v1');
      }
      const nodes = (await cluster.store.list('Node')).items;
      expect(nodes.map((n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status)).toEqual(['True', 'True']);
    });

    it('runs pods on both nodes; on linux they reach each other across nodes', async () => {
      await cluster.store.create(pinnedPod('a', 'kemu-node-1'));
      await cluster.store.create(pinnedPod('b', 'kemu-node-2'));
      const [a, b] = [await running('a'), await running('b')];
      expect(a.status?.podIP).toMatch(/^10\.244\.1\./);
      expect(b.status?.podIP).toMatch(/^10\.244\.2\./);
      const sandboxes = (await cluster.remoteNodes.get('kemu-node-2')!.runtime.ListPodSandbox({})).items ?? [];
      expect(sandboxes.map((s) => s.metadata?.name)).toEqual(['b']);
      if (mode === 'linux') {
        const t = await cluster.trace('a', 'b');
        expect(t.reachable).toBe(true);
        // Each node process runs kube-proxy and the policy agent for its own node, as a real node does: a
        // Service's rules appear in every node's namespace, and a deny-all policy is enforced on b's node.
        await cluster.store.create<Service>({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc-b', namespace: 'default' }, spec: { ports: [{ port: 80 }] } });
        const net = cluster.network as LinuxClusterNetwork;
        for (const node of ['kemu-node-1', 'kemu-node-2'])
          await until(`svc-b programmed on ${node}`, async () => {
            const saved = spawnSync('nsenter', [`--net=/run/netns/${net.nodeNetnsName(node)}`, '--', 'iptables-save'], { encoding: 'utf8' }).stdout;
            return saved.includes('default/svc-b');
          });
        await cluster.store.create<NetworkPolicy>({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-all', namespace: 'default' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } });
        await until('b isolated by its node\'s policy agent', async () => !(await cluster.trace('a', 'b')).reachable);
        await cluster.store.delete('NetworkPolicy', 'default', 'deny-all');
        await cluster.store.delete('Service', 'default', 'svc-b');
        await until('b reachable again', async () => (await cluster.trace('a', 'b')).reachable);
        // The cluster DNS answers in the first node's namespace: b, on the other node, resolves through it.
        const getent = await until('b resolves kube-dns through the cluster DNS', async () => {
          const r = await cluster.extensions().podExec!('default', 'b', { command: ['getent', 'hosts', 'kube-dns.kube-system'] });
          return r.exitCode === 0 && r.stdout;
        });
        expect(getent.trim().split(/\s+/)).toEqual(['10.96.0.10', 'kube-dns.kube-system.svc.cluster.local']);
      } else {
        await expect(cluster.trace('a', 'b')).rejects.toThrow(/without node processes/);
      }
    }, 60_000);

    it('a node process killed and started again recovers its pods from the runtime state', async () => {
      const before = await cluster.store.get('Pod', 'default', 'a');
      const node = cluster.remoteNodes.get('kemu-node-1')!;
      const ctr = (await node.runtime.ListContainers({})).containers?.[0];
      const pidOf = async (rt: typeof node.runtime) =>
        Number(JSON.parse((await rt.ContainerStatus({ containerId: ctr?.id ?? '', verbose: true })).info?.info ?? '{}').pid);
      const pid = mode === 'linux' ? await pidOf(node.runtime) : 0;
      const oldPid = node.child.pid;
      const again = await cluster.restartNodeProcess('kemu-node-1');
      expect(again.child.pid).not.toBe(oldPid);
      // Give the new kubelet a few sync rounds to act if it (wrongly) thought the pod was gone.
      await new Promise((r) => setTimeout(r, 1500));
      const after = await cluster.store.get('Pod', 'default', 'a');
      expect(after.status?.phase).toBe('Running');
      expect(after.status?.podIP).toBe(before.status?.podIP);
      expect(after.status?.containerStatuses?.[0].containerID).toBe(before.status?.containerStatuses?.[0].containerID);
      expect(after.status?.containerStatuses?.[0].restartCount).toBe(0);
      if (mode === 'linux') {
        // The same real process kept running while its node's agents were gone.
        expect(await pidOf(again.runtime)).toBe(pid);
        expect(fs.existsSync(`/proc/${pid}`)).toBe(true);
      }
    }, 90_000);

    it('a node started by hand joins: its pods run and the control plane reaches its runtime', async () => {
      const cli = path.join(import.meta.dirname, '..', '..', 'packages', 'kemu', 'dist', 'cli.js');
      const args = ['node', '--name', 'extra-1', '--node-ip', '172.18.0.200', '--pod-cidr', '10.244.200.0/24', '--state-dir', stateDir, '--fast'];
      if (mode === 'linux') args.push('--datapath', 'linux', '--runtime', 'process');
      const child = spawn(process.execPath, [cli, ...args], { stdio: 'ignore' });
      try {
        await until('extra-1 joined', async () => cluster.joinedNodes.has('extra-1'));
        await cluster.store.create(pinnedPod('c', 'extra-1'));
        const c = await running('c');
        expect(c.status?.podIP).toMatch(/^10\.244\.200\./);
        const out = await cluster.extensions().podExec!('default', 'c', { command: ['echo', 'hello'] });
        expect(out.exitCode).toBe(0);
        if (mode === 'linux') {
          expect(out.stdout).toBe('hello\n');
          // Routes to the joined node's pod CIDR came from its Node object, on the other nodes too.
          expect((await cluster.trace('a', 'c')).reachable).toBe(true);
        }
        await cluster.store.delete('Pod', 'default', 'c');
        await until('c gone', async () => ((await cluster.joinedNodes.get('extra-1')!.runtime.ListPodSandbox({})).items ?? []).length === 0);
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      await cluster.store.delete('Node', '', 'extra-1');
      await until('extra-1 forgotten', async () => !cluster.joinedNodes.has('extra-1'));
    }, 90_000);

    it('deleting the pods tears them down through the node processes', async () => {
      await cluster.store.delete('Pod', 'default', 'a');
      await cluster.store.delete('Pod', 'default', 'b');
      await until('no sandboxes', async () => {
        let n = 0;
        for (const r of cluster.remoteNodes.values()) n += ((await r.runtime.ListPodSandbox({})).items ?? []).length;
        return n === 0 && (await cluster.store.list('Pod')).items.length === 0;
      });
    }, 60_000);
  });
}

// A node on "another machine": it shares no socket with the control plane and talks to etcd directly.
describe.runIf(cliBuilt && etcdOk)('a node joining through etcd', () => {
  let etcd: Awaited<ReturnType<typeof startEtcd>>;
  let cluster: Cluster;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-etcd-node-'));
  const farDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-far-node-'));

  beforeAll(async () => {
    etcd = await startEtcd();
    cluster = await Cluster.start({ stateDir, nodes: 1, fast: true, store: 'etcd', etcdEndpoints: [etcd.endpoint] });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
    fs.rmSync(farDir, { recursive: true, force: true });
  }, 60_000);

  it('registers, is scheduled to and runs pods, with its own state dir', async () => {
    const cli = path.join(import.meta.dirname, '..', '..', 'packages', 'kemu', 'dist', 'cli.js');
    const args = ['node', '--name', 'far-1', '--node-ip', '172.18.0.201', '--pod-cidr', '10.244.201.0/24', '--state-dir', farDir, '--etcd-endpoints', etcd.endpoint, '--fast'];
    const child = spawn(process.execPath, [cli, ...args], { stdio: 'ignore' });
    try {
      await until('far-1 Ready', async () => {
        const n = await cluster.store.get('Node', '', 'far-1').catch(() => undefined);
        return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      });
      await cluster.store.create(pinnedPod('far', 'far-1'));
      const p = await until('far Running', async () => {
        const x = await cluster.store.get('Pod', 'default', 'far');
        return x.status?.phase === 'Running' && x;
      });
      expect(p.status?.podIP).toMatch(/^10\.244\.201\./);
      expect(p.status?.hostIP).toBe('172.18.0.201');
      // Its runtime state lives under its own state dir, not the control plane's.
      expect(fs.existsSync(path.join(farDir, 'nodes', 'far-1', 'cri.sock'))).toBe(true);
      expect(fs.existsSync(path.join(stateDir, 'nodes', 'far-1'))).toBe(false);
      await cluster.store.delete('Pod', 'default', 'far');
      await until('far gone', async () => (await cluster.store.list('Pod')).items.length === 0);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }, 90_000);
});
