import { kindInfo } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { checkFields } from './field-validation.js';

type Obj = any;
const pod = (): Obj => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', labels: { a: 'b' }, bogus: 1, ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'n', uid: 'u', extra: 2 }] },
  spec: {
    containers: [
      {
        name: 'c',
        image: 'i',
        imagee: 'x',
        ports: [{ containerPort: 80, nope: true }],
        env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'x', zz: 1 } } }],
        resources: { limits: { cpu: '1' } },
      },
    ],
    nodeSelector: { a: 'b' },
    unknownTop: { x: 1 },
  },
  status: { phase: 'Running', foo: 1 },
});

const message = (mutate: (p: Obj) => void): string => {
  const p = pod();
  mutate(p);
  try {
    checkFields(kindInfo('Pod'), p);
  } catch (err) {
    return (err as Error).message;
  }
  return '';
};

describe('checkFields', () => {
  it('names and drops every undeclared field, at any depth, as upstream names them', () => {
    const p = pod();
    expect(checkFields(kindInfo('Pod'), p).unknown).toEqual([
      'metadata.bogus',
      'metadata.ownerReferences[0].extra',
      'spec.containers[0].imagee',
      'spec.containers[0].ports[0].nope',
      'spec.containers[0].env[0].valueFrom.fieldRef.zz',
      'spec.unknownTop',
      'status.foo',
    ]);
    expect(p.spec.containers[0]).toEqual({ name: 'c', image: 'i', ports: [{ containerPort: 80 }], env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'x' } } }], resources: { limits: { cpu: '1' } } });
    expect(p.metadata).toEqual({ name: 'p', labels: { a: 'b' }, ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'n', uid: 'u' }] });
  });

  it("refuses a value of the wrong JSON type with Go's decoder message naming the field's path", () => {
    const prefix = 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal';
    expect(message((p) => (p.spec.nodeSelector.a = 5))).toBe(`${prefix} number into Go struct field PodSpec.spec.nodeSelector[a] of type string`);
    expect(message((p) => (p.spec.containers[0].args = ['a', 3]))).toBe(`${prefix} number into Go struct field Container.spec.containers[0].args[1] of type string`);
    expect(message((p) => (p.spec.containers[0].args = 'a'))).toBe(`${prefix} string into Go struct field Container.spec.containers[0].args of type []string`);
    expect(message((p) => (p.spec.containers = { a: 1 }))).toBe(`${prefix} object into Go struct field PodSpec.spec.containers of type []v1.Container`);
    expect(message((p) => (p.spec.containers[0].env = ['x']))).toBe(`${prefix} string into Go struct field Container.spec.containers[0].env[0] of type v1.EnvVar`);
    expect(message((p) => (p.spec.containers[0].resources.limits.cpu = true))).toBe(
      `${prefix} bool into Go struct field ResourceRequirements.spec.containers[0].resources.limits[cpu] of type resource.Quantity`,
    );
    expect(message((p) => (p.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath = 1))).toBe(
      `${prefix} number into Go struct field ObjectFieldSelector.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath of type string`,
    );
    expect(message(() => {})).toBe('');
  });
});
