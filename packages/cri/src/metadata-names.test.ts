// Pod and container metadata become the names the runtime reserves (and kubelet builds log paths from
// them): a field with "/", a bare "." or "..", control bytes or an absurd length is INVALID_ARGUMENT with a
// message naming the field, and nothing is created or reserved.
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerConfig, grpcError, podConfig, startTestShim, type TestShim } from './test-util.js';

let shim: TestShim;

beforeAll(async () => {
  shim = await startTestShim();
  await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
});

afterAll(async () => {
  await shim?.close();
});

const BAD: [string, RegExp][] = [
  ['a/b', /must not contain "\/"/],
  ['../../etc', /must not contain "\/"/],
  ['..', /must not be "\.\."/],
  ['.', /must not be "\."/],
  ['x'.repeat(100_000), /is 100000 bytes long; at most 253 are allowed/],
  ['tab\there', /control characters/],
];

describe('metadata names', () => {
  it.each(['name', 'namespace', 'uid'] as const)('refuses a bad sandbox %s and creates nothing', async (field) => {
    const pods = (await shim.call('ListPodSandbox', {})).items!.length;
    for (const [value, message] of BAD) {
      const config = podConfig(shim.dir);
      config.metadata = { ...config.metadata!, [field]: value };
      const err = await grpcError(shim.call('RunPodSandbox', { config }));
      expect(err.code, value.slice(0, 20)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain(`sandbox metadata ${field}`);
      expect(err.details).toMatch(message);
      expect(err.details.length).toBeLessThan(500);
      expect(fs.existsSync(config.logDirectory!)).toBe(false);
    }
    expect((await shim.call('ListPodSandbox', {})).items!.length).toBe(pods);
    // The names were not left reserved: a good pod with the same fields runs.
    const ok = await shim.call('RunPodSandbox', { config: podConfig(shim.dir) });
    await shim.call('RemovePodSandbox', { podSandboxId: ok.podSandboxId });
  });

  it('refuses a bad container name and creates nothing', async () => {
    const config = podConfig(shim.dir);
    const { podSandboxId } = await shim.call('RunPodSandbox', { config });
    for (const [value, message] of BAD) {
      const err = await grpcError(
        shim.call('CreateContainer', { podSandboxId, config: containerConfig({ metadata: { name: value } }), sandboxConfig: config }),
      );
      expect(err.code, value.slice(0, 20)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain('container metadata name');
      expect(err.details).toMatch(message);
    }
    expect((await shim.call('ListContainers', { filter: { podSandboxId } })).containers).toEqual([]);
    await shim.call('RemovePodSandbox', { podSandboxId });
  });
});
