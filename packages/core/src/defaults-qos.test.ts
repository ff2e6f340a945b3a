import { describe, expect, it } from 'vitest';
import type { PodSpec } from './api-core.js';
import { podQOSClass } from './defaults.js';
import { deepFreeze } from './deep-freeze.js';

const c = (requests?: Record<string, string>, limits?: Record<string, string>) => ({
  name: 'c',
  image: 'busybox',
  resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) },
});

describe('podQOSClass', () => {
  it('is BestEffort without cpu or memory requests and limits in any container', () => {
    expect(podQOSClass({ containers: [{ name: 'c', image: 'busybox' }] })).toBe('BestEffort');
    expect(podQOSClass({ containers: [c({ 'ephemeral-storage': '1Gi' })] })).toBe('BestEffort');
  });

  it('is Guaranteed when every container limits cpu and memory with requests equal to the limits', () => {
    const spec: PodSpec = {
      initContainers: [c(undefined, { cpu: '1', memory: '1Gi' })],
      containers: [c({ cpu: '500m', memory: '64Mi' }, { cpu: '500m', memory: '64Mi' })],
    };
    expect(podQOSClass(spec)).toBe('Guaranteed');
  });

  it('is Burstable when a request differs from its limit, a limit is missing, or an init container has none', () => {
    expect(podQOSClass({ containers: [c({ cpu: '100m', memory: '1Gi' }, { cpu: '200m', memory: '1Gi' })] })).toBe('Burstable');
    expect(podQOSClass({ containers: [c(undefined, { cpu: '1' })] })).toBe('Burstable');
    expect(podQOSClass({ initContainers: [c()], containers: [c(undefined, { cpu: '1', memory: '1Gi' })] })).toBe('Burstable');
  });

  it('answers again for a mutable spec whose resources the caller changed', () => {
    const spec: PodSpec = { containers: [c({ cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })] };
    expect(podQOSClass(spec)).toBe('Guaranteed');
    spec.containers[0]!.resources!.limits!.cpu = '2';
    expect(podQOSClass(spec)).toBe('Burstable');
    spec.containers[0]!.resources = {};
    expect(podQOSClass(spec)).toBe('BestEffort');
  });

  it('does not remember a frozen spec whose containers are still mutable', () => {
    const containers = [c({ cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })];
    const spec = Object.freeze({ containers }) as PodSpec;
    expect(podQOSClass(spec)).toBe('Guaranteed');
    containers[0]!.resources.limits!.memory = '2Gi';
    expect(podQOSClass(spec)).toBe('Burstable');
  });

  it('gives a deeply frozen spec the same class on every call', () => {
    const spec = deepFreeze({ containers: [c({ cpu: '500m' }, { cpu: '1', memory: '1Gi' })] } as PodSpec);
    expect(podQOSClass(spec)).toBe('Burstable');
    expect(podQOSClass(spec)).toBe('Burstable');
  });
});
