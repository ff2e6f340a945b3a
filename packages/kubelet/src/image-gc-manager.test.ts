import { createCri, type CriInstance } from '@kemu/cri';
import { cri, inProcessApi } from '@kemu/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { ImageGCManager } from './image-gc-manager.js';

let instance: CriInstance;
afterEach(async () => instance?.close());

async function runtimeWithImages() {
  instance = await createCri({ backend: 'sim', syntheticImages: true, streaming: false, podCidr: '10.244.1.0/24' });
  const runtime = inProcessApi(cri.RuntimeServiceService, instance.runtimeService);
  const images = inProcessApi(cri.ImageServiceService, instance.imageService);
  for (const image of ['busybox:1', 'nginx:1', 'redis:1']) await images.PullImage({ image: { image } });
  // A container (even a stopped one) keeps its image in use.
  const sandboxConfig = { metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 }, logDirectory: '', linux: {} };
  const sb = await runtime.RunPodSandbox({ config: sandboxConfig });
  await runtime.CreateContainer({ podSandboxId: sb.podSandboxId, config: { metadata: { name: 'c', attempt: 0 }, image: { image: 'nginx:1' } }, sandboxConfig });
  const tags = async () => (await images.ListImages({})).images!.flatMap((i) => i.repoTags ?? []).sort();
  return { runtime, images, tags };
}

describe('image garbage collection', () => {
  it('does nothing below the high threshold, and frees unused images least recently used first above it', async () => {
    const { runtime, images, tags } = await runtimeWithImages();
    const used = Number((await images.ImageFsInfo({})).imageFilesystems![0].usedBytes!.value);
    let capacity = used * 10; // 10% used
    const removed: string[] = [];
    const gc = new ImageGCManager(images, runtime, { highPercent: 85, lowPercent: 80, minAgeMs: 0, capacityBytes: () => capacity, onRemoved: (i) => removed.push(...(i.repoTags ?? [])) });
    expect(await gc.garbageCollect()).toBe(0);
    expect(await tags()).toHaveLength(3);
    capacity = used; // 100% used: free down to 80%
    expect(await gc.garbageCollect()).toBeGreaterThan(0);
    expect(removed.length).toBeGreaterThanOrEqual(1);
    expect(removed).not.toContain('docker.io/library/nginx:1');
    expect(await tags()).toContain('docker.io/library/nginx:1');
  });

  it('removes every unused image for the eviction manager, and keeps the one in use', async () => {
    const { runtime, images, tags } = await runtimeWithImages();
    const gc = new ImageGCManager(images, runtime, { highPercent: 85, lowPercent: 80, minAgeMs: 0, capacityBytes: () => 1 });
    await gc.deleteUnusedImages();
    expect(await tags()).toEqual(['docker.io/library/nginx:1']);
  });

  it('keeps images younger than the minimum age', async () => {
    const { runtime, images, tags } = await runtimeWithImages();
    let now = 1_000_000;
    const gc = new ImageGCManager(images, runtime, { highPercent: 85, lowPercent: 80, minAgeMs: 120_000, capacityBytes: () => 1, now: () => now });
    await gc.deleteUnusedImages();
    expect(await tags()).toHaveLength(3);
    now += 120_000;
    await gc.deleteUnusedImages();
    expect(await tags()).toEqual(['docker.io/library/nginx:1']);
  });
});
