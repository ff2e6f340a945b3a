import type { Pod } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { containerConfig } from './cri-config.js';

const pod = (podSc: Record<string, unknown> | undefined, containerSc?: Pod['spec']['containers'][number]['securityContext']): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: { securityContext: podSc, containers: [{ name: 'app', image: 'busybox', securityContext: containerSc }] },
});

const linuxSc = (p: Pod) => containerConfig(p, p.spec.containers[0], 0, { volumePaths: new Map(), kind: 'regular' }).linux?.securityContext;

describe('the CRI security context of a container', () => {
  it("takes runAsUser and runAsGroup from the pod when the container leaves them unset, and the pod's fsGroup then supplementalGroups as supplemental groups", () => {
    const sc = linuxSc(pod({ runAsUser: 2000, runAsGroup: 3000, fsGroup: 5000, supplementalGroups: [4000, 4001] }));
    expect(sc?.runAsUser).toEqual({ value: 2000 });
    expect(sc?.runAsGroup).toEqual({ value: 3000 });
    expect(sc?.supplementalGroups).toEqual([5000, 4000, 4001]);
  });

  it("lets the container's own runAsUser and runAsGroup win over the pod's", () => {
    const sc = linuxSc(pod({ runAsUser: 2000, runAsGroup: 3000 }, { runAsUser: 1234, runAsGroup: 0 }));
    expect(sc?.runAsUser).toEqual({ value: 1234 });
    expect(sc?.runAsGroup).toEqual({ value: 0 });
    expect(sc?.supplementalGroups).toEqual([]);
  });

  it('leaves the user to the image when neither pod nor container names one', () => {
    const sc = linuxSc(pod(undefined));
    expect(sc?.runAsUser).toBeNull();
    expect(sc?.runAsGroup).toBeNull();
    expect(sc?.supplementalGroups).toEqual([]);
  });
});
