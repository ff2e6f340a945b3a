// The composed cluster on the real modes, as root: nodes are Linux network namespaces on an underlay
// bridge, pods are real processes in real network namespaces, volumes are hostpath directories bind-mounted
// into the containers, and cross-node traffic is a real ping. Each node's runtime is inspected over its CRI
// socket with a plain gRPC client, the way crictl would.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type KubeObject, parseManifests, type Pod } from '@kemu/core';
import { cri, grpc, promiseClient } from '@kemu/proto';
import { Cluster, demoManifestPath, leftovers, type LinuxClusterNetwork } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxDatapathAvailable, until } from './util.js';

const linuxOk = linuxDatapathAvailable('the linux-datapath cluster tests');

const inCidr = (ip: string, cidr: string) => ip.startsWith(cidr.split('.').slice(0, 3).join('.'));
const netnsNames = () => (fs.existsSync('/run/netns') ? fs.readdirSync('/run/netns') : []);
const mountsUnder = (dir: string) =>
  fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[4]?.startsWith(`${dir}/`)).length;

describe.runIf(linuxOk)('the sample app on the linux datapath with the process runtime', () => {
  let cluster: Cluster;
  let prefix: string;
  let objs: KubeObject[];
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-linux-'));
  const pods = async () => (await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[];

  beforeAll(async () => {
    cluster = await Cluster.start({ stateDir, nodes: 3, fast: true, datapath: 'linux', runtime: 'process' });
    prefix = (cluster.network as LinuxClusterNetwork).prefix;
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('runs every pod as real processes with IPs from the node pod CIDRs and a real volume', async () => {
    objs = parseManifests(fs.readFileSync(demoManifestPath('linux-app.yaml'), 'utf8'));
    for (const o of objs) await cluster.store.create(o);
    const ready = await until('all pods Ready', async () => {
      const ps = await pods();
      return ps.length === 5 && ps.every((p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True') && ps;
    });
    const web = ready.filter((p) => p.metadata.labels?.app === 'web');
    expect(new Set(web.map((p) => p.spec.nodeName)).size).toBe(3);
    for (const p of ready) {
      const node = cluster.node(p.spec.nodeName ?? '')!;
      expect(inCidr(p.status?.podIP ?? '', node.podCIDR)).toBe(true);
      expect(p.status?.hostIP).toBe(node.ip);
    }
    expect(web[0].status?.initContainerStatuses?.[0].state?.terminated).toMatchObject({ reason: 'Completed', exitCode: 0 });
    // The database wrote through its bind-mounted volume into the driver's directory for that volume.
    const pvc = await cluster.store.get('PersistentVolumeClaim', 'default', 'db-data');
    const pv = await cluster.store.get('PersistentVolume', '', pvc.spec.volumeName ?? '');
    const db = ready.find((p) => p.metadata.name === 'db')!;
    const volumeDir = path.join(stateDir, 'nodes', db.spec.nodeName ?? '', 'csi', 'volumes');
    const marker = fs
      .readdirSync(volumeDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('marker'))
      .map((f) => fs.readFileSync(path.join(volumeDir, f), 'utf8'));
    expect(marker).toEqual(['written-by-db\n']);
    expect(pv.spec.csi?.volumeHandle).toBeTruthy();
    const exec = await cluster.extensions().podExec!('default', 'db', { command: ['cat', '/mnt/marker'] });
    expect(exec).toMatchObject({ stdout: 'written-by-db\n', exitCode: 0 });
    // A real process: its network namespace is the sandbox's and holds the pod IP.
    expect(await leftovers(cluster)).toMatchObject({ sandboxes: 5, ips: 5, volumes: 1, attachments: 1, pvs: 1 });
  }, 60_000);

  it("each node's runtime answers on its CRI socket like containerd does for crictl", async () => {
    for (const node of cluster.nodes) {
      expect(node.criSocket).toBeTruthy();
      expect(fs.statSync(node.criSocket!).mode & 0o777).toBe(0o660);
      const client = new cri.RuntimeServiceClient(`unix://${node.criSocket}`, grpc.credentials.createInsecure());
      const rt = promiseClient(cri.RuntimeServiceService, client);
      try {
        const version = await rt.Version({ version: 'v1' });
        expect(version.runtimeApiVersion).toBe('v1');
        const status = await rt.Status({ verbose: false });
        expect(status.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual(['RuntimeReady=true', 'NetworkReady=true']);
        const here = (await pods()).filter((p) => p.spec.nodeName === node.name);
        const sandboxes = (await rt.ListPodSandbox({})).items ?? [];
        expect(sandboxes.map((s) => s.metadata?.name).sort()).toEqual(here.map((p) => p.metadata.name).sort());
        for (const sb of sandboxes) {
          const st = await rt.PodSandboxStatus({ podSandboxId: sb.id, verbose: false });
          const pod = here.find((p) => p.metadata.name === sb.metadata?.name)!;
          expect(st.status?.state).toBe(cri.PodSandboxState.SANDBOX_READY);
          expect(st.status?.network?.ip).toBe(pod.status?.podIP);
        }
        const containers = (await rt.ListContainers({ filter: { state: { state: cri.ContainerState.CONTAINER_RUNNING } } })).containers ?? [];
        expect(containers.length).toBe(here.length);
        const st = await rt.ContainerStatus({ containerId: containers[0].id, verbose: true });
        const pid = Number(JSON.parse(st.info?.info ?? '{}').pid);
        expect(pid).toBeGreaterThan(1);
        expect(fs.existsSync(`/proc/${pid}`)).toBe(true);
      } finally {
        client.close();
      }
    }
  });

  it('a pod on one node pings a pod on another through both nodes, and an unknown address is unreachable', async () => {
    const web = (await pods())
      .filter((p) => p.metadata.labels?.app === 'web')
      .sort((a, b) => (a.spec.nodeName ?? '').localeCompare(b.spec.nodeName ?? ''));
    const t = await cluster.trace(web[0].metadata.name ?? '', web[1].metadata.name ?? '');
    expect(t.reachable).toBe(true);
    expect(t.ip).toBe(web[1].status?.podIP);
    // Two routers on the way (node A, node B) take the TTL from 64 to 62.
    expect(t.text).toMatch(/ttl=62/);
    expect((await cluster.trace(web[0].metadata.name ?? '', '10.244.77.7')).reachable).toBe(false);
  }, 30_000);

  it('the hostPort is programmed on the node that runs the pod', async () => {
    const edge = (await pods()).find((p) => p.metadata.name === 'edge')!;
    const net = (cluster.network as LinuxClusterNetwork).nodes.get(edge.spec.nodeName ?? '')!;
    const rules = await net.datapath.listNatRules('host');
    expect(JSON.stringify(rules)).toContain('8080');
  });

  it('deleting everything leaves no IP, volume, attachment, sandbox, namespace or mount behind', async () => {
    for (const o of [...objs].reverse()) await cluster.store.delete(o.kind, o.metadata.namespace ?? 'default', o.metadata.name ?? '');
    const left = await until('cleanup', async () => {
      const l = await leftovers(cluster);
      return (await pods()).length === 0 && Object.values(l).every((x) => x === 0) && l;
    });
    expect(left).toEqual({ sandboxes: 0, ips: 0, volumes: 0, attachments: 0, pvs: 0 });
    expect(netnsNames().filter((n) => n.startsWith(`${prefix}-pod-`))).toEqual([]);
    expect(mountsUnder(stateDir)).toBe(0);
  }, 60_000);

  it('stopping the cluster removes its node and underlay namespaces', async () => {
    expect(netnsNames().filter((n) => n.startsWith(prefix)).length).toBe(4);
    await cluster.stop();
    expect(netnsNames().filter((n) => n.startsWith(prefix))).toEqual([]);
    cluster = undefined as never;
  });
});
