// The runc backend end to end as root: images pulled from a real registry, containers run by runc in the
// pod's namespaces, the image config honoured, and the security context applied — a root container that
// attacks `/` leaves the host as it was.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri } from '@kemu/proto';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCriLog } from './log-writer.js';
import { buildBusyboxImages, startRegistry, type TestRegistry } from './test-util-registry.js';
import { containerConfig, grpcError, podConfig, startTestShim, tempDir, type TestShim, waitFor, wsStream } from './test-util.js';
import WebSocket from 'ws';

const ok = requirePeers('the runc backend', [peers.root, peers.netns, peers.runc, peers.dockerRegistry, peers.skopeo, peers.umoci, peers.busybox, peers.referenceCni]);

/** A snapshot of what a container must not be able to change on the host. */
function hostFacts() {
  const st = fs.statSync('/');
  return { mode: st.mode, uid: st.uid, root: fs.readdirSync('/').sort(), etc: fs.readdirSync('/etc').sort(), bin: fs.existsSync('/bin/ls') };
}

describe.runIf(ok)('runc backend', () => {
  let registry: TestRegistry;
  let shim: TestShim;
  let image: string;
  let pod: string;
  let podCfg: cri.PodSandboxConfig;
  const before = ok ? hostFacts() : undefined;

  beforeAll(async () => {
    const built = buildBusyboxImages(tempDir('kemu-cri-images-'));
    registry = await startRegistry();
    await registry.push(built.layout, 'v1', 'tools/busybox:v1');
    image = `${registry.host}/tools/busybox:v1`;
    shim = await startTestShim({ backend: 'runc', syntheticImages: false, runc: { netnsPrefix: `kemu-rc${process.pid}-` } });
    const confDir = path.join(shim.dir, 'net.d');
    fs.mkdirSync(confDir);
    fs.writeFileSync(path.join(confDir, '10-lo.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'lo-only', plugins: [{ type: 'loopback' }] }));
    await shim.restart({ cni: { confDir, binDirs: ['/usr/lib/cni'], cacheDir: path.join(shim.dir, 'cni-cache') } });
    await shim.icall('PullImage', { image: { image } });
    podCfg = podConfig(shim.dir, { hostname: 'runc-pod' });
    pod = (await shim.call('RunPodSandbox', { config: podCfg })).podSandboxId!;
  }, 60_000);

  afterAll(async () => {
    if (shim) {
      for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) {
        await shim.call('StopPodSandbox', { podSandboxId: p.id });
        await shim.call('RemovePodSandbox', { podSandboxId: p.id });
      }
      await shim.close();
    }
    await registry?.stop();
  });

  let seq = 0;
  async function run(over: Partial<cri.ContainerConfig>, waitExit = false): Promise<{ id: string; log: () => string }> {
    const name = `c${++seq}`;
    const id = (
      await shim.call('CreateContainer', {
        podSandboxId: pod,
        config: containerConfig({ image: { image }, metadata: { name, attempt: 0 }, logPath: `${name}.log`, command: [], ...over }),
        sandboxConfig: podCfg,
      })
    ).containerId!;
    await shim.call('StartContainer', { containerId: id });
    const logFile = path.join(podCfg.logDirectory!, `${name}.log`);
    const log = () => parseCriLog(fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '').map((r) => r.text).join('\n');
    if (waitExit) {
      await waitFor(async () => (await shim.call('ContainerStatus', { containerId: id })).status!.state === cri.ContainerState.CONTAINER_EXITED || undefined, 20_000, 'exit');
    }
    return { id, log };
  }

  const exec = async (id: string, cmd: string[]) => {
    const r = await shim.call('ExecSync', { containerId: id, cmd, timeout: 10 });
    return { stdout: Buffer.from(r.stdout ?? []), exitCode: r.exitCode };
  };

  it("runs the image's entrypoint and cmd as its user, in its workdir, with its env", async () => {
    const c = await run({});
    await waitFor(() => (c.log().includes('hello from app hi') ? true : undefined), 10_000, 'the greeting in the log');
    const st = await shim.call('ContainerStatus', { containerId: c.id });
    expect(st.status!.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    const id = await exec(c.id, ['id']);
    expect(id.stdout.toString()).toMatch(/uid=1000\(app\) gid=1000\(app\) groups=1000\(app\),2000\(extra\)/);
    expect((await exec(c.id, ['pwd'])).stdout.toString().trim()).toBe('/home/app');
    expect((await exec(c.id, ['hostname'])).stdout.toString().trim()).toBe('runc-pod');
    expect((await exec(c.id, ['cat', '/etc/hostname'])).stdout.toString().trim()).toBe('runc-pod');
    const stats = await shim.call('ContainerStats', { containerId: c.id });
    expect(Number(stats.stats!.memory!.workingSetBytes!.value)).toBeGreaterThan(0);
    await shim.call('StopContainer', { containerId: c.id, timeout: 2 });
    const stopped = await shim.call('ContainerStatus', { containerId: c.id });
    expect(stopped.status!.state).toBe(cri.ContainerState.CONTAINER_EXITED);
    // `exec sleep` made sleep the pid-1 of its namespace, which ignores SIGTERM: killed after the grace period.
    expect(stopped.status!.exitCode).toBe(137);
  });

  it('a root container that attacks / leaves the host unchanged', async () => {
    const c = await run(
      {
        command: ['/bin/sh', '-c', 'chmod 400 /; touch /evil /etc/evil; rm -rf /bin/ls /etc/passwd; mkdir -p /root/x; echo attacked; ls -ld /'],
        linux: { securityContext: { runAsUser: { value: 0 } } },
      },
      true,
    );
    expect(c.log()).toContain('attacked');
    expect(c.log()).toMatch(/^dr-------- /m); // it did change its own root
    expect(hostFacts()).toEqual(before);
    expect(fs.existsSync('/evil') || fs.existsSync('/etc/evil')).toBe(false);
    // The image is untouched too: the next container still has /bin/ls and /etc/passwd.
    const next = await run({ command: ['/bin/sh', '-c', 'ls /bin/ls && cat /etc/passwd | head -1'] }, true);
    expect(next.log()).toContain('/bin/ls');
    expect(next.log()).toContain('root:x:0:0');
  });

  it('a read-only root filesystem refuses writes', async () => {
    const c = await run({ command: ['/bin/sh', '-c', 'touch /x 2>&1; echo rc=$?'], linux: { securityContext: { readonlyRootfs: true, runAsUser: { value: 0 } } } }, true);
    expect(c.log()).toMatch(/Read-only file system/);
    expect(c.log()).toContain('rc=1');
  });

  it('applies capabilities: the default set, and none after drop ALL', async () => {
    const def = await run({ command: ['/bin/sh', '-c', 'grep CapEff /proc/self/status'], linux: { securityContext: { runAsUser: { value: 0 } } } }, true);
    expect(def.log()).toMatch(/CapEff:\s+00000000a80425fb/);
    const none = await run(
      { command: ['/bin/sh', '-c', 'grep CapEff /proc/self/status; chown 1000 /tmp 2>&1'], linux: { securityContext: { runAsUser: { value: 0 }, capabilities: { dropCapabilities: ['ALL'] } } } },
      true,
    );
    expect(none.log()).toMatch(/CapEff:\s+0000000000000000/);
    expect(none.log()).toMatch(/Operation not permitted/);
  });

  it('the RuntimeDefault seccomp profile blocks what upstream blocks even with the capability; Unconfined does not', async () => {
    const caps = { addCapabilities: ['SYS_ADMIN'] };
    const confined = await run(
      { command: ['/bin/sh', '-c', 'grep Seccomp: /proc/self/status; swapon /etc/passwd 2>&1'], linux: { securityContext: { runAsUser: { value: 0 }, capabilities: caps, seccomp: { profileType: cri.SecurityProfile_ProfileType.RuntimeDefault } } } },
      true,
    );
    expect(confined.log()).toMatch(/Seccomp:\s+2/);
    expect(confined.log()).toMatch(/Operation not permitted/);
    const open = await run(
      { command: ['/bin/sh', '-c', 'grep Seccomp: /proc/self/status; swapon /etc/passwd 2>&1'], linux: { securityContext: { runAsUser: { value: 0 }, capabilities: caps, seccomp: { profileType: cri.SecurityProfile_ProfileType.Unconfined } } } },
      true,
    );
    expect(open.log()).toMatch(/Seccomp:\s+0/);
    expect(open.log()).toMatch(/Invalid argument/);
  });

  it('masked paths read empty, read-only paths refuse writes, no_new_privs is set', async () => {
    const c = await run(
      {
        command: ['/bin/sh', '-c', 'wc -c < /proc/timer_list; echo 1 > /proc/sys/kernel/domainname 2>&1; grep NoNewPrivs /proc/self/status'],
        linux: { securityContext: { runAsUser: { value: 0 }, noNewPrivs: true } },
      },
      true,
    );
    expect(c.log()).toMatch(/^0$/m);
    expect(c.log()).toMatch(/Read-only file system/);
    expect(c.log()).toMatch(/NoNewPrivs:\s+1/);
  });

  it('run_as_username, run_as_group and supplemental groups; an unknown user is INVALID_ARGUMENT', async () => {
    const c = await run({ command: ['id'], linux: { securityContext: { runAsUsername: 'app', runAsGroup: { value: 3000 }, supplementalGroups: [4000] } } }, true);
    expect(c.log()).toMatch(/uid=1000\(app\) gid=3000 groups=.*2000\(extra\).*4000/);
    const strict = await run({ command: ['id', '-G'], linux: { securityContext: { runAsUsername: 'app', supplementalGroups: [4000], supplementalGroupsPolicy: cri.SupplementalGroupsPolicy.Strict } } }, true);
    expect(strict.log().trim().split(' ').sort()).toEqual(['1000', '4000']); // not the image's group 2000
    expect((await shim.call('Status', {})).features?.supplementalGroupsPolicy).toBe(true);
    const err = await grpcError(
      shim.call('CreateContainer', { podSandboxId: pod, config: containerConfig({ image: { image }, metadata: { name: 'nouser', attempt: 0 }, linux: { securityContext: { runAsUsername: 'ghost' } } }), sandboxConfig: podCfg }),
    );
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain('ghost');
  });

  it('mounts a host path (read-only when asked) and refuses a non-namespaced sysctl', async () => {
    const host = path.join(shim.dir, 'shared');
    fs.mkdirSync(host);
    fs.writeFileSync(path.join(host, 'f'), 'from host\n');
    const c = await run({ command: ['/bin/sh', '-c', 'cat /data/f; touch /data/g 2>&1'], mounts: [{ containerPath: '/data', hostPath: host, readonly: true }] }, true);
    expect(c.log()).toContain('from host');
    expect(c.log()).toMatch(/Read-only file system/);
    const bad = await grpcError(shim.call('RunPodSandbox', { config: podConfig(shim.dir, { linux: { sysctls: { 'kernel.panic': '1' } } }) }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('exec with stdin, attach, port-forward into the pod, and pod stats (the crictl exec/attach/port-forward/stats steps)', async () => {
    const web = await run({ command: ['httpd', '-f', '-p', '8080', '-h', '/www'] });
    const talker = await run({ command: ['sh', '-c', 'while true; do echo tick; sleep 0.2; done'] });
    const { url } = await shim.call('Exec', { containerId: talker.id, cmd: ['cat'], stdin: true, stdout: true, stderr: true });
    const r = await wsStream(url!, 'v5.channel.k8s.io', 'echoed through cat\n', true);
    expect(r.stdout).toBe('echoed through cat\n');
    expect(JSON.parse(r.error)).toEqual({ metadata: {}, status: 'Success' });
    const { url: failUrl } = await shim.call('Exec', { containerId: talker.id, cmd: ['sh', '-c', 'echo oops >&2; exit 4'], stdout: true, stderr: true });
    const f = await wsStream(failUrl!, 'v4.channel.k8s.io');
    expect(f.stderr).toBe('oops\n');
    expect(JSON.parse(f.error)).toMatchObject({ status: 'Failure', details: { causes: [{ reason: 'ExitCode', message: '4' }] } });

    const { url: attachUrl } = await shim.call('Attach', { containerId: talker.id, stdout: true, stderr: true });
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

    await waitFor(async () => (await exec(web.id, ['sh', '-c', 'grep -qi ":1F90 " /proc/net/tcp /proc/net/tcp6'])).exitCode === 0 || undefined, 10_000, 'httpd to listen');
    const { url: pfUrl } = await shim.call('PortForward', { podSandboxId: pod, port: [8080] });
    const body = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(`${pfUrl!.replace(/^http/, 'ws')}?port=8080`, 'v4.channel.k8s.io');
      let data = '';
      const chans = new Set<number>();
      ws.on('message', (raw: Buffer) => {
        const ch = raw[0];
        if (!chans.has(ch)) {
          chans.add(ch);
          if (chans.size === 2) ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('GET /index.html HTTP/1.0\r\n\r\n')]));
          return;
        }
        if (ch === 0) data += raw.subarray(1).toString();
      });
      ws.on('close', () => resolve(data));
      ws.on('error', reject);
    });
    expect(body).toMatch(/^HTTP\/1\.[01] 200/);
    expect(body).toContain('hello from the registry image');

    const podStats = await shim.call('PodSandboxStats', { podSandboxId: pod });
    expect(podStats.stats!.linux!.containers!.length).toBeGreaterThanOrEqual(2);
    expect(Number(podStats.stats!.linux!.process!.processCount!.value)).toBeGreaterThanOrEqual(2);
    for (const c of [web, talker]) await shim.call('StopContainer', { containerId: c.id, timeout: 0 });
  });

  it('applies and updates memory and CPU limits in the cgroup, and reports an OOM kill as OOMKilled', async () => {
    const c = await run({ command: ['sleep', '3600'], linux: { resources: { memoryLimitInBytes: 64 * 1024 * 1024, cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000 } } });
    const verbose = JSON.parse((await shim.call('ContainerStatus', { containerId: c.id, verbose: true })).info!.info);
    expect(verbose.pid).toBeGreaterThan(0);
    const cgroupOf = (ctl: string) => fs.readFileSync(`/proc/${verbose.pid}/cgroup`, 'utf8').split('\n').find((l) => l.split(':')[1]?.split(',').includes(ctl))!.split(':')[2];
    const memDir = path.join('/sys/fs/cgroup/memory', cgroupOf('memory'));
    const v1 = fs.existsSync(path.join(memDir, 'memory.limit_in_bytes'));
    if (v1) {
      expect(Number(fs.readFileSync(path.join(memDir, 'memory.limit_in_bytes'), 'utf8'))).toBe(64 * 1024 * 1024);
      expect(fs.readFileSync(path.join('/sys/fs/cgroup/cpu', cgroupOf('cpu'), 'cpu.shares'), 'utf8').trim()).toBe('512');
      expect(fs.readFileSync(path.join('/sys/fs/cgroup/cpu', cgroupOf('cpu'), 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('50000');
    }
    await shim.call('UpdateContainerResources', { containerId: c.id, linux: { memoryLimitInBytes: 96 * 1024 * 1024, cpuShares: 256 } });
    if (v1) {
      expect(Number(fs.readFileSync(path.join(memDir, 'memory.limit_in_bytes'), 'utf8'))).toBe(96 * 1024 * 1024);
      expect(fs.readFileSync(path.join('/sys/fs/cgroup/cpu', cgroupOf('cpu'), 'cpu.shares'), 'utf8').trim()).toBe('256');
    }
    await shim.call('StopContainer', { containerId: c.id, timeout: 0 });

    const hog = await run({ command: ['sh', '-c', 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo survived'], linux: { resources: { memoryLimitInBytes: 32 * 1024 * 1024 } } }, true);
    const st = (await shim.call('ContainerStatus', { containerId: hog.id })).status!;
    expect(st.reason).toBe('OOMKilled');
    expect(st.exitCode).toBe(137);
    expect(hog.log()).not.toContain('survived');
  });

  it('keeps running containers across a shim restart, follows their output again, and can still stop them', async () => {
    const c = await run({ command: ['sleep', '3600'] });
    await shim.restart();
    const st = (await shim.call('ContainerStatus', { containerId: c.id })).status!;
    expect(st.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect((await exec(c.id, ['echo', 'still here'])).stdout.toString()).toBe('still here\n');
    // Its output is followed again: what it writes after the restart reaches its log.
    await exec(c.id, ['sh', '-c', 'echo written-after-restart > /proc/1/fd/1']);
    await waitFor(() => (c.log().includes('written-after-restart') ? true : undefined), 5000, 'output after the restart in the log');
    await shim.call('StopContainer', { containerId: c.id, timeout: 0 });
    await waitFor(async () => (await shim.call('ContainerStatus', { containerId: c.id })).status!.state === cri.ContainerState.CONTAINER_EXITED || undefined, 10_000, 'exit after restart');
    expect((await shim.call('ContainerStatus', { containerId: c.id })).status!.exitCode).toBe(137);
  });

  it('ListContainers, RemoveContainer, and RemoveImage once nothing uses the image', async () => {
    const inUse = await grpcError(shim.icall('RemoveImage', { image: { image } }));
    expect(inUse.code).toBe(grpc.status.FAILED_PRECONDITION);
    for (const c of (await shim.call('ListContainers', {})).containers ?? []) {
      await shim.call('RemoveContainer', { containerId: c.id });
    }
    expect(fs.readdirSync(path.join(shim.stateDir, 'bundles'))).toEqual([]);
    await shim.icall('RemoveImage', { image: { image } });
    expect((await shim.icall('ListImages', {})).images ?? []).toEqual([]);
  });

  it('after everything above, the host is as the suite found it: / mode and contents, /etc, and no pod left', async () => {
    for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) {
      await shim.call('StopPodSandbox', { podSandboxId: p.id });
      await shim.call('RemovePodSandbox', { podSandboxId: p.id });
    }
    expect(hostFacts()).toEqual(before);
    expect(fs.readdirSync('/var/run/netns').filter((n) => n.startsWith(`kemu-rc${process.pid}-`))).toEqual([]);
  });
});
