// The process backend as root: real namespaces, an image root filesystem, CNI through the reference
// plugins, cgroup limits, logs, exec, streaming, port mappings and recovery. This covers what the
// cri-tools validation suite (critest) checks for sandboxes, containers, networking and streaming.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { collectStream, cri } from '@kemu/proto';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { parseCriLog } from './log-writer.js';
import {
  buildBusyboxLayout,
  containerConfig,
  grpcError,
  podConfig,
  startTestShim,
  type TestShim,
  tempDir,
  waitFor,
  wsStream,
} from './test-util.js';

const canRun = requirePeers('the process backend tests', [peers.netns, peers.unshare, peers.busybox, peers.referenceCni]);

const IMAGE = 'kemu.test/busybox:1.36';
const n = process.pid % 200;
const bridge = `kt${process.pid % 100000}br`;
const subnet = `10.213.${n}.0/24`;
const gateway = `10.213.${n}.1`;

function netnsList(): string {
  return spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
}

function httpGet(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path: '/index.html', timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

describe.runIf(canRun)('process backend', () => {
  let shim: TestShim;
  let dir: string;
  let www: string;

  beforeAll(async () => {
    dir = tempDir('kemu-cri-proc-');
    const imageDir = path.join(dir, 'images');
    await buildBusyboxLayout(path.join(imageDir, 'busybox'), IMAGE);
    www = path.join(dir, 'www');
    fs.mkdirSync(www);
    fs.writeFileSync(path.join(www, 'index.html'), 'served from a host path\n');
    const confDir = path.join(dir, 'net.d');
    fs.mkdirSync(confDir);
    fs.writeFileSync(
      path.join(confDir, '10-test.conflist'),
      JSON.stringify({
        cniVersion: '1.0.0',
        name: `kemu-test-${process.pid}`,
        plugins: [
          {
            type: 'bridge',
            bridge,
            isGateway: true,
            ipMasq: false,
            hairpinMode: true,
            capabilities: { ipRanges: true },
            ipam: { type: 'host-local', ranges: [[{ subnet }]], dataDir: path.join(dir, 'ipam') },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      }),
    );
    shim = await startTestShim(
      {
        backend: 'process',
        imageDir,
        syntheticImages: true,
        cni: { confDir, binDirs: ['/usr/lib/cni'], cacheDir: path.join(dir, 'cni-cache') },
        process: { netnsPrefix: `kemu-t${process.pid}-` },
      },
      dir,
    );
    await shim.icall('PullImage', { image: { image: IMAGE } });
  });

  afterAll(async () => {
    if (!shim) return;
    const pods = await shim.call('ListPodSandbox', {});
    for (const p of pods.items ?? []) await shim.call('RemovePodSandbox', { podSandboxId: p.id });
    await shim.close();
    spawnSync('ip', ['link', 'del', bridge]);
  });

  async function runPod(over: Partial<cri.PodSandboxConfig> = {}) {
    const config = podConfig(dir, over);
    const { podSandboxId } = await shim.call('RunPodSandbox', { config });
    return { id: podSandboxId!, config };
  }

  async function runContainer(pod: { id: string; config: cri.PodSandboxConfig }, over: Partial<cri.ContainerConfig> = {}) {
    const { containerId } = await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({ image: { image: IMAGE }, ...over }),
      sandboxConfig: pod.config,
    });
    await shim.call('StartContainer', { containerId });
    return containerId!;
  }

  const status = async (id: string) => (await shim.call('ContainerStatus', { containerId: id })).status!;
  const execOut = async (id: string, cmd: string[]) => {
    const r = await shim.call('ExecSync', { containerId: id, cmd, timeout: 10 });
    return { out: Buffer.from(r.stdout!).toString(), err: Buffer.from(r.stderr!).toString(), code: r.exitCode };
  };

  it('reports NetworkReady from the CNI config and the cgroup mode', async () => {
    const s = await shim.call('Status', { verbose: true });
    expect(s.status!.conditions!.find((c) => c.type === 'NetworkReady')!.status).toBe(true);
    expect(['v1', 'v2', 'none']).toContain(JSON.parse(s.info!.config).backend.cgroups);
  });

  it('runs a pod in its own netns with the CNI IP, hostname and DNS config, and cleans up on removal', async () => {
    const pod = await runPod({
      linux: { securityContext: { namespaceOptions: { pid: cri.NamespaceMode.CONTAINER } } },
      hostname: 'web-0',
      dnsConfig: { servers: ['10.96.0.10'], searches: ['ns.svc.cluster.local'], options: ['ndots:5'] },
    });
    const st = await shim.call('PodSandboxStatus', { podSandboxId: pod.id, verbose: true });
    const ip = st.status!.network!.ip!;
    expect(ip.startsWith(`10.213.${n}.`)).toBe(true);
    const info = JSON.parse(st.info!.info);
    expect(netnsList()).toContain(path.basename(info.netNamespacePath));
    const cid = await runContainer(pod);
    expect((await execOut(cid, ['hostname'])).out).toBe('web-0\n');
    expect((await execOut(cid, ['cat', '/etc/resolv.conf'])).out).toBe('search ns.svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n');
    expect((await execOut(cid, ['cat', '/etc/hosts'])).out).toContain(`${ip}\tweb-0`);
    expect((await execOut(cid, ['ip', '-4', 'addr', 'show', 'eth0'])).out).toContain(ip);
    // Own PID namespace: the container command is PID 1 and nothing of the host is visible.
    expect((await execOut(cid, ['cat', '/proc/1/cmdline'])).out).toBe('sleep\u00003600\u0000');
    await shim.call('StopPodSandbox', { podSandboxId: pod.id });
    expect((await status(cid)).state).toBe(cri.ContainerState.CONTAINER_EXITED);
    expect(netnsList()).not.toContain(path.basename(info.netNamespacePath));
    expect(fs.readdirSync(path.join(dir, 'ipam', `kemu-test-${process.pid}`)).filter((f) => f.startsWith('10.'))).toEqual([]);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    expect(fs.existsSync(`/proc/${info.pid}`)).toBe(false);
  });

  it('runs containers in the image rootfs with logs, env, user, mounts and exit codes', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod, {
      command: ['sh', '-c', 'echo out-line; echo err-line >&2; printf partial; exec sleep 3600'],
      envs: [{ key: 'GREETING', value: 'hello there' }],
      mounts: [{ hostPath: www, containerPath: '/data', readonly: true }],
      linux: { securityContext: { runAsUser: { value: 1234 }, runAsGroup: { value: 2345 } } },
    });
    const st = await status(cid);
    expect(st.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect(st.user!.linux).toMatchObject({ uid: 1234, gid: 2345 });
    const records = await waitFor(() => {
      const r = fs.existsSync(st.logPath!) ? parseCriLog(fs.readFileSync(st.logPath!, 'utf8')) : [];
      return r.length >= 2 ? r : undefined;
    });
    expect(records.map((r) => [r.stream, r.partial, r.text]).sort()).toEqual([
      ['stderr', false, 'err-line'],
      ['stdout', false, 'out-line'],
    ]);
    expect((await execOut(cid, ['id', '-u'])).out).toBe('1234\n');
    expect((await execOut(cid, ['id', '-g'])).out).toBe('2345\n');
    expect((await execOut(cid, ['sh', '-c', 'echo $GREETING $FROM_IMAGE'])).out).toBe('hello there yes\n');
    expect((await execOut(cid, ['cat', '/data/index.html'])).out).toBe('served from a host path\n');
    const ro = await execOut(cid, ['touch', '/data/x']);
    expect(ro.code).not.toBe(0);
    // The image root: the host's files are not visible.
    expect((await execOut(cid, ['ls', '/usr'])).code).not.toBe(0);
    expect((await execOut(cid, ['sh', '-c', 'exit 9'])).code).toBe(9);

    const exits = await runContainer(pod, { metadata: { name: 'exits' }, logPath: 'exits/0.log', command: ['sh', '-c', 'echo bye; exit 3'] });
    const ended = await waitFor(async () => {
      const s = await status(exits);
      return s.state === cri.ContainerState.CONTAINER_EXITED ? s : undefined;
    });
    expect(ended).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(parseCriLog(fs.readFileSync(ended.logPath!, 'utf8')).map((r) => r.text)).toEqual(['bye']);

    const { containerId: bad } = await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({ metadata: { name: 'bad' }, image: { image: IMAGE }, command: ['/no/such/binary'] }),
    });
    const err = await grpcError(shim.call('StartContainer', { containerId: bad }));
    expect(err.details).toMatch(/no\/such\/binary/);
    expect(await status(bad!)).toMatchObject({ state: cri.ContainerState.CONTAINER_EXITED, reason: 'StartError' });
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('has the log file when StartContainer returns, and reports stats for created and exited containers', async () => {
    const pod = await runPod();
    const quiet = await runContainer(pod, { metadata: { name: 'quiet' }, logPath: 'quiet/0.log', command: ['sleep', '3600'] });
    const { logPath } = await status(quiet);
    expect(fs.statSync(logPath!).isFile()).toBe(true);
    const { containerId: created } = await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({ metadata: { name: 'created' }, logPath: 'created/0.log', image: { image: IMAGE } }),
    });
    const exited = await runContainer(pod, { metadata: { name: 'exited' }, logPath: 'exited/0.log', command: ['true'] });
    await waitFor(async () => ((await status(exited)).state === cri.ContainerState.CONTAINER_EXITED ? true : undefined));
    for (const id of [created!, exited]) {
      const s = (await shim.call('ContainerStats', { containerId: id })).stats!;
      expect(s.attributes!.id).toBe(id);
      expect(s.memory ?? null).toBeNull();
    }
    const list = await shim.call('ListContainerStats', { filter: { podSandboxId: pod.id } });
    expect(list.stats!.map((x) => x.attributes!.id).sort()).toEqual([quiet, created!, exited].sort());
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('creates mount targets inside the image even where a container planted a link to a host path there', async () => {
    const hostDir = tempDir('kemu-cri-host-');
    // an image of its own: containers of one image share its unpacked root file system
    const ref = 'kemu.test/linky:1';
    await buildBusyboxLayout(path.join(dir, 'images', 'linky'), ref);
    await shim.icall('PullImage', { image: { image: ref } });
    const pod = await runPod();
    const planter = await runContainer(pod, {
      metadata: { name: 'planter' },
      logPath: 'planter/0.log',
      image: { image: ref },
      command: ['sh', '-c', `ln -s ${hostDir} /data; exec sleep 3600`],
    });
    await waitFor(async () => ((await execOut(planter, ['ls', '-l', '/data'])).out.includes(hostDir) ? true : undefined));
    const cid = await runContainer(pod, {
      metadata: { name: 'victim' },
      logPath: 'victim/0.log',
      image: { image: ref },
      command: ['sleep', '3600'],
      mounts: [{ hostPath: www, containerPath: '/data/sub', readonly: true }],
    });
    // The container sees the mount through the link as it resolves inside its root; the host directory the
    // link names got nothing.
    expect((await execOut(cid, ['cat', '/data/sub/index.html'])).out).toBe('served from a host path\n');
    expect(fs.readdirSync(hostDir)).toEqual([]);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('shares the pause PID namespace when the pod asks for it', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod);
    expect((await execOut(cid, ['cat', '/proc/1/cmdline'])).out).toBe('sleep\u0000infinity\u0000');
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('stops with SIGTERM, then SIGKILL after the timeout', async () => {
    const pod = await runPod({ linux: { securityContext: { namespaceOptions: { pid: cri.NamespaceMode.CONTAINER } } } });
    // sleep as PID 1 of its namespace has no SIGTERM handler, so only SIGKILL ends it.
    const stubborn = await runContainer(pod, { metadata: { name: 'stubborn' }, command: ['sleep', '3600'] });
    const t0 = Date.now();
    await shim.call('StopContainer', { containerId: stubborn, timeout: 1 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(await status(stubborn)).toMatchObject({ state: cri.ContainerState.CONTAINER_EXITED, exitCode: 137 });
    const polite = await runContainer(pod, {
      metadata: { name: 'polite' },
      logPath: 'polite.log',
      command: ['sh', '-c', 'trap "exit 0" TERM; echo ready; while true; do sleep 0.1; done'],
    });
    // Only once the trap is set does SIGTERM end it (PID 1 ignores signals it has no handler for).
    const politeLog = (await status(polite)).logPath!;
    await waitFor(() => (fs.existsSync(politeLog) && fs.readFileSync(politeLog, 'utf8').includes('ready') ? true : undefined));
    const t1 = Date.now();
    await shim.call('StopContainer', { containerId: polite, timeout: 30 });
    expect(Date.now() - t1).toBeLessThan(10_000);
    expect(await status(polite)).toMatchObject({ exitCode: 0, reason: 'Completed' });
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('applies cgroup limits and reports stats', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod, {
      linux: { resources: { cpuQuota: 50000, cpuPeriod: 100000, cpuShares: 512, memoryLimitInBytes: 64 * 1024 * 1024 } },
    });
    const info = JSON.parse((await shim.call('ContainerStatus', { containerId: cid, verbose: true })).info!.info);
    const mode = JSON.parse((await shim.call('Status', { verbose: true })).info!.config).backend.cgroups;
    if (mode === 'v1') {
      expect(info.cgroup).toMatchObject({ 'cpu.cfs_quota_us': '50000', 'cpu.shares': '512', 'memory.limit_in_bytes': String(64 * 1024 * 1024) });
      expect(fs.readFileSync(`/sys/fs/cgroup/memory/kemu-cri/${cid}/memory.limit_in_bytes`, 'utf8').trim()).toBe(String(64 * 1024 * 1024));
    } else if (mode === 'v2') {
      expect(info.cgroup).toMatchObject({ 'cpu.max': '50000 100000', 'memory.max': String(64 * 1024 * 1024) });
    }
    await shim.call('UpdateContainerResources', { containerId: cid, linux: { memoryLimitInBytes: 128 * 1024 * 1024 } });
    if (mode === 'v1') {
      expect(fs.readFileSync(`/sys/fs/cgroup/memory/kemu-cri/${cid}/memory.limit_in_bytes`, 'utf8').trim()).toBe(String(128 * 1024 * 1024));
    }
    const stats = (await shim.call('ContainerStats', { containerId: cid })).stats!;
    expect(stats.memory!.workingSetBytes!.value).toBeGreaterThan(0);
    const ps = (await shim.call('PodSandboxStats', { podSandboxId: pod.id })).stats!;
    expect(ps.linux!.network!.interfaces!.map((i) => i.name)).toContain('eth0');
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    if (mode === 'v1') expect(fs.existsSync(`/sys/fs/cgroup/memory/kemu-cri/${cid}`)).toBe(false);
  });

  it('serves pod ports: direct, through a hostPort mapping, and through port-forward', async () => {
    const pod = await runPod({ portMappings: [{ protocol: cri.Protocol.TCP, containerPort: 8080, hostPort: 30000 + n }] });
    const cid = await runContainer(pod, {
      command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
    });
    const ip = (await shim.call('PodSandboxStatus', { podSandboxId: pod.id })).status!.network!.ip!;
    expect(await waitFor(() => httpGet(ip, 8080).catch(() => undefined))).toBe('hello from the image\n');
    expect(await httpGet(gateway, 30000 + n)).toBe('hello from the image\n');
    // What critest checks: the host port answers on the node's loopback address too.
    expect(await httpGet('127.0.0.1', 30000 + n)).toBe('hello from the image\n');

    const { url } = await shim.call('PortForward', { podSandboxId: pod.id, port: [8080] });
    const body = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(`${url!.replace(/^http/, 'ws')}?port=8080`, 'v4.channel.k8s.io');
      let data = '';
      const seen = new Set<number>();
      ws.on('message', (raw: Buffer) => {
        const ch = raw[0];
        if (!seen.has(ch)) {
          seen.add(ch);
          expect(raw.readUInt16LE(1)).toBe(8080);
          if (seen.size === 2) ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('GET /index.html HTTP/1.0\r\n\r\n')]));
          return;
        }
        if (ch === 0) data += raw.subarray(1).toString();
      });
      ws.on('close', () => resolve(data));
      ws.on('error', reject);
    });
    expect(body).toMatch(/^HTTP\/1\.[01] 200/);
    expect(body).toContain('hello from the image');
    void cid;
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('streams exec with stdin and attach over WebSocket', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod, { metadata: { name: 'talker' }, command: ['sh', '-c', 'while true; do echo tick; sleep 0.2; done'] });
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['cat'], stdin: true, stdout: true, stderr: true });
    const r = await wsStream(url!, 'v5.channel.k8s.io', 'echoed through cat\n', true);
    expect(r.stdout).toBe('echoed through cat\n');
    expect(JSON.parse(r.error)).toEqual({ metadata: {}, status: 'Success' });
    const { url: failUrl } = await shim.call('Exec', { containerId: cid, cmd: ['sh', '-c', 'echo oops >&2; exit 4'], stdout: true, stderr: true });
    const f = await wsStream(failUrl!, 'v4.channel.k8s.io');
    expect(f.stderr).toBe('oops\n');
    expect(JSON.parse(f.error)).toMatchObject({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '4' }] } });

    const { url: attachUrl } = await shim.call('Attach', { containerId: cid, stdout: true, stderr: true });
    const seen = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(attachUrl!.replace(/^http/, 'ws'), 'v4.channel.k8s.io');
      let out = '';
      ws.on('message', (raw: Buffer) => {
        if (raw[0] === 1) out += raw.subarray(1).toString();
        if (out.includes('tick\n')) ws.close();
      });
      ws.on('close', () => resolve(out));
      ws.on('error', reject);
    });
    expect(seen).toContain('tick\n');
    // Detaching leaves the container running.
    expect((await status(cid)).state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('runs host-network pods on the host root with a synthetic image', async () => {
    await shim.icall('PullImage', { image: { image: 'registry.example/tools:1' } });
    const pod = await runPod({ linux: { securityContext: { namespaceOptions: { network: cri.NamespaceMode.NODE } } } });
    const st = await shim.call('PodSandboxStatus', { podSandboxId: pod.id });
    expect(st.status!.network!.ip).toBe('');
    const cid = await runContainer(pod, { image: { image: 'registry.example/tools:1' }, command: ['sleep', '3600'] });
    // The host root filesystem: host binaries run, and the host's network is visible.
    expect((await execOut(cid, ['cat', '/etc/os-release'])).out).toContain('ID=');
    const hostLinks = spawnSync('ip', ['-o', 'link'], { encoding: 'utf8' }).stdout.split('\n').length;
    const inside = (await execOut(cid, ['ip', '-o', 'link'])).out.split('\n').length;
    expect(inside).toBe(hostLinks);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('a root container on the host filesystem (an image without layers) cannot change the host', async () => {
    // The targets are sacrificial files of this test on the host's disk, so a regression costs nothing else.
    const victim = fs.mkdtempSync('/var/tmp/kemu-cri-ro-');
    fs.writeFileSync(path.join(victim, 'keep'), 'host data\n');
    fs.chmodSync(victim, 0o755);
    try {
      await shim.icall('PullImage', { image: { image: 'registry.example/tools:1' } });
      const pod = await runPod({ linux: { securityContext: { namespaceOptions: { network: cri.NamespaceMode.NODE } } } });
      const cid = await runContainer(pod, { image: { image: 'registry.example/tools:1' }, command: ['sleep', '3600'] });
      const attack = await execOut(cid, ['sh', '-c', `chmod 400 ${victim} 2>&1; rm -f ${victim}/keep 2>&1; touch ${victim}/planted 2>&1; touch /tmp/scratch && echo tmp-ok`]);
      expect(attack.out).toMatch(/Read-only file system/);
      expect(attack.out).toContain('tmp-ok'); // a private, writable /tmp
      expect(fs.statSync(victim).mode & 0o777).toBe(0o755);
      expect(fs.readFileSync(path.join(victim, 'keep'), 'utf8')).toBe('host data\n');
      expect(fs.existsSync(path.join(victim, 'planted'))).toBe(false);
      expect(fs.existsSync('/tmp/scratch')).toBe(false);
      await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    } finally {
      fs.rmSync(victim, { recursive: true, force: true });
    }
  });

  it('reopens a rotated log, reports pod stats and metrics, and streams events for real processes', async () => {
    const events: cri.ContainerEventResponse[] = [];
    const stream = shim.rt.GetContainerEvents({});
    stream.on('data', (e: cri.ContainerEventResponse) => events.push(e));
    stream.on('error', () => {});
    const pod = await runPod({ labels: { app: 'ticker' } });
    const cid = await runContainer(pod, { metadata: { name: 'ticker' }, logPath: 'ticker.log', command: ['sh', '-c', 'while true; do echo tick; sleep 0.1; done'] });
    const logPath = (await status(cid)).logPath!;
    await waitFor(() => (fs.existsSync(logPath) && fs.readFileSync(logPath, 'utf8').includes('tick') ? true : undefined));
    fs.renameSync(logPath, `${logPath}.1`);
    await shim.call('ReopenContainerLog', { containerId: cid });
    await waitFor(() => (fs.existsSync(logPath) && parseCriLog(fs.readFileSync(logPath, 'utf8')).length > 0 ? true : undefined));
    const rotated = fs.readFileSync(`${logPath}.1`, 'utf8');
    await new Promise((r) => setTimeout(r, 300));
    expect(fs.readFileSync(`${logPath}.1`, 'utf8')).toBe(rotated);

    const lps = await shim.call('ListPodSandboxStats', { filter: { labelSelector: { app: 'ticker' } } });
    expect(lps.stats!.map((s) => s.attributes!.id)).toEqual([pod.id]);
    expect(lps.stats![0].linux!.containers!.map((c) => c.attributes!.id)).toEqual([cid]);
    expect(lps.stats![0].linux!.cpu!.usageCoreNanoSeconds!.value).toBeGreaterThan(0);
    const metrics = await shim.call('ListPodSandboxMetrics', {});
    const mine = metrics.podMetrics!.find((m) => m.podSandboxId === pod.id)!;
    expect(mine.containerMetrics![0].metrics!.find((m) => m.name === 'container_start_time_seconds')!.value!.value).toBeGreaterThan(1e9);
    await shim.call('StopContainer', { containerId: cid, timeout: 5 });
    await waitFor(() => events.some((e) => e.containerId === cid && e.containerEventType === cri.ContainerEventType.CONTAINER_STOPPED_EVENT) || undefined);
    expect(events.filter((e) => e.containerId === cid).map((e) => e.containerEventType).slice(0, 3)).toEqual([
      cri.ContainerEventType.CONTAINER_CREATED_EVENT,
      cri.ContainerEventType.CONTAINER_STARTED_EVENT,
      cri.ContainerEventType.CONTAINER_STOPPED_EVENT,
    ]);
    stream.cancel();
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('answers the list, stream, metric-descriptor and runtime-config RPCs', async () => {
    const pod = await runPod({ labels: { app: 'lists' } });
    const cid = await runContainer(pod, { metadata: { name: 'lister' } });
    const pods = await collectStream(shim.rt.StreamPodSandboxes({ filter: { labelSelector: { app: 'lists' } } }));
    expect(pods.flatMap((r) => r.podSandboxes!.map((p) => p.id))).toEqual([pod.id]);
    const ctrs = await collectStream(shim.rt.StreamContainers({ filter: { podSandboxId: pod.id } }));
    expect(ctrs.flatMap((r) => r.containers!.map((c) => c.id))).toEqual([cid]);
    const cstats = await collectStream(shim.rt.StreamContainerStats({ filter: { id: cid } }));
    expect(cstats[0].containerStats![0].memory!.workingSetBytes!.value).toBeGreaterThan(0);
    const pstats = await collectStream(shim.rt.StreamPodSandboxStats({ filter: { id: pod.id } }));
    expect(pstats[0].podSandboxStats![0].attributes!.id).toBe(pod.id);
    const pm = await collectStream(shim.rt.StreamPodSandboxMetrics({}));
    expect(pm[0].podSandboxMetrics!.map((m) => m.podSandboxId)).toContain(pod.id);
    expect((await shim.call('ListMetricDescriptors', {})).descriptors!.length).toBeGreaterThan(0);
    expect((await shim.call('RuntimeConfig', {})).linux!.cgroupDriver).toBe(cri.CgroupDriver.CGROUPFS);
    const imgs = await collectStream(shim.img.StreamImages({}));
    expect(imgs[0].images!.some((i) => i.repoTags!.includes(IMAGE))).toBe(true);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('recovers running and exited containers after a restart', async () => {
    const pod = await runPod();
    const running = await runContainer(pod, { metadata: { name: 'keeps-running' } });
    const done = await runContainer(pod, { metadata: { name: 'done' }, command: ['sh', '-c', 'exit 6'] });
    await waitFor(async () => ((await status(done)).state === cri.ContainerState.CONTAINER_EXITED ? true : undefined));
    const chatty = await runContainer(pod, {
      metadata: { name: 'chatty' },
      logPath: 'chatty.log',
      command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.05; done'],
    });
    const chattyLog = (await status(chatty)).logPath!;
    await waitFor(() => (fs.existsSync(chattyLog) && fs.readFileSync(chattyLog, 'utf8').includes('line-2') ? true : undefined));
    const pid = JSON.parse((await shim.call('ContainerStatus', { containerId: running, verbose: true })).info!.info).pid;
    await shim.restart();
    // Output written while the runtime was down or after it came back still reaches the log, in order,
    // and the container did not die of a broken pipe.
    const before = parseCriLog(fs.readFileSync(chattyLog, 'utf8')).length;
    await waitFor(() => (parseCriLog(fs.readFileSync(chattyLog, 'utf8')).length > before + 3 ? true : undefined));
    const texts = parseCriLog(fs.readFileSync(chattyLog, 'utf8')).map((r) => Number(r.text.slice(5)));
    expect(texts).toEqual(texts.map((_, i) => i + 1));
    expect((await status(chatty)).state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect(await status(done)).toMatchObject({ state: cri.ContainerState.CONTAINER_EXITED, exitCode: 6 });
    expect((await status(running)).state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect((await shim.call('PodSandboxStatus', { podSandboxId: pod.id })).status!.state).toBe(cri.PodSandboxState.SANDBOX_READY);
    expect((await execOut(running, ['echo', 'still here'])).out).toBe('still here\n');
    await shim.call('StopContainer', { containerId: running, timeout: 0 });
    expect(await status(running)).toMatchObject({ state: cri.ContainerState.CONTAINER_EXITED, exitCode: 137 });
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });
});

describe.runIf(canRun)('process backend without a CNI config', () => {
  let shim: TestShim;

  beforeAll(async () => {
    shim = await startTestShim({ backend: 'process', syntheticImages: true, process: { netnsPrefix: `kemu-u${process.pid}-` } });
  });

  afterAll(async () => {
    await shim?.close();
  });

  it('reports NetworkReady=false, refuses pod-network sandboxes without leaking a netns, and still runs host-network pods', async () => {
    const s = await shim.call('Status', {});
    expect(s.status!.conditions!.find((c) => c.type === 'NetworkReady')).toMatchObject({ status: false, reason: 'NetworkPluginNotReady' });
    const config = podConfig(shim.dir);
    const err = await grpcError(shim.call('RunPodSandbox', { config }));
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(err.details).toContain('cni plugin not initialized');
    expect(netnsList()).not.toContain(`kemu-u${process.pid}-`);
    expect((await shim.call('ListPodSandbox', {})).items).toEqual([]);
    const host = await shim.call('RunPodSandbox', {
      config: { ...config, linux: { securityContext: { namespaceOptions: { network: cri.NamespaceMode.NODE } } } },
    });
    await shim.icall('PullImage', { image: { image: 'busybox' } });
    const { containerId } = await shim.call('CreateContainer', {
      podSandboxId: host.podSandboxId,
      config: containerConfig({ image: { image: 'busybox' }, command: ['sleep', '3600'] }),
    });
    await shim.call('StartContainer', { containerId });
    expect((await shim.call('ContainerStatus', { containerId })).status!.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    await shim.call('RemovePodSandbox', { podSandboxId: host.podSandboxId });
  });
});

describe.runIf(canRun)('process backend when the CNI chain fails', () => {
  let shim: TestShim;
  let dir: string;
  const failBridge = `kf${process.pid % 100000}br`;

  beforeAll(async () => {
    dir = tempDir('kemu-cri-cnifail-');
    fs.mkdirSync(path.join(dir, 'net.d'));
    fs.writeFileSync(
      path.join(dir, 'net.d', '10-broken.conflist'),
      JSON.stringify({
        cniVersion: '1.0.0',
        name: `kemu-broken-${process.pid}`,
        plugins: [
          { type: 'bridge', bridge: failBridge, ipam: { type: 'host-local', ranges: [[{ subnet: `10.215.${n}.0/24` }]], dataDir: path.join(dir, 'ipam') } },
          { type: 'kemu-no-such-plugin' },
        ],
      }),
    );
    shim = await startTestShim(
      {
        backend: 'process',
        syntheticImages: true,
        cni: { confDir: path.join(dir, 'net.d'), binDirs: ['/usr/lib/cni'], cacheDir: path.join(dir, 'cache') },
        process: { netnsPrefix: `kemu-f${process.pid}-` },
      },
      dir,
    );
  });

  afterAll(async () => {
    await shim?.close();
    spawnSync('ip', ['link', 'del', failBridge]);
  });

  it('fails RunPodSandbox with the plugin error and leaks no IP, netns or pause process', async () => {
    const err = await grpcError(shim.call('RunPodSandbox', { config: podConfig(dir) }));
    expect(err.code).toBe(grpc.status.UNKNOWN);
    expect(err.details).toMatch(/failed to setup network for sandbox "[0-9a-f]{64}": .*kemu-no-such-plugin/);
    expect(netnsList()).not.toContain(`kemu-f${process.pid}-`);
    const ipamDir = path.join(dir, 'ipam', `kemu-broken-${process.pid}`);
    const held = fs.existsSync(ipamDir) ? fs.readdirSync(ipamDir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : [];
    expect(held).toEqual([]);
    expect((await shim.call('ListPodSandbox', {})).items).toEqual([]);
    expect(spawnSync('pgrep', ['-f', `kemu-f${process.pid}-`]).status).toBe(1);
    expect((await shim.call('Version', {})).runtimeName).toBe('kemu');
  });
});

describe.runIf(canRun)('process backend with a pod CIDR from kubelet', () => {
  let shim: TestShim;
  let dir: string;
  const cidrBridge = `kr${process.pid % 100000}br`;

  beforeAll(async () => {
    dir = tempDir('kemu-cri-cidr-');
    fs.mkdirSync(path.join(dir, 'net.d'));
    // No range in the file: like a kubelet-managed node, the range is the pod CIDR, passed in ipRanges
    // (the reference host-local would otherwise add a second address from the static range).
    fs.writeFileSync(
      path.join(dir, 'net.d', '10-cidr.conflist'),
      JSON.stringify({
        cniVersion: '1.0.0',
        name: `kemu-cidr-${process.pid}`,
        plugins: [
          {
            type: 'bridge',
            bridge: cidrBridge,
            isGateway: true,
            capabilities: { ipRanges: true },
            ipam: { type: 'host-local', dataDir: path.join(dir, 'ipam') },
          },
        ],
      }),
    );
    shim = await startTestShim(
      {
        backend: 'process',
        syntheticImages: true,
        cni: { confDir: path.join(dir, 'net.d'), binDirs: ['/usr/lib/cni'], cacheDir: path.join(dir, 'cache') },
        process: { netnsPrefix: `kemu-r${process.pid}-` },
      },
      dir,
    );
  });

  afterAll(async () => {
    if (shim) for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) await shim.call('RemovePodSandbox', { podSandboxId: p.id });
    await shim?.close();
    spawnSync('ip', ['link', 'del', cidrBridge]);
  });

  it('passes the CIDR from UpdateRuntimeConfig to the IPAM plugin, and keeps it across a restart', async () => {
    await shim.call('UpdateRuntimeConfig', { runtimeConfig: { networkConfig: { podCidr: `10.216.${n}.0/24` } } });
    const a = (await shim.call('RunPodSandbox', { config: podConfig(dir) })).podSandboxId!;
    expect((await shim.call('PodSandboxStatus', { podSandboxId: a })).status!.network!.ip!.startsWith(`10.216.${n}.`)).toBe(true);
    await shim.restart();
    const b = (await shim.call('RunPodSandbox', { config: podConfig(dir) })).podSandboxId!;
    expect((await shim.call('PodSandboxStatus', { podSandboxId: b })).status!.network!.ip!.startsWith(`10.216.${n}.`)).toBe(true);
    expect(JSON.parse((await shim.call('Status', { verbose: true })).info!.config).podCidr).toBe(`10.216.${n}.0/24`);
  });
});
