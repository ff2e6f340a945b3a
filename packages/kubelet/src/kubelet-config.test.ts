import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseQuantity } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import {
  allocatableReservation,
  decodeKubeletConfiguration,
  evictionThresholds,
  KubeletConfigError,
  loadKubeletConfiguration,
  nodeCapacity,
  parseGoDuration,
} from './kubelet-config.js';
import { allocatable } from './node-status.js';

const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

describe('KubeletConfiguration', () => {
  it('applies the upstream defaults to an empty file', () => {
    const { config, warnings } = decodeKubeletConfiguration(HEAD);
    expect(warnings).toEqual([]);
    expect(config.maxPods).toBe(110);
    expect(config.podPidsLimit).toBe(-1);
    expect(config.cgroupDriver).toBe('cgroupfs');
    expect(config.evictionHard).toEqual({
      'memory.available': '100Mi',
      'nodefs.available': '10%',
      'nodefs.inodesFree': '5%',
      'imagefs.available': '15%',
      'imagefs.inodesFree': '5%',
    });
    expect([config.imageGCHighThresholdPercent, config.imageGCLowThresholdPercent]).toEqual([85, 80]);
    expect(config.cpuCFSQuotaPeriod).toBe('100ms');
  });

  it('reads every field it acts on', () => {
    const { config } = decodeKubeletConfiguration(
      HEAD +
        `kubeReserved: {cpu: 500m, memory: 1Gi}
systemReserved: {cpu: "1", memory: 512Mi, ephemeral-storage: 1Gi}
evictionHard: {memory.available: 200Mi, nodefs.available: 5%}
evictionSoft: {memory.available: 1Gi}
evictionSoftGracePeriod: {memory.available: 1m30s}
evictionMinimumReclaim: {memory.available: 100Mi}
maxPods: 42
podPidsLimit: 1024
cgroupDriver: systemd
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
clusterDNS: [10.96.0.10]
clusterDomain: example.local
failSwapOn: false
`,
    );
    expect(config.maxPods).toBe(42);
    expect(config.podPidsLimit).toBe(1024);
    expect(config.cgroupDriver).toBe('systemd');
    expect(config.cpuManagerPolicy).toBe('static');
    expect(config.memoryManagerPolicy).toBe('Static');
    expect(config.topologyManagerPolicy).toBe('single-numa-node');
    expect(config.clusterDNS).toEqual(['10.96.0.10']);
    expect(config.clusterDomain).toBe('example.local');
    // A partial evictionHard replaces the defaults (unless mergeDefaultEvictionSettings), as upstream.
    expect(config.evictionHard).toEqual({ 'memory.available': '200Mi', 'nodefs.available': '5%' });
    const ts = evictionThresholds(config);
    const soft = ts.find((t) => !t.hard)!;
    expect(soft.signal).toBe('memory.available');
    expect(soft.gracePeriodMs).toBe(90_000);
    expect(soft.minReclaim?.quantity?.value()).toBe(100 * 1024 * 1024);
  });

  it('warns about fields it does not act on instead of failing (upstream decodes leniently)', () => {
    const { warnings } = decodeKubeletConfiguration(HEAD + 'failSwapOn: false\n');
    expect(warnings).toEqual(['unknown field "failSwapOn"']);
  });

  it('merges default eviction settings when asked to', () => {
    const { config } = decodeKubeletConfiguration(HEAD + 'mergeDefaultEvictionSettings: true\nevictionHard: {memory.available: 1Gi}\n');
    expect(config.evictionHard['memory.available']).toBe('1Gi');
    expect(config.evictionHard['nodefs.available']).toBe('10%');
  });

  it('computes allocatable as capacity - kubeReserved - systemReserved - hard eviction', () => {
    const { config } = decodeKubeletConfiguration(
      HEAD + 'kubeReserved: {cpu: 500m, memory: 1Gi}\nsystemReserved: {cpu: 500m, memory: 512Mi}\nmaxPods: 50\n',
    );
    const capacity = nodeCapacity(config, { cpu: '8', memory: '32Gi', 'ephemeral-storage': '100Gi', pods: '110' });
    expect(capacity.pods).toBe('50');
    const reserved = allocatableReservation(config, capacity);
    const alloc = allocatable(capacity, reserved);
    expect(parseQuantity(alloc.cpu).milliValue()).toBe(7000);
    // 32Gi - 1Gi - 512Mi - 100Mi (memory.available)
    expect(parseQuantity(alloc.memory).value()).toBe(32 * 2 ** 30 - 2 ** 30 - 512 * 2 ** 20 - 100 * 2 ** 20);
    // 100Gi - 10% (nodefs.available)
    expect(parseQuantity(alloc['ephemeral-storage']).value()).toBe(Math.round(100 * 2 ** 30 * 0.9));
    expect(alloc.pods).toBe('50');
  });

  it.each([
    ['apiVersion: v1\nkind: KubeletConfiguration\n', /no kind "KubeletConfiguration" is registered for version "v1"/],
    ['apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n', /kind "Pod" is not KubeletConfiguration/],
    [HEAD + 'cgroupDriver: upstart\n', /cgroupDriver: unsupported value "upstart": supported values: "cgroupfs", "systemd"/],
    [HEAD + 'maxPods: -1\n', /maxPods \(--max-pods\) -1 must not be a negative number/],
    [HEAD + 'maxPods: many\n', /maxPods: must be a number/],
    [HEAD + 'podPidsLimit: 0\n', /podPidsLimit \(--pod-max-pids\) 0 must be -1/],
    [HEAD + 'imageGCHighThresholdPercent: 101\n', /imageGCHighThresholdPercent \(--image-gc-high-threshold\) 101 must be between 0 and 100, inclusive/],
    [HEAD + 'imageGCLowThresholdPercent: 90\n', /imageGCLowThresholdPercent \(--image-gc-low-threshold\) 90 must be less than imageGCHighThresholdPercent/],
    [HEAD + 'evictionHard: {memory.free: 1Gi}\n', /unsupported eviction signal memory.free/],
    [HEAD + 'evictionHard: {memory.available: 120%}\n', /eviction percentage threshold memory.available must be <= 100%: 120%/],
    [HEAD + 'evictionHard: {memory.available: -1Gi}\n', /eviction threshold memory.available cannot be negative/],
    [HEAD + 'evictionSoft: {memory.available: 1Gi}\n', /threshold for signal memory.available must have a grace period/],
    [HEAD + 'evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: soon}\n', /invalid duration "soon"/],
    [HEAD + 'cpuManagerPolicy: static\n', /static policy requires systemReserved.cpu \+ kubeReserved.cpu/],
    [HEAD + 'kubeReserved: {memory: lots}\n', /kubeReserved\[memory\]: invalid quantity "lots"/],
    [HEAD + 'clusterDNS: [not-an-ip]\n', /clusterDNS: invalid IP address "not-an-ip"/],
    ['{', /not YAML or JSON/],
  ])('rejects bad input with a precise error: %s', (text, message) => {
    expect(() => decodeKubeletConfiguration(text, 'f.yaml')).toThrow(KubeletConfigError);
    expect(() => decodeKubeletConfiguration(text, 'f.yaml')).toThrow(message);
  });

  it('names a missing file', () => {
    const f = path.join(os.tmpdir(), `kemu-no-such-${process.pid}.yaml`);
    expect(() => loadKubeletConfiguration(f)).toThrow(`failed to read kubelet config file "${f}": ENOENT`);
  });

  it('loads a file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kc-'));
    try {
      fs.writeFileSync(path.join(dir, 'k.yaml'), HEAD + 'maxPods: 7\n');
      expect(loadKubeletConfiguration(path.join(dir, 'k.yaml')).config.maxPods).toBe(7);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses Go durations', () => {
    expect(parseGoDuration('1h2m3.5s', 'x')).toBe(3_723_500);
    expect(parseGoDuration('250ms', 'x')).toBe(250);
    expect(parseGoDuration('0', 'x')).toBe(0);
    expect(() => parseGoDuration('5', 'x')).toThrow(/invalid duration/);
  });
});
