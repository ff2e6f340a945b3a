// The crictl workflow a new user follows, against `kemu-cri` started as a separate process: each step
// issues the RPCs crictl issues for that command (runp, create, start, ps, pods, inspect, inspectp, logs,
// exec -s, stats, stop, rm, stopp, rmp, images, pull, rmi, imagefsinfo), with crictl's JSON config
// files in their snake_case form. crictl itself is not packaged for Debian or npm.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri, unaryCall } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { parseCriLog } from './log-writer.js';
import { buildBusyboxLayout, tempDir, waitFor } from './test-util.js';

const canProcess = requirePeers('the process-backend crictl workflow', [peers.netns, peers.busybox, peers.referenceCni]);

/** crictl's config files are protobuf JSON with the Go field names; turn them into our message objects. */
function fromCrictlJson(text: string): any {
  const walk = (v: any): any => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => [
          k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
          k === 'labels' || k === 'annotations' ? x : walk(x),
        ]),
      );
    }
    return v;
  };
  return walk(JSON.parse(text));
}

interface Cluster {
  proc: ChildProcess;
  rt: cri.RuntimeServiceClient;
  img: cri.ImageServiceClient;
  socket: string;
  stderr: () => string;
}

async function startKemuCri(dir: string, args: string[]): Promise<Cluster> {
  const socket = path.join(dir, 'kemu.sock');
  const proc = spawn(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', path.join(__dirname, 'cli.ts'), '--listen', `unix://${socket}`, '--state-dir', path.join(dir, 'state'), ...args],
    { cwd: path.join(__dirname, '..'), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr!.on('data', (d) => {
    stderr += d;
  });
  await waitFor(() => stderr.includes('serving on') || undefined, 30_000, `kemu-cri to start (stderr: ${stderr})`);
  return {
    proc,
    socket,
    rt: new cri.RuntimeServiceClient(`unix://${socket}`, grpc.credentials.createInsecure()),
    img: new cri.ImageServiceClient(`unix://${socket}`, grpc.credentials.createInsecure()),
    stderr: () => stderr,
  };
}

async function stopKemuCri(c: Cluster): Promise<number | null> {
  c.rt.close();
  c.img.close();
  const exited = new Promise<number | null>((resolve) => c.proc.once('exit', (code) => resolve(code)));
  c.proc.kill('SIGTERM');
  return exited;
}

function workflow(backend: 'sim' | 'process', image: string, extraArgs: (dir: string) => Promise<string[]>, execCmd: string[]) {
  let dir: string;
  let k: Cluster;
  const rt = <M extends keyof cri.RuntimeServiceMethods & string>(m: M, r: cri.RuntimeServiceMethods[M]['request']) =>
    unaryCall(k.rt, m, r as never) as Promise<cri.RuntimeServiceMethods[M]['response']>;
  const im = <M extends keyof cri.ImageServiceMethods & string>(m: M, r: cri.ImageServiceMethods[M]['request']) =>
    unaryCall(k.img, m, r as never) as Promise<cri.ImageServiceMethods[M]['response']>;

  beforeAll(async () => {
    dir = tempDir(`kemu-crictl-${backend}-`);
    k = await startKemuCri(dir, ['--backend', backend, ...(await extraArgs(dir))]);
  });

  afterAll(async () => {
    if (!k) return;
    const pods = await rt('ListPodSandbox', {}).catch(() => ({ items: [] }));
    for (const p of pods.items ?? []) await rt('RemovePodSandbox', { podSandboxId: p.id });
    expect(await stopKemuCri(k)).toBe(0);
    expect(fs.existsSync(k.socket)).toBe(false);
  });

  it('runs the crictl workflow from pull to rmi', async () => {
    expect(fs.statSync(k.socket).mode & 0o777).toBe(0o660);
    // crictl pull busybox
    const pulled = await im('PullImage', { image: { image } });
    expect(pulled.imageRef).toMatch(/^sha256:[0-9a-f]{64}$/);
    // crictl images
    const images = await im('ListImages', {});
    expect(images.images!.map((i) => i.id)).toContain(pulled.imageRef);

    // crictl runp pod-config.json
    const podJson = `{
      "metadata": { "name": "nginx-sandbox", "namespace": "default", "attempt": 1, "uid": "hdishd83djaidwnduwk28bcsb" },
      "hostname": "crictl-pod",
      "log_directory": "${dir}/logs",
      "dns_config": { "servers": ["10.96.0.10"], "searches": ["default.svc.cluster.local"] },
      "labels": { "app": "crictl" },
      "linux": {}
    }`;
    const podConfig = fromCrictlJson(podJson) as cri.PodSandboxConfig;
    const { podSandboxId } = await rt('RunPodSandbox', { config: podConfig });
    // crictl pods
    const pods = await rt('ListPodSandbox', { filter: { labelSelector: { app: 'crictl' } } });
    expect(pods.items!.map((p) => [p.id, p.state, p.metadata!.name])).toEqual([[podSandboxId, cri.PodSandboxState.SANDBOX_READY, 'nginx-sandbox']]);
    // crictl inspectp
    const inspectp = await rt('PodSandboxStatus', { podSandboxId: podSandboxId!.slice(0, 13), verbose: true });
    expect(inspectp.status!.network!.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(JSON.parse(inspectp.info!.info).pid).toBeGreaterThan(backend === 'process' ? 0 : -1);

    // crictl create <pod> container-config.json pod-config.json
    const ctrJson = `{
      "metadata": { "name": "busybox" },
      "image": { "image": "${image}" },
      "command": ${JSON.stringify(['sh', '-c', 'echo hello from the container; sleep 3600'])},
      "log_path": "busybox.0.log",
      "linux": { "resources": { "memory_limit_in_bytes": 134217728 } }
    }`;
    const ctrConfig = fromCrictlJson(ctrJson) as cri.ContainerConfig;
    if (backend === 'sim') ctrConfig.annotations = { 'kemu.io/sim-log': 'hello from the container', 'kemu.io/sim-memory-mib': '3' };
    const { containerId } = await rt('CreateContainer', { podSandboxId, config: ctrConfig, sandboxConfig: podConfig });
    // crictl start
    await rt('StartContainer', { containerId });
    // crictl ps
    const ps = await rt('ListContainers', { filter: { state: { state: cri.ContainerState.CONTAINER_RUNNING } } });
    expect(ps.containers!.map((c) => [c.id, c.podSandboxId, c.metadata!.name])).toEqual([[containerId, podSandboxId, 'busybox']]);
    // crictl inspect
    const inspect = await rt('ContainerStatus', { containerId: containerId!.slice(0, 13), verbose: true });
    expect(inspect.status!.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect(inspect.status!.logPath).toBe(`${dir}/logs/busybox.0.log`);
    expect(JSON.parse(inspect.info!.info).sandboxID).toBe(podSandboxId);
    // crictl logs
    const lines = await waitFor(() => {
      const p = inspect.status!.logPath!;
      return fs.existsSync(p) && fs.readFileSync(p, 'utf8').length > 0 ? parseCriLog(fs.readFileSync(p, 'utf8')) : undefined;
    });
    expect(lines.map((l) => `${l.stream} ${l.text}`)).toEqual(['stdout hello from the container']);
    // crictl exec -s <ctr> echo hi
    const ex = await rt('ExecSync', { containerId, cmd: execCmd, timeout: 10 });
    expect(Buffer.from(ex.stdout!).toString()).toBe('hi\n');
    expect(ex.exitCode).toBe(0);
    // crictl stats
    const stats = await rt('ListContainerStats', {});
    const mine = stats.stats!.find((s) => s.attributes!.id === containerId)!;
    expect(mine.memory!.workingSetBytes!.value).toBeGreaterThan(0);
    // crictl imagefsinfo
    const fsinfo = await im('ImageFsInfo', {});
    expect(fsinfo.imageFilesystems![0].usedBytes!.value).toBeGreaterThan(0);
    // crictl stop <ctr>
    await rt('StopContainer', { containerId, timeout: 2 });
    expect((await rt('ContainerStatus', { containerId })).status!.state).toBe(cri.ContainerState.CONTAINER_EXITED);
    // crictl ps -a shows it, crictl ps does not
    expect((await rt('ListContainers', { filter: { state: { state: cri.ContainerState.CONTAINER_RUNNING } } })).containers).toEqual([]);
    expect((await rt('ListContainers', {})).containers!.map((c) => c.id)).toEqual([containerId]);
    // crictl rm
    await rt('RemoveContainer', { containerId });
    expect((await rt('ListContainers', {})).containers).toEqual([]);
    // crictl stopp, crictl rmp
    await rt('StopPodSandbox', { podSandboxId });
    expect((await rt('PodSandboxStatus', { podSandboxId })).status!.state).toBe(cri.PodSandboxState.SANDBOX_NOTREADY);
    await rt('RemovePodSandbox', { podSandboxId });
    expect((await rt('ListPodSandbox', {})).items).toEqual([]);
    // crictl rmi (crictl resolves the reference with ImageStatus, then removes by id)
    const st = await im('ImageStatus', { image: { image } });
    await im('RemoveImage', { image: { image: st.image!.id } });
    expect((await im('ImageStatus', { image: { image } })).image).toBeNull();
    expect(k.stderr()).not.toMatch(/at .*\.ts:\d+/); // no stack traces on the way
  });
}

describe('crictl workflow, sim backend', () => {
  workflow('sim', 'busybox', async () => ['--synthetic-images'], ['echo', 'hi']);
});

describe.runIf(canProcess)('crictl workflow, process backend', () => {
  workflow(
    'process',
    'kemu.test/busybox:1.36',
    async (dir) => {
      await buildBusyboxLayout(path.join(dir, 'images', 'busybox'), 'kemu.test/busybox:1.36');
      fs.mkdirSync(path.join(dir, 'net.d'));
      const bridge = `kc${process.pid % 100000}br`;
      fs.writeFileSync(
        path.join(dir, 'net.d', '10-crictl.conflist'),
        JSON.stringify({
          cniVersion: '1.0.0',
          name: `kemu-crictl-${process.pid}`,
          plugins: [
            {
              type: 'bridge',
              bridge,
              isGateway: true,
              ipam: { type: 'host-local', ranges: [[{ subnet: `10.214.${process.pid % 200}.0/24` }]], dataDir: path.join(dir, 'ipam') },
            },
          ],
        }),
      );
      afterAll(() => {
        spawnSync('ip', ['link', 'del', bridge]);
      });
      return ['--image-dir', path.join(dir, 'images'), '--cni-conf-dir', path.join(dir, 'net.d'), '--cni-bin-dir', '/usr/lib/cni', '--cni-cache-dir', path.join(dir, 'cni-cache'), '--allowed-log-root', dir];
    },
    ['echo', 'hi'],
  );
});
