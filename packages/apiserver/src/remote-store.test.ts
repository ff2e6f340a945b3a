// The remote store must keep the same contract as the stores it fronts: the core contract suite runs
// against it, through a real API server on a unix socket in front of a memory store.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryStore } from '@kemu/core';
import { describe, expect, it } from 'vitest';
// The suite is the core package's own contract tests, shared as source.
import { storeContract } from '../../core/src/store-contract.suite.js';
import { startApiServer } from './server.js';
import { ClusterUnreachableError } from './cluster-unreachable.js';
import { RemoteStore } from './remote-store.js';

async function remote() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-remote-'));
  const backing = await MemoryStore.open({ bookmarkIntervalMs: 100 });
  const api = await startApiServer(backing, path.join(dir, 'kemu.sock'));
  const store = new RemoteStore(api.socketPath);
  return {
    store,
    backing,
    compact: async (rv: string) => backing.compact(Number(rv)),
    cleanup: async () => {
      await store.close();
      await api.close();
      await backing.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

storeContract('remote (API server over a memory store)', remote);

describe('RemoteStore specifics', () => {
  it('says how to reach a cluster when none is listening', async () => {
    const store = new RemoteStore('/nonexistent/kemu.sock');
    await expect(store.get('Pod', 'default', 'x')).rejects.toBeInstanceOf(ClusterUnreachableError);
    await expect(store.watch('Pod')).rejects.toThrow(/start one with `kemu up`/);
  });

  it('ends its watches when closed, and the server forgets them', async () => {
    const r = await remote();
    const w = await r.store.watch('ConfigMap', { namespace: 'default' });
    const it = w[Symbol.asyncIterator]();
    const next = it.next();
    await r.store.close();
    expect((await next).done).toBe(true);
    expect(w.stopped).toBe(true);
    await r.cleanup();
  });
});
