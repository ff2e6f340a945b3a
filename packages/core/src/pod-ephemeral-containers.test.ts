import { describe, expect, it } from 'vitest';
import type { Pod } from './api-core.js';
import { InvalidError } from './errors.js';
import { createMemoryStore } from './store-memory.js';

const pod = (): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default' },
  spec: { containers: [{ name: 'app', image: 'nginx:1.25' }] },
});

describe('pods/ephemeralcontainers', () => {
  it('adds an ephemeral container through the subresource only, and keeps it', async () => {
    const store = await createMemoryStore();
    const created = await store.create(pod());
    const debug = { name: 'debugger', image: 'busybox:1.36', targetContainerName: 'app', stdin: true, tty: true };
    const viaUpdate = await store.update({ ...created, spec: { ...created.spec, ephemeralContainers: [debug] } }).catch((e) => e);
    expect(viaUpdate).toBeInstanceOf(InvalidError);
    expect(viaUpdate.message).toContain('spec: Forbidden: pod updates may not change fields');

    const added = await store.update({ ...created, spec: { ...created.spec, ephemeralContainers: [debug] } }, { subresource: 'ephemeralcontainers' });
    expect(added.spec.ephemeralContainers).toEqual([{ ...debug, imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' }]);
    expect((await store.get('Pod', 'default', 'web')).spec.ephemeralContainers?.[0].name).toBe('debugger');
    // Other spec changes sent along are ignored by the subresource.
    const again = await store.update({ ...added, spec: { ...added.spec, activeDeadlineSeconds: 5 } }, { subresource: 'ephemeralcontainers' });
    expect(again.spec.activeDeadlineSeconds).toBeUndefined();
    await store.close();
  });

  it('refuses removing or changing one, and fields an ephemeral container may not have', async () => {
    const store = await createMemoryStore();
    const created = await store.create(pod());
    const one = await store.update(
      { ...created, spec: { ...created.spec, ephemeralContainers: [{ name: 'dbg', image: 'busybox:1.36' }] } },
      { subresource: 'ephemeralcontainers' },
    );
    const msg = (p: Promise<unknown>) => p.then(() => '', (e: Error) => e.message);
    expect(await msg(store.update({ ...one, spec: { ...one.spec, ephemeralContainers: [] } }, { subresource: 'ephemeralcontainers' }))).toContain(
      'spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be removed',
    );
    const changed = [{ ...one.spec.ephemeralContainers![0], image: 'alpine' }];
    expect(await msg(store.update({ ...one, spec: { ...one.spec, ephemeralContainers: changed } }, { subresource: 'ephemeralcontainers' }))).toContain(
      'existing ephemeral containers "dbg" may not be changed',
    );
    const bad = [
      ...one.spec.ephemeralContainers!,
      { name: 'app', image: 'busybox', ports: [{ containerPort: 80 }] },
      { name: 'x', image: 'busybox', targetContainerName: 'nope', lifecycle: { preStop: { exec: { command: ['true'] } } } },
    ];
    const m = await msg(store.update({ ...one, spec: { ...one.spec, ephemeralContainers: bad } }, { subresource: 'ephemeralcontainers' }));
    expect(m).toContain('spec.ephemeralContainers[1].name: Duplicate value: "app"');
    expect(m).toContain('spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container');
    expect(m).toContain('spec.ephemeralContainers[2].lifecycle: Forbidden: cannot be set for an Ephemeral Container');
    expect(m).toContain('spec.ephemeralContainers[2].targetContainerName: Not found: "nope"');
    // kubectl debug sends a strategic merge patch to the subresource.
    const patched = await store.patch(
      'Pod',
      'default',
      'web',
      { spec: { ephemeralContainers: [{ name: 'debugger-2', image: 'busybox:1.36' }] } },
      'strategic',
      { subresource: 'ephemeralcontainers' },
    );
    expect(patched.spec.ephemeralContainers?.map((c) => c.name)).toEqual(['dbg', 'debugger-2']);
    const cm = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' } });
    expect(await msg(store.update(cm, { subresource: 'ephemeralcontainers' }))).toBe('configmaps has no ephemeralcontainers subresource');
    await store.close();
  });
});
