import { describe, expect, it } from 'vitest';
import type { PersistentVolumeClaim } from '@kemu/core';
import { describeError, isFinalError } from './connection.js';
import { ParameterError, parseClassParameters, resolveTemplate } from './params.js';

const claim = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', namespace: 'team-a', annotations: { owner: 'alice' } },
  spec: {},
} as PersistentVolumeClaim;

describe('class parameters', () => {
  it('strips the reserved keys and collects secrets and fstype', () => {
    const p = parseClassParameters({
      tier: 'fast',
      'csi.storage.k8s.io/fstype': 'xfs',
      'csi.storage.k8s.io/provisioner-secret-name': 'creds-${pvc.name}',
      'csi.storage.k8s.io/provisioner-secret-namespace': '${pvc.namespace}',
    });
    expect(p.driverParameters).toEqual({ tier: 'fast' });
    expect(p.fsType).toBe('xfs');
    expect(p.secrets.provisioner).toEqual({
      nameTemplate: 'creds-${pvc.name}',
      namespaceTemplate: '${pvc.namespace}',
    });
  });

  it('rejects unknown keys in the reserved namespace and half a secret reference', () => {
    expect(() => parseClassParameters({ 'csi.storage.k8s.io/bogus': 'x' })).toThrow(
      'found unknown parameter key "csi.storage.k8s.io/bogus" with reserved namespace csi.storage.k8s.io/',
    );
    expect(() => parseClassParameters({ 'csi.storage.k8s.io/node-stage-secret-name': 'x' })).toThrow(
      ParameterError,
    );
  });

  it('resolves secret templates, annotations only where allowed', () => {
    expect(resolveTemplate('creds-${pvc.name}-${pv.name}', 'pvc-1', claim, true)).toBe('creds-data-pvc-1');
    expect(resolveTemplate("${pvc.annotations['owner']}", 'pvc-1', claim, true)).toBe('alice');
    expect(() => resolveTemplate("${pvc.annotations['owner']}", 'pvc-1', claim, false)).toThrow(
      /not a supported template variable/,
    );
  });
});

describe('CSI errors', () => {
  it('formats gRPC errors as Kubernetes shows them and tells final from retryable', () => {
    expect(describeError({ code: 8, details: 'no room' })).toBe(
      'rpc error: code = ResourceExhausted desc = no room',
    );
    expect(isFinalError({ code: 14 })).toBe(false);
    expect(isFinalError({ code: 4 })).toBe(false);
    expect(isFinalError({ code: 3 })).toBe(true);
    expect(isFinalError(new Error('x'))).toBe(true);
  });
});
