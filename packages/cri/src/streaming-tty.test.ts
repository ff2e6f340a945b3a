// TTY exec and attach over the WebSocket remote-command protocol: the command runs on a real pseudo-terminal
// (process backend, as root) sized from the client's resize channel; the sim backend keeps tty semantics.
import fs from 'node:fs';
import path from 'node:path';
import { cri } from '@kemu/proto';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { containerConfig, nodePty, podConfig, startTestShim, tempDir, type TestShim, waitFor } from './test-util.js';

const canRun = requirePeers('the process-backend tty tests', [peers.netns, peers.nsenter, peers.unshare, nodePty]);

interface TtyResult {
  stdout: string;
  stderrFrames: number;
  error: string;
}

/** A v4/v5 channel client: optional initial resize and stdin, collects stdout and the error channel. */
function ttyClient(url: string, opts: { protocol?: string; size?: [number, number]; stdin?: string; resizeLater?: [number, number]; closeStdin?: boolean } = {}): Promise<TtyResult> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), opts.protocol ?? 'v5.channel.k8s.io');
    const r: TtyResult = { stdout: '', stderrFrames: 0, error: '' };
    const send = (ch: number, data: string) => ws.send(Buffer.concat([Buffer.from([ch]), Buffer.from(data)]));
    ws.on('open', () => {
      if (opts.size) send(4, JSON.stringify({ Width: opts.size[0], Height: opts.size[1] }));
      if (opts.stdin) send(0, opts.stdin);
      if (opts.closeStdin) ws.send(Buffer.from([255, 0]));
    });
    ws.on('message', (raw: Buffer) => {
      if (raw[0] === 1) {
        r.stdout += raw.subarray(1).toString();
        if (opts.resizeLater && r.stdout.includes('ready')) {
          send(4, JSON.stringify({ Width: opts.resizeLater[0], Height: opts.resizeLater[1] }));
          send(0, 'go\r');
          opts.resizeLater = undefined;
        }
      } else if (raw[0] === 2) r.stderrFrames++;
      else if (raw[0] === 3) r.error += raw.subarray(1).toString();
    });
    ws.on('close', () => resolve(r));
    ws.on('error', reject);
  });
}

describe.runIf(canRun)('tty on the process backend', () => {
  let shim: TestShim;
  let pod: { id: string; config: cri.PodSandboxConfig };
  let cid: string;

  beforeAll(async () => {
    const dir = tempDir('kemu-cri-tty-');
    shim = await startTestShim({ backend: 'process', syntheticImages: true, process: { netnsPrefix: `kemu-tty${process.pid}-` } }, dir);
    await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
    const config = podConfig(dir, { linux: { securityContext: { namespaceOptions: { network: cri.NamespaceMode.NODE } } } });
    pod = { id: (await shim.call('RunPodSandbox', { config })).podSandboxId!, config };
    cid = (
      await shim.call('CreateContainer', {
        podSandboxId: pod.id,
        config: containerConfig({ image: { image: 'busybox:1.36' }, command: ['sleep', '3600'] }),
        sandboxConfig: config,
      })
    ).containerId!;
    await shim.call('StartContainer', { containerId: cid });
  });

  afterAll(async () => {
    if (!shim) return;
    for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) await shim.call('RemovePodSandbox', { podSandboxId: p.id });
    await shim.close();
  });

  it('runs exec on a /dev/pts terminal sized by the first resize message', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['sh', '-c', 'stty size; tty'], tty: true, stdout: true });
    const r = await ttyClient(url!, { size: [123, 45] });
    expect(r.stdout).toMatch(/^45 123\r\n\/dev\/pts\/\d+\r\n$/);
    expect(JSON.parse(r.error)).toEqual({ metadata: {}, status: 'Success' });
  });

  it('resizes the terminal while the command runs and merges stderr into stdout', async () => {
    const { url } = await shim.call('Exec', {
      containerId: cid,
      cmd: ['sh', '-c', 'echo ready; read x; stty size; echo to-stderr >&2; exit 7'],
      tty: true,
      stdin: true,
      stdout: true,
    });
    const r = await ttyClient(url!, { size: [80, 24], resizeLater: [200, 60] });
    expect(r.stdout).toContain('60 200\r\n');
    expect(r.stdout).toContain('to-stderr\r\n');
    expect(r.stderrFrames).toBe(0);
    expect(JSON.parse(r.error), `output: ${JSON.stringify(r.stdout)}`).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });
  });

  it('ends the session when the client closes stdin (end of file on the terminal)', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['cat'], tty: true, stdin: true, stdout: true });
    const r = await ttyClient(url!, { size: [80, 24], stdin: 'hello\r', closeStdin: true });
    // The terminal echoes the input and cat writes it back: both arrive with CR LF line ends.
    expect(r.stdout).toBe('hello\r\nhello\r\n');
    expect(JSON.parse(r.error).status).toBe('Success');
  });

  it('attaches to a container created with tty and stdin, with resize', async () => {
    const { containerId } = await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({
        metadata: { name: 'interactive', attempt: 0 },
        image: { image: 'busybox:1.36' },
        command: ['sh'],
        tty: true,
        stdin: true,
        logPath: 'interactive/0.log',
      }),
      sandboxConfig: pod.config,
    });
    await shim.call('StartContainer', { containerId });
    const { url } = await shim.call('Attach', { containerId, tty: true, stdin: true, stdout: true });
    const r = await ttyClient(url!, { size: [99, 33], stdin: 'stty size; tty; echo err >&2; exit 4\r' });
    expect(r.stdout).toContain('33 99\r\n');
    expect(r.stdout).toMatch(/\/dev\/pts\/\d+\r\n/);
    expect(r.stdout).toContain('err\r\n');
    expect(JSON.parse(r.error).details?.causes[0], r.stdout).toEqual({ reason: 'ExitCode', message: '4' });
    const s = await waitFor(async () => {
      const st = (await shim.call('ContainerStatus', { containerId })).status!;
      return st.state === cri.ContainerState.CONTAINER_EXITED ? st : undefined;
    });
    expect(s.exitCode).toBe(4);
    // A tty container logs the terminal stream, all of it as stdout.
    const log = fs.readFileSync(path.join(pod.config.logDirectory!, 'interactive/0.log'), 'utf8');
    expect(log).toMatch(/ stdout [FP] err\r?$/m);
    expect(log).not.toMatch(/ stderr /);
  });
});

describe('tty on the sim backend', () => {
  let shim: TestShim;
  let cid: string;

  beforeAll(async () => {
    shim = await startTestShim();
    await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
    const config = podConfig(shim.dir);
    const pod = (await shim.call('RunPodSandbox', { config })).podSandboxId!;
    cid = (await shim.call('CreateContainer', { podSandboxId: pod, config: containerConfig(), sandboxConfig: config })).containerId!;
    await shim.call('StartContainer', { containerId: cid });
  });

  afterAll(async () => {
    await shim?.close();
  });

  it('accepts resize messages and answers with terminal line ends and a Status', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['echo', 'one', 'two'], tty: true, stdout: true });
    const r = await ttyClient(url!, { size: [100, 30] });
    expect(r.stdout).toBe('one two\r\n');
    expect(r.stderrFrames).toBe(0);
    expect(JSON.parse(r.error).status).toBe('Success');
  });

  it('starts a tty command after a short wait when the client never sends a size', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['echo', 'sizeless'], tty: true, stdout: true });
    const r = await ttyClient(url!, {});
    expect(r.stdout).toBe('sizeless\r\n');
  });
});
