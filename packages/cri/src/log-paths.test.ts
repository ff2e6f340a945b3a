// Container logs on the sim backend: the log file exists as soon as StartContainer returns, and neither a
// log_directory nor a log file can be led out of the allowed log roots by a symbolic link, whether the
// link is there at RunPodSandbox or planted before StartContainer creates the missing directories.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { cri } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerConfig, grpcError, podConfig, startTestShim, type TestShim, tempDir } from './test-util.js';

let shim: TestShim;
let root: string;
let outside: string;

beforeAll(async () => {
  const dir = fs.realpathSync(tempDir('kemu-cri-logs-'));
  root = path.join(dir, 'pods');
  outside = path.join(dir, 'elsewhere');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  shim = await startTestShim({ allowedLogRoots: [root] }, dir);
  await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
});

afterAll(async () => {
  await shim?.close();
});

const filesUnder = (d: string): string[] =>
  fs.readdirSync(d, { recursive: true, encoding: 'utf8' }).sort();

async function createContainer(pod: { id: string; config: cri.PodSandboxConfig }, over: Partial<cri.ContainerConfig> = {}) {
  const { containerId } = await shim.call('CreateContainer', { podSandboxId: pod.id, config: containerConfig(over), sandboxConfig: pod.config });
  return containerId!;
}

async function runPod(logDirectory: string) {
  const config = podConfig(shim.dir, { logDirectory });
  const { podSandboxId } = await shim.call('RunPodSandbox', { config });
  return { id: podSandboxId!, config };
}

describe('container log files', () => {
  it('exist as soon as StartContainer returns, before the container writes anything', async () => {
    const pod = await runPod(path.join(root, 'quiet'));
    const cid = await createContainer(pod, { command: ['sleep', '3600'] });
    const { status } = await shim.call('ContainerStatus', { containerId: cid });
    expect(fs.existsSync(status!.logPath!)).toBe(false);
    await shim.call('StartContainer', { containerId: cid });
    expect(fs.statSync(status!.logPath!).isFile()).toBe(true);
    expect(fs.readFileSync(status!.logPath!, 'utf8')).toBe('');
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('refuses a log_directory that a symbolic link under the log root leads outside, creating nothing', async () => {
    fs.symlinkSync(outside, path.join(root, 'escape'));
    const before = (await shim.call('ListPodSandbox', {})).items!.length;
    for (const logDirectory of [path.join(root, 'escape'), path.join(root, 'escape', 'ns_pod_uid')]) {
      const err = await grpcError(runPod(logDirectory));
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain('symbolic link');
      expect(err.details).toContain(logDirectory);
    }
    expect((await shim.call('ListPodSandbox', {})).items!.length).toBe(before);
    expect(filesUnder(outside)).toEqual([]);
  });

  it('refuses to create a log through a link planted after RunPodSandbox, writing nothing outside', async () => {
    const parent = path.join(root, 'later');
    const pod = await runPod(path.join(parent, 'ns_pod_uid'));
    const cid = await createContainer(pod, { command: ['echo', 'secret'] });
    // The sandbox's log directory does not exist yet; a link now takes the place of its parent.
    fs.symlinkSync(outside, parent);
    const err = await grpcError(shim.call('StartContainer', { containerId: cid }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/failed to create container log: .*symbolic link/);
    expect(filesUnder(outside)).toEqual([]);
    const { status } = await shim.call('ContainerStatus', { containerId: cid });
    expect(status).toMatchObject({ reason: 'StartError' });
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('refuses a log file that is a symbolic link, leaving its target untouched', async () => {
    const pod = await runPod(path.join(root, 'linked-file'));
    const cid = await createContainer(pod, { command: ['echo', 'secret'], logPath: '0.log' });
    fs.mkdirSync(pod.config.logDirectory!, { recursive: true });
    fs.writeFileSync(path.join(outside, 'victim'), 'keep\n');
    fs.symlinkSync(path.join(outside, 'victim'), path.join(pod.config.logDirectory!, '0.log'));
    const err = await grpcError(shim.call('StartContainer', { containerId: cid }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fs.readFileSync(path.join(outside, 'victim'), 'utf8')).toBe('keep\n');
    fs.rmSync(path.join(outside, 'victim'));
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });
});
