// kemu-cri (process backend) and containerd 1.6's CRI plugin driven through the same calls by the same
// client: a container's log file exists as soon as StartContainer returns, and ListContainerStats lists
// created, exited and running containers alike, with CPU and memory figures for the running one only.
// (Where kemu-cri deliberately differs: ContainerStats on a created or exited container answers the same
// entry instead of containerd's UNKNOWN "unexpected metrics response: []".)
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cri, openChannel, type PromiseApi } from '@kemu/proto';
import { peers, program, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPauseImage, cleanupDir, type Containerd, SANDBOX_IMAGE, startContainerd } from './harness.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const ok = requirePeers('the CRI parity e2e test', [
  peers.root,
  peers.netns,
  peers.busybox,
  program('containerd', 'containerd'),
  program('ctr', 'containerd'),
  program('runc', 'runc'),
]);

type RuntimeApi = PromiseApi<cri.RuntimeServiceMethods>;

const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-parity-'));
const nsName = `kemu-test-${process.pid}-parity`;
let containerd: Containerd | undefined;
let kemu: ChildProcess | undefined;
let kemuRt: RuntimeApi;
let closeKemu = () => {};

beforeAll(async () => {
  if (!ok) return;
  spawnSync('ip', ['netns', 'add', nsName]);
  spawnSync('ip', ['-n', nsName, 'link', 'set', 'lo', 'up']);
  const conf = path.join(tmp, 'net.d');
  mkdirSync(conf);
  containerd = await startContainerd({
    dir: path.join(tmp, 'containerd'),
    netns: nsName,
    cniConfDir: conf,
    cniBinDir: '/usr/lib/cni',
    sandboxImageArchive: buildPauseImage(tmp),
  });
  const socket = path.join(tmp, 'kemu-cri.sock');
  kemu = spawn(
    process.execPath,
    [
      '--conditions=@kemu/source',
      '--import',
      'tsx',
      path.join(REPO, 'packages/cri/src/cli.ts'),
      '--listen',
      `unix://${socket}`,
      '--backend',
      'process',
      '--state-dir',
      path.join(tmp, 'kemu-state'),
      '--synthetic-images',
      '--allowed-log-root',
      tmp,
    ],
    { cwd: REPO, stdio: 'ignore' },
  );
  const channel = openChannel(`unix://${socket}`);
  closeKemu = () => channel.close();
  kemuRt = channel.service(cri.RuntimeServiceService);
  const images = channel.service(cri.ImageServiceService);
  for (let i = 0; ; i++) {
    try {
      await images.PullImage({ image: { image: SANDBOX_IMAGE } }, { timeoutMs: 2000 });
      break;
    } catch (e) {
      if (i > 300) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}, 180_000);

afterAll(async () => {
  await containerd?.stop();
  if (kemuRt) {
    const pods = await kemuRt.ListPodSandbox({}).catch(() => ({ items: [] }));
    for (const p of pods.items ?? []) await kemuRt.RemovePodSandbox({ podSandboxId: p.id }).catch(() => undefined);
  }
  closeKemu();
  kemu?.kill('SIGTERM');
  spawnSync('ip', ['netns', 'del', nsName]);
  cleanupDir(tmp);
});

/** The same scenario on either runtime; what a client can observe of it. */
async function scenario(rt: RuntimeApi, name: string) {
  const logDirectory = path.join(tmp, `logs-${name}`);
  const config: cri.PodSandboxConfig = {
    metadata: { name: `parity-${name}`, namespace: 'default', uid: `parity-${name}-uid`, attempt: 0 },
    logDirectory,
    linux: { securityContext: { namespaceOptions: { network: cri.NamespaceMode.NODE } } },
  };
  const { podSandboxId } = await rt.RunPodSandbox({ config }, { timeoutMs: 60_000 });
  const create = async (cname: string, command: string[]) =>
    (
      await rt.CreateContainer(
        { podSandboxId, sandboxConfig: config, config: { metadata: { name: cname }, image: { image: SANDBOX_IMAGE }, command, logPath: `${cname}/0.log` } },
        { timeoutMs: 60_000 },
      )
    ).containerId!;
  const created = await create('created', ['/bin/busybox', 'sleep', '1000']);
  const exited = await create('exited', ['/bin/busybox', 'true']);
  const running = await create('running', ['/bin/busybox', 'sleep', '1000']);
  const logBefore = existsSync(path.join(logDirectory, 'running/0.log'));
  await rt.StartContainer({ containerId: running }, { timeoutMs: 60_000 });
  const log = path.join(logDirectory, 'running/0.log');
  const logAfterStart = existsSync(log) && statSync(log).isFile();
  await rt.StartContainer({ containerId: exited }, { timeoutMs: 60_000 });
  for (let i = 0; i < 200; i++) {
    const { status } = await rt.ContainerStatus({ containerId: exited });
    if (status?.state === cri.ContainerState.CONTAINER_EXITED) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const ids = new Map([
    [created, 'created'],
    [exited, 'exited'],
    [running, 'running'],
  ]);
  const { stats } = await rt.ListContainerStats({ filter: { podSandboxId } });
  const listed = (stats ?? [])
    .map((s) => ({ name: ids.get(s.attributes!.id!), cpu: !!s.cpu, memory: !!s.memory, writableLayer: !!s.writableLayer }))
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  await rt.StopPodSandbox({ podSandboxId }, { timeoutMs: 60_000 });
  await rt.RemovePodSandbox({ podSandboxId }, { timeoutMs: 60_000 });
  return { logBefore, logAfterStart, listed };
}

describe.runIf(ok)('kemu-cri and containerd 1.6 answer the same', () => {
  it('log file at StartContainer, and ListContainerStats for created, exited and running containers', async () => {
    const reference = await scenario(containerd!.runtime, 'containerd');
    const ours = await scenario(kemuRt, 'kemu');
    expect(reference).toEqual({
      logBefore: false,
      logAfterStart: true,
      listed: [
        { name: 'created', cpu: false, memory: false, writableLayer: true },
        { name: 'exited', cpu: false, memory: false, writableLayer: true },
        { name: 'running', cpu: true, memory: true, writableLayer: true },
      ],
    });
    expect(ours).toEqual(reference);
  });
});
