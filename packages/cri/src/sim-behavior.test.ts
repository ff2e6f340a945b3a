// The sim runtime's behaviour model: parsing of common commands, and containers that run them.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCriLog } from './log-writer.js';
import { runSimProgram, simProgram } from './sim-behavior.js';
import { containerConfig, podConfig, startTestShim, tempDir, type TestShim, waitFor } from './test-util.js';

describe('simProgram', () => {
  it('models echo, printf, sleep, exit, cat, env and sh -c sequences', () => {
    expect(simProgram(['echo', 'done'], [])).toEqual([{ join: ';', steps: [{ op: 'write', text: 'done\n' }] }]);
    expect(simProgram(['/bin/echo'], ['-n', 'a', 'b'])).toEqual([{ join: ';', steps: [{ op: 'write', text: 'a b' }] }]);
    expect(simProgram(['sleep', 'infinity'], [])?.[0].steps).toEqual([{ op: 'sleep', seconds: Number.POSITIVE_INFINITY }]);
    expect(simProgram(['sleep'], ['2.5'])?.[0].steps).toEqual([{ op: 'sleep', seconds: 2.5 }]);
    expect(simProgram(['printf', '%s=%d\\n', 'a', '1', 'b', '2'], [])?.[0].steps).toEqual([{ op: 'write', text: 'a=1\nb=2\n' }]);
    expect(simProgram(['sh', '-c'], ['echo "hello  world"; sleep 1 && exit 3 || echo \'never\'\ncat /etc/x'])).toEqual([
      { join: ';', steps: [{ op: 'write', text: 'hello  world\n' }] },
      { join: ';', steps: [{ op: 'sleep', seconds: 1 }] },
      { join: '&&', steps: [{ op: 'exit', code: 3 }] },
      { join: '||', steps: [{ op: 'write', text: 'never\n' }] },
      { join: ';', steps: [{ op: 'cat', files: ['/etc/x'] }] },
    ]);
    expect(simProgram(['/bin/sh', '-c', 'exec sleep 10'], [])?.[0].steps).toEqual([{ op: 'sleep', seconds: 10 }]);
  });

  it('leaves anything else unmodelled (it runs forever)', () => {
    for (const [cmd, args] of [
      [[], []],
      [['nginx', '-g', 'daemon off;'], []],
      [['sh', '-c', 'while true; do echo tick; sleep 1; done'], []],
      [['sh', '-c', 'echo $HOME'], []],
      [['sh', '-c', 'echo a | tee b'], []],
      [['sh', '-c', 'echo a > /tmp/x'], []],
      [['sh', '-c', "echo 'unterminated"], []],
      [['sh'], []],
    ] as [string[], string[]][]) {
      expect(simProgram(cmd, args), cmd.join(' ')).toBeUndefined();
    }
  });

  it('runs a program to its status, honouring && and ||', async () => {
    const out: string[] = [];
    const io = {
      write: (_s: 'stdout' | 'stderr', t: string | Buffer) => out.push(t.toString()),
      cat: (f: string) => (f === '/ok' ? { ok: true as const, data: Buffer.from('content') } : { ok: false as const, error: 'No such file or directory' }),
      env: () => 'A=1',
      sleep: async () => {},
    };
    expect(await runSimProgram(simProgram(['sh', '-c', 'false && echo no || echo yes; cat /ok /missing'], [])!, io)).toBe(1);
    expect(out).toEqual(['yes\n', 'content', 'cat: /missing: No such file or directory\n']);
    expect(await runSimProgram(simProgram(['sh', '-c', 'true; env; exit 300'], [])!, io)).toBe(44);
  });
});

describe('containers that run a modelled command', () => {
  let shim: TestShim;
  beforeAll(async () => {
    shim = await startTestShim({});
    await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
  });
  afterAll(async () => {
    await shim?.close();
  });

  async function run(over: Partial<cri.ContainerConfig>) {
    const config = podConfig(shim.dir, { metadata: { name: `p-${Math.random().toString(36).slice(2, 8)}`, namespace: 'default', uid: `${Math.random()}`, attempt: 0 } });
    const { podSandboxId } = await shim.call('RunPodSandbox', { config });
    const { containerId } = await shim.call('CreateContainer', { podSandboxId, config: containerConfig(over), sandboxConfig: config });
    await shim.call('StartContainer', { containerId });
    return containerId!;
  }
  const status = async (id: string) => (await shim.call('ContainerStatus', { containerId: id })).status!;
  const exited = (id: string) => waitFor(async () => ((await status(id)).state === cri.ContainerState.CONTAINER_EXITED ? status(id) : undefined));

  it('a Job-style `echo done` logs "done" and completes', async () => {
    const id = await run({ command: ['echo'], args: ['done'] });
    const st = await exited(id);
    expect(st).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(parseCriLog(fs.readFileSync(st.logPath!, 'utf8')).map((r) => r.text)).toEqual(['done']);
  });

  it('sh -c sequences end with their exit status, and env comes from the container config', async () => {
    const id = await run({ command: ['sh', '-c', 'echo start; env; exit 7'], envs: [{ key: 'GREETING', value: 'hi' }] });
    const st = await exited(id);
    expect(st).toMatchObject({ exitCode: 7, reason: 'Error' });
    expect(parseCriLog(fs.readFileSync(st.logPath!, 'utf8')).map((r) => r.text)).toEqual(['start', 'GREETING=hi']);
  });

  it('ExecSync runs sh -c sequences through the model: files, env and exit status', async () => {
    const id = await run({ command: ['sleep', 'infinity'], envs: [{ key: 'MODE', value: 'test' }] });
    const r = await shim.call('ExecSync', { containerId: id, cmd: ['sh', '-c', 'echo start; cat /etc/hostname; env && exit 5'], timeout: 5 });
    expect(Buffer.from(r.stdout ?? []).toString()).toMatch(/^start\n.*\nMODE=test\n$/);
    expect(r.exitCode).toBe(5);
    const slow = await shim.call('ExecSync', { containerId: id, cmd: ['sh', '-c', 'echo a; sleep 10'], timeout: 1 }).catch((e) => e);
    expect(slow.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await shim.call('StopContainer', { containerId: id, timeout: 0 });
  });

  it('cat through ExecSync returns a mounted binary file byte for byte', async () => {
    const dir = tempDir('kemu-sim-bin-');
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    fs.writeFileSync(path.join(dir, 'blob'), bytes);
    const id = await run({ command: ['sleep', 'infinity'], mounts: [{ containerPath: '/data', hostPath: dir, readonly: true }] });
    const r = await shim.call('ExecSync', { containerId: id, cmd: ['cat', '/data/blob'], timeout: 5 });
    expect(Buffer.from(r.stdout ?? []).equals(bytes)).toBe(true);
    expect(r.exitCode).toBe(0);
    const missing = await shim.call('ExecSync', { containerId: id, cmd: ['cat', '/data/nope'], timeout: 5 });
    expect({ stderr: Buffer.from(missing.stderr ?? []).toString(), exitCode: missing.exitCode }).toEqual({ stderr: 'cat: /data/nope: No such file or directory\n', exitCode: 1 });
    await shim.call('StopContainer', { containerId: id, timeout: 0 });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sleep keeps it running until stopped; annotations still override the model', async () => {
    const sleeper = await run({ command: ['sleep', 'infinity'] });
    const scripted = await run({ command: ['echo', 'ignored'], annotations: { 'kemu.io/sim-behavior': 'run' } });
    await new Promise((r) => setTimeout(r, 50));
    expect((await status(sleeper)).state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect((await status(scripted)).state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    await shim.call('StopContainer', { containerId: sleeper, timeout: 0 });
    expect(await exited(sleeper)).toMatchObject({ exitCode: 143 });
  });
});
