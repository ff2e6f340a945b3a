import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../api-meta.js';
import { MemoryStore } from '../store-memory.js';
import { EventRecorder } from './events.js';

const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'default', uid: 'u-1', resourceVersion: '5' } } as KubeObject;

describe('EventRecorder', () => {
  it('writes one Event per object, type, reason and message, and counts repeats on it', async () => {
    const store = await MemoryStore.open();
    const r = new EventRecorder(store, { component: 'kubelet', host: 'node-1' });
    r.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    r.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await r.flush();
    r.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    r.event(pod, 'Normal', 'Pulled', 'Container image "pause" already present on machine');
    await r.flush();
    const events = (await store.list('Event', { namespace: 'default' })).items as unknown as {
      metadata: { name: string };
      reason: string;
      count: number;
      involvedObject: { uid: string };
      source: { component: string; host: string };
    }[];
    expect(events.map((e) => [e.reason, e.count]).sort()).toEqual([
      ['BackOff', 3],
      ['Pulled', 1],
    ]);
    for (const e of events) {
      expect(e.metadata.name).toMatch(/^web-0\.[0-9a-f]+$/);
      expect(e.involvedObject.uid).toBe('u-1');
      expect(e.source).toEqual({ component: 'kubelet', host: 'node-1' });
    }
  });
});
