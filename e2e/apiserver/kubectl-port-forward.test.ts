// kubectl port-forward (v1.32, and v1.20 where Debian's kubernetes-client is unpacked) against a composed
// cluster's API server: a local port relayed through pods/portforward to the node's CRI streaming server and
// into the pod. Each simulated pod greets a connection with its own banner (`kemu.io/sim-banner`) and then
// echoes, so the reply names the pod it came from; `svc/NAME` reaches the pod the Service selects.
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { freePort, KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpsCluster, startHttpsCluster } from './https-cluster.js';

const ok = requirePeers('kubectl port-forward through a composed cluster', [peers.kubectl]);
const okOld = requirePeers('kubectl v1.20 port-forward through a composed cluster', [peers.kubectl, peers.kubectlOld]);

const manifest = (name: string, app: string, port: number, extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: ${app}}
  annotations: {kemu.io/sim-banner: "hello from ${name}\\n"}
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: [sleep, infinity]
    ports: [{containerPort: ${port}}${extra}]
`;

const service = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`;

/** Starts `kubectl port-forward TARGET LOCAL:REMOTE...` and resolves once it says it forwards them all. */
async function portForward(bin: string, env: Record<string, string>, target: string, remote: number, ...more: number[]) {
  const remotes = [remote, ...more];
  const locals: number[] = [];
  for (let i = 0; i < remotes.length; i++) locals.push(await freePort());
  const local = locals[0];
  const child = spawn(bin, ['port-forward', target, ...remotes.map((r, i) => `${locals[i]}:${r}`), '--address=127.0.0.1'], { env });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`kubectl port-forward did not start: ${out}${err}`)), 30_000);
    const check = () => {
      if (remotes.every((r, i) => out.includes(`Forwarding from 127.0.0.1:${locals[i]} -> ${r}`))) {
        clearTimeout(t);
        resolve();
      }
    };
    child.stdout.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`kubectl port-forward exited ${code}: ${out}${err}`));
    });
  });
  return { child, local, locals, stderr: () => err };
}

/** Connects to the forwarded port, sends `send`, and returns everything read until `want` bytes arrived. */
async function exchange(port: number, send: string, want: number): Promise<string> {
  return await new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const t = setTimeout(() => {
      sock.destroy();
      reject(new Error(`only ${JSON.stringify(got.toString())} arrived`));
    }, 15_000);
    sock.on('connect', () => sock.write(send));
    sock.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= want) {
        clearTimeout(t);
        sock.end();
        resolve(got.toString());
      }
    });
    sock.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    sock.on('close', () => {
      clearTimeout(t);
      reject(new Error(`closed after ${JSON.stringify(got.toString())}`));
    });
  });
}

function stop(child: ChildProcess) {
  if (child.exitCode === null) child.kill();
}

describe.runIf(ok)('kubectl port-forward through the API server', () => {
  let h: HttpsCluster;

  beforeAll(async () => {
    h = await startHttpsCluster('portfwd');
    const apply = await h.kubectl(['apply', '-f', '-'], {
      stdin: [manifest('web', 'web', 8080, ', {containerPort: 8081}'), manifest('other', 'other', 9090), service].join('---\n'),
    });
    expect(apply.code, apply.stderr).toBe(0);
    const ready = await h.kubectl(['wait', 'pod/web', 'pod/other', '--for=condition=Ready', '--timeout=60s']);
    expect(ready.code, ready.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
  });

  it('pod/NAME: the reply comes from that pod, and a second connection works too', async () => {
    const pf = await portForward('kubectl', h.env(), 'pod/web', 8080);
    try {
      const greeting = 'hello from web\n';
      expect(await exchange(pf.local, 'ping\n', greeting.length + 5)).toBe(`${greeting}ping\n`);
      const big = 'x'.repeat(200_000);
      expect(await exchange(pf.local, big, greeting.length + big.length)).toBe(greeting + big);
    } finally {
      stop(pf.child);
    }
    const other = await portForward('kubectl', h.env(), 'pod/other', 9090);
    try {
      expect(await exchange(other.local, 'x', 'hello from other\n'.length + 1)).toBe('hello from other\nx');
    } finally {
      stop(other.child);
    }
  });

  it('several ports of one pod in one command', async () => {
    const pf = await portForward('kubectl', h.env(), 'pod/web', 8080, 8081);
    try {
      expect(await exchange(pf.locals[0], 'a', 'hello from web\n'.length + 1)).toBe('hello from web\na');
      expect(await exchange(pf.locals[1], 'b', 'hello from web\n'.length + 1)).toBe('hello from web\nb');
    } finally {
      stop(pf.child);
    }
  });

  it('svc/NAME: forwards to a pod the Service selects, on the target port of the service port', async () => {
    const pf = await portForward('kubectl', h.env(), 'svc/web', 80);
    try {
      expect(await exchange(pf.local, 'via service\n', 'hello from web\n'.length + 12)).toBe('hello from web\nvia service\n');
    } finally {
      stop(pf.child);
    }
  });

  it('a port nothing listens on in the pod: kubectl reports the refusal and the connection closes', async () => {
    const pf = await portForward('kubectl', h.env(), 'pod/web', 9090);
    try {
      await expect(exchange(pf.local, 'x', 1)).rejects.toThrow('closed after ""');
      await new Promise((r) => setTimeout(r, 500));
      expect(pf.stderr()).toMatch(/error forwarding port 9090 to pod [0-9a-f]+: connection refused: nothing listens on port 9090/);
    } finally {
      stop(pf.child);
    }
  });

  it.runIf(okOld)('kubectl v1.20 (SPDY only): pod/NAME and svc/NAME', async () => {
    for (const target of ['pod/web', 'svc/web']) {
      const pf = await portForward(KUBECTL_OLD, h.env(), target, target === 'svc/web' ? 80 : 8080);
      try {
        expect(await exchange(pf.local, 'old\n', 'hello from web\n'.length + 4)).toBe('hello from web\nold\n');
      } finally {
        stop(pf.child);
      }
    }
  });
});
