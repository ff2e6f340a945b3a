import type { KubeObject } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { fieldsOf, leaves, recordManagedFields, toFieldsV1 } from './managed-fields.js';

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'u', resourceVersion: '7', labels: { app: 'web', tier: 'front' }, annotations: {}, finalizers: ['a/b'] },
  spec: {
    containers: [
      { name: 'c', image: 'nginx', ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 443 }], volumeMounts: [{ name: 'v', mountPath: '/data' }], args: ['-x', '-y'], env: [] },
      { name: 'sidecar', image: 'busybox', resources: { requests: { cpu: '10m' } }, securityContext: {} },
    ],
    tolerations: [{ key: 'k', operator: 'Exists' }, { operator: 'Exists' }],
    nodeSelector: { disk: 'ssd' },
    priority: 0,
    hostNetwork: false,
    dnsConfig: null,
  },
  status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] },
  statusExtra: { x: 1 },
} as unknown as KubeObject;

const cases: [string, KubeObject][] = [
  ['a pod with keyed, atomic and empty lists', pod],
  ['a ConfigMap', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', labels: { bench: 'yes' } }, data: { key: 'value' } } as KubeObject],
  ['an object whose metadata sets only stripped fields', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'x' } } as KubeObject],
  ['an object with empty metadata', { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} } as KubeObject],
];

describe('fieldsOf (the FieldsV1 of a first write)', () => {
  for (const [what, obj] of cases)
    for (const sub of ['', 'status', 'scale'])
      it(`is what the general leaf walk gives for ${what} (subresource "${sub}"), in the same key order`, () => {
        const general = toFieldsV1(leaves(structuredClone(obj), sub).keys());
        expect(JSON.stringify(fieldsOf(structuredClone(obj), sub))).toBe(JSON.stringify(general));
      });

  it('records a create as one Update entry owning every field set, and none when nothing is owned', () => {
    const obj = structuredClone(cases[1][1]);
    recordManagedFields(obj, undefined, 'kubectl', 'Update', 'v1');
    expect(obj.metadata.managedFields).toEqual([
      {
        manager: 'kubectl',
        operation: 'Update',
        apiVersion: 'v1',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:key': {} }, 'f:metadata': { 'f:labels': { 'f:bench': {} } } },
      },
    ]);
    const bare = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', managedFields: [{ manager: 'forged' }] } } as unknown as KubeObject;
    recordManagedFields(bare, undefined, 'kubectl', 'Update', 'v1');
    expect(bare.metadata.managedFields).toBeUndefined();
  });
});
