import { cri } from '@kemu/proto';
import { describe, expect, it } from 'vitest';
import { POD_UID_LABEL } from './labels.js';
import { RuntimeCache } from './runtime-cache.js';
import type { RuntimeApi } from './types.js';

const UID = 'u1';
const { CONTAINER_RUNNING, CONTAINER_EXITED } = cri.ContainerState;

/** A runtime with one sandbox whose containers the test sets; it counts lists and can hold one back. */
function fakeRuntime() {
  const state = { containers: [{ id: 'c1', state: CONTAINER_RUNNING }] as Array<{ id: string; state: number }>, sandbox: true, lists: 0 };
  let hold: Promise<void> | undefined;
  const runtime = {
    ListPodSandbox: async () => ({ items: state.sandbox ? [{ id: 's1', state: cri.PodSandboxState.SANDBOX_READY, labels: { [POD_UID_LABEL]: UID } }] : [] }),
    ListContainers: async () => {
      state.lists++;
      const snapshot = state.containers.map((c) => ({ ...c, podSandboxId: 's1', labels: { [POD_UID_LABEL]: UID } }));
      if (hold) await hold;
      return { containers: snapshot };
    },
  } as unknown as RuntimeApi;
  const holdNext = () => {
    let release!: () => void;
    hold = new Promise((r) => (release = r));
    return () => {
      hold = undefined;
      release();
    };
  };
  return { runtime, state, holdNext };
}

const exited = (id: string): cri.ContainerEventResponse => ({
  containerId: id,
  containerEventType: cri.ContainerEventType.CONTAINER_STOPPED_EVENT,
  podSandboxStatus: { id: 's1', metadata: { uid: UID } },
  containersStatuses: [{ id, state: CONTAINER_EXITED }],
});

describe('RuntimeCache.current', () => {
  it('answers from the cache once the pod was listed, and lists again after an event the cache does not show', async () => {
    const f = fakeRuntime();
    const cache = new RuntimeCache(f.runtime);
    await cache.current(UID);
    await cache.current(UID);
    expect(f.state.lists).toBe(1);

    f.state.containers[0].state = CONTAINER_EXITED;
    expect(cache.sawEvent(UID, exited('c1'))).toBe(false);
    expect((await cache.current(UID)).containers[0].state).toBe(CONTAINER_EXITED);
    expect(f.state.lists).toBe(2);
    // The list showed the event: the cache is trusted again, and the same event is now covered.
    await cache.current(UID);
    expect(f.state.lists).toBe(2);
    expect(cache.sawEvent(UID, exited('c1'))).toBe(true);
  });

  it('a list issued before the cache was found behind does not catch it up', async () => {
    const f = fakeRuntime();
    const cache = new RuntimeCache(f.runtime);
    await cache.current(UID);
    const release = f.holdNext();
    const inFlight = cache.refresh(UID);
    cache.invalidate(UID);
    release();
    await inFlight;
    await cache.current(UID);
    expect(f.state.lists).toBe(3);
    await cache.current(UID);
    expect(f.state.lists).toBe(3);
  });

  it('an event the in-flight list missed keeps the cache behind until a list shows it', async () => {
    const f = fakeRuntime();
    const cache = new RuntimeCache(f.runtime);
    await cache.current(UID);
    const release = f.holdNext();
    const inFlight = cache.refresh(UID);
    // The container exits after the list took its snapshot.
    f.state.containers[0].state = CONTAINER_EXITED;
    expect(cache.sawEvent(UID, exited('c1'))).toBe(false);
    release();
    expect((await inFlight).containers[0].state).toBe(CONTAINER_RUNNING);
    expect((await cache.current(UID)).containers[0].state).toBe(CONTAINER_EXITED);
  });

  it('forgets a pod only once it is gone from the runtime', async () => {
    const f = fakeRuntime();
    const cache = new RuntimeCache(f.runtime);
    await cache.current(UID);
    cache.forget(UID);
    await cache.current(UID);
    // Still in the runtime: kept, so no new list.
    expect(f.state.lists).toBe(1);
    f.state.sandbox = false;
    f.state.containers = [];
    await cache.refresh(UID);
    cache.forget(UID);
    // Nothing is kept about it: a pod of that UID is listed afresh.
    await cache.current(UID);
    expect(f.state.lists).toBe(3);
  });
});

describe('RuntimeCache.current after a container is gone', () => {
  it('an event about a container removed since is settled by the next list, not kept for ever', async () => {
    const f = fakeRuntime();
    const cache = new RuntimeCache(f.runtime);
    await cache.current(UID);
    // The container exits and is removed before the kubelet lists again: the cache will never show "exited".
    f.state.containers = [];
    expect(cache.sawEvent(UID, exited('c1'))).toBe(false);
    await cache.current(UID);
    expect(f.state.lists).toBe(2);
    await cache.current(UID);
    expect(f.state.lists).toBe(2);
  });
});
