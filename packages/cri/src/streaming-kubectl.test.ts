// kubectl as the peer: its Go SPDY client (spdystream) against the streaming server, the way the API server
// proxies `kubectl exec` / `kubectl port-forward` to a kubelet. A stand-in API server answers the pod GET and
// forwards each upgrade request, unchanged but for its path, to the URL the CRI Exec/PortForward call returned.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { cri } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { PtyProcess } from './pty.js';
import { containerConfig, nodePty, startEchoPod, tempDir, type TestShim, waitFor } from './test-util.js';

const canRun = requirePeers('the kubectl peer tests', [peers.kubectl, peers.netns, peers.unshare, peers.referenceCni, nodePty]);
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => fs.existsSync(p)) ?? 'kubectl';

describe.runIf(canRun)('kubectl over SPDY against the streaming server', () => {
  let shim: TestShim;
  let pod: { id: string; config: cri.PodSandboxConfig };
  let cid: string;
  /** Containers by name, for the API server's ?container= parameter. */
  const byName = new Map<string, { id: string; tty: boolean }>();
  let api: http.Server;
  let server: string;
  const port = 20000 + ((process.pid + 7) % 20000);
  const children = new Set<ChildProcess>();
  const relayed = new Set<Duplex>();

  beforeAll(async () => {
    ({ shim, pod, cid } = await startEchoPod('kemu-kctl', port));
    byName.set('c', { id: cid, tty: false });
    api = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'GET' && url.pathname === '/api/v1/namespaces/default/pods/web') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'web', namespace: 'default', uid: 'u-1' },
            spec: { containers: [...byName].map(([name, c]) => ({ name, image: 'busybox:1.36', tty: c.tty, stdin: c.tty })) },
            status: { phase: 'Running' },
          }),
        );
        return;
      }
      // Just enough discovery for kubectl to map "pods" to /api/v1.
      const discovery: Record<string, unknown> = {
        '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] },
        '/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [] },
        '/api/v1': {
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [
            { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list'], shortNames: ['po'] },
            { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
            { name: 'pods/portforward', singularName: '', namespaced: true, kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
          ],
        },
      };
      if (req.method === 'GET' && discovery[url.pathname]) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(discovery[url.pathname]));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `${url.pathname} not found` }));
    });
    api.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void proxyUpgrade(req, socket, head));
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    server = `http://127.0.0.1:${(api.address() as net.AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const s of relayed) s.destroy();
    api?.closeAllConnections();
    await new Promise((r) => api?.close(r));
    if (!shim) return;
    for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) await shim.call('RemovePodSandbox', { podSandboxId: p.id });
    await shim.close();
  });

  /** What the API server does for pods/exec and pods/portforward: ask the runtime for a URL and relay the upgrade. */
  async function proxyUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer) {
    const url = new URL(req.url ?? '/', 'http://x');
    const q = url.searchParams;
    let target: string | undefined;
    const flag = (k: string) => q.get(k) === 'true' || q.get(k) === '1';
    if (url.pathname.endsWith('/attach')) {
      target = (
        await shim.call('Attach', {
          containerId: byName.get(q.get('container') ?? 'c')?.id ?? cid,
          tty: flag('tty'),
          stdin: flag('stdin'),
          stdout: flag('stdout'),
          stderr: flag('stderr'),
        })
      ).url;
    } else if (url.pathname.endsWith('/exec')) {
      target = (
        await shim.call('Exec', {
          containerId: cid,
          cmd: q.getAll('command'),
          tty: q.get('tty') === 'true',
          stdin: q.get('stdin') === 'true',
          stdout: q.get('stdout') === 'true',
          stderr: q.get('stderr') === 'true',
        })
      ).url;
    } else if (url.pathname.endsWith('/portforward')) {
      target = (await shim.call('PortForward', { podSandboxId: pod.id, port: q.getAll('ports').map(Number) })).url;
    }
    if (!target) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    const t = new URL(target);
    relayed.add(socket);
    const upstream = net.connect(Number(t.port), t.hostname, () => {
      let head1 = `${req.method} ${t.pathname} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) head1 += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      upstream.write(`${head1}\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  }

  const env = { ...process.env, KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false', HOME: tempDir('kemu-kubectl-home-') };

  function kubectl(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = execFile(KUBECTL, ['-s', server, ...args], { env, timeout: 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
      if (input !== undefined) child.stdin!.end(input);
    });
  }

  it('execs with separate stdout and stderr and exits with the command exit code', async () => {
    const r = await kubectl(['exec', 'web', '--', 'sh', '-c', 'echo to-out; echo to-err >&2; exit 3']);
    expect(r.stdout, r.stderr).toBe('to-out\n');
    expect(r.stderr).toContain('to-err\n');
    expect(r.stderr).toContain('command terminated with exit code 3');
    expect(r.code).toBe(3);
  });

  it('carries output far beyond a SPDY flow-control window (kubectl never opens windows)', async () => {
    const r = await kubectl(['exec', 'web', '--', 'sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x']);
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBe(3_000_000);
    expect(/^x+$/.test(r.stdout)).toBe(true);
  });

  it('feeds stdin with -i', async () => {
    const r = await kubectl(['exec', '-i', 'web', '--', 'sh', '-c', 'tr a-z A-Z'], 'shout this\n');
    expect(r.stdout).toBe('SHOUT THIS\n');
    expect(r.code).toBe(0);
  });

  it('runs -it on a terminal of the size of kubectl own terminal', async () => {
    // kubectl -t needs a terminal itself: run it on one, 91x17, and let it send that size over the resize stream.
    const p = new PtyProcess(KUBECTL, ['-s', server, 'exec', '-it', 'web', '--', 'sh', '-c', 'stty size; tty'], {
      env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string')),
      cols: 91,
      rows: 17,
    });
    p.start();
    let out = '';
    p.output.on('data', (d: Buffer) => {
      out += d.toString();
    });
    expect(await p.exit).toBe(0);
    expect(out).toMatch(/17 91\r\n\/dev\/pts\/\d+\r\n/);
  });

  it('drives an interactive shell with -it and returns its exit code', async () => {
    const p = new PtyProcess(KUBECTL, ['-s', server, 'exec', '-it', 'web', '--', 'sh'], {
      env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string')),
      cols: 100,
      rows: 30,
    });
    p.start();
    let out = '';
    p.output.on('data', (d: Buffer) => {
      out += d.toString();
    });
    p.input.write('echo $((6*7)); exit 4\r');
    expect(await p.exit).toBe(4);
    // The shell's job control works on its terminal: no "Cannot set tty process group" complaints.
    expect(out).toContain('42\r\n');
    expect(out).not.toContain('process group');
  });

  it('attaches with -it to a container created with tty and stdin (what critest checks)', async () => {
    const { containerId } = await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({ metadata: { name: 'shell', attempt: 0 }, image: { image: 'busybox:1.36' }, command: ['sh'], tty: true, stdin: true, logPath: 'shell/0.log' }),
      sandboxConfig: pod.config,
    });
    await shim.call('StartContainer', { containerId });
    byName.set('shell', { id: containerId!, tty: true });
    const p = new PtyProcess(KUBECTL, ['-s', server, 'attach', '-it', 'web', '-c', 'shell'], {
      env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string')),
      cols: 64,
      rows: 12,
    });
    p.start();
    let out = '';
    p.output.on('data', (d: Buffer) => {
      out += d.toString();
    });
    // As kubectl's hint says: press enter until the shell's prompt shows, then type.
    await waitFor(() => (out.includes("If you don't see a command prompt") ? true : undefined), 10_000, 'kubectl to start attaching');
    for (let i = 0; i < 20 && !/# $/.test(out); i++) {
      p.input.write('\r');
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(out).toMatch(/# $/);
    p.input.write('stty size; exit 6\r');
    await p.exit;
    expect(out, JSON.stringify(out)).toContain('12 64\r\n');
    const s = await waitFor(async () => {
      const st = (await shim.call('ContainerStatus', { containerId: containerId! })).status!;
      return st.state === cri.ContainerState.CONTAINER_EXITED ? st : undefined;
    });
    expect(s.exitCode).toBe(6);
  });

  it('port-forwards to a listener inside the pod network namespace', async () => {
    const child = spawn(KUBECTL, ['-s', server, 'port-forward', 'web', `0:${port}`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const local = await new Promise<number>((resolve, reject) => {
      let text = '';
      child.stdout.on('data', (d: Buffer) => {
        text += d.toString();
        const m = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(text);
        if (m) resolve(Number(m[1]));
      });
      child.on('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${text}`)));
    });
    for (const msg of ['first connection', 'second connection']) {
      const echoed = await new Promise<string>((resolve, reject) => {
        const s = net.connect(local, '127.0.0.1', () => s.write(msg));
        let got = '';
        s.on('data', (d: Buffer) => {
          got += d.toString();
          if (got.length >= msg.length) {
            s.end();
            resolve(got);
          }
        });
        s.on('error', reject);
      });
      expect(echoed).toBe(msg);
    }
    child.kill('SIGTERM');
  });
});
