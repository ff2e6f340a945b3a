// Test helpers for the kubelet's own tests: a kubelet on the simulated CRI runtime and an in-memory store.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCri, type CriInstance } from '@kemu/cri';
import { createMemoryStore, type Pod, type Store } from '@kemu/core';
import { cri, inProcessApi } from '@kemu/proto';
import { Kubelet } from './kubelet.js';
import type { KubeletOptions } from './types.js';

export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 8000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

export interface TestKubelet {
  store: Store;
  cri: CriInstance;
  kubelet: Kubelet;
  opts: KubeletOptions;
  stop(): Promise<void>;
}

/** A started kubelet named `node-a` on the sim runtime, fast periods; `stop()` releases everything. */
export async function startTestKubelet(extra: Partial<KubeletOptions> = {}, store?: Store): Promise<TestKubelet> {
  const s = store ?? (await createMemoryStore());
  const instance = await createCri({ backend: 'sim', syntheticImages: true, streaming: false, podCidr: '10.244.1.0/24' });
  const opts: KubeletOptions = {
    store: s,
    nodeName: 'node-a',
    nodeIP: '192.0.2.10',
    podCIDR: '10.244.1.0/24',
    runtime: inProcessApi(cri.RuntimeServiceService, instance.runtimeService),
    images: inProcessApi(cri.ImageServiceService, instance.imageService),
    relistPeriodMs: 100,
    leaseRenewMs: 100,
    statusUpdateMs: 100,
    podLogsDir: fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-logs-')),
    recordEvents: true,
    ...extra,
  };
  const kubelet = new Kubelet(opts);
  await kubelet.start();
  return {
    store: s,
    cri: instance,
    kubelet,
    opts,
    async stop() {
      await kubelet.stop();
      await instance.close();
      if (!store) await s.close();
      fs.rmSync(opts.podLogsDir!, { recursive: true, force: true });
    },
  };
}

export function testPod(name: string, spec: Partial<Pod['spec']> = {}, annotations: Record<string, string> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations },
    spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'busybox' }], ...spec },
  } as Pod;
}
