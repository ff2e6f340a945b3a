import { describe, expect, it } from 'vitest';
import { storedKinds } from '../kinds.js';
import { jsonField, kindSchema, kindSchemas, schemaType, schemaTypes, typeShape } from './index.js';

describe('kind schemas', () => {
  it('every type reference resolves, and names and protobuf numbers are unique per type', () => {
    const problems: string[] = [];
    for (const t of schemaTypes()) {
      const names = new Set<string>();
      const numbers = new Set<number>();
      for (const f of t.fields) {
        if (names.has(f.name)) problems.push(`${t.name}.${f.name}: duplicate JSON name`);
        names.add(f.name);
        if (f.proto !== 0) {
          if (numbers.has(f.proto)) problems.push(`${t.name}.${f.name}: duplicate protobuf number ${f.proto}`);
          numbers.add(f.proto);
        }
        let expr = f.type;
        for (let shape = typeShape(expr); shape[0] === 'list' || shape[0] === 'map'; shape = typeShape(expr)) expr = shape[1];
        if (typeShape(expr)[0] === 'ref' && !schemaType(expr)) problems.push(`${t.name}.${f.name}: unknown type ${expr}`);
        if (f.patchMergeKey && !f.patchStrategy?.includes('merge')) problems.push(`${t.name}.${f.name}: merge key without merge`);
        if (f.listType === 'map' && !f.listMapKeys?.length) problems.push(`${t.name}.${f.name}: map list without keys`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the kinds core registered before the schemas existed all have one', () => {
    const kinds = ['Pod', 'Node', 'Namespace', 'ConfigMap', 'Event', 'PersistentVolume', 'PersistentVolumeClaim', 'StorageClass'];
    kinds.push('VolumeAttachment', 'CSIDriver', 'CSINode', 'PriorityClass', 'Lease', 'IPPool', 'IPAMBlock', 'BlockAffinity');
    const missing = kinds.filter((kind) => {
      const k = storedKinds().find((x) => x.kind === kind);
      return !k || !kindSchema(k.apiVersion, k.kind);
    });
    expect(missing).toEqual([]);
  });

  it('kinds carry apiVersion and kind, and have a List type', () => {
    const pod = schemaType('io.k8s.api.core.v1.Pod')!;
    expect(pod.fields.slice(0, 2).map((f) => [f.name, f.proto])).toEqual([
      ['apiVersion', 0],
      ['kind', 0],
    ]);
    const list = schemaType('io.k8s.api.core.v1.PodList')!;
    expect(list.fields.map((f) => [f.name, f.type, f.proto])).toEqual([
      ['apiVersion', 'string', 0],
      ['kind', 'string', 0],
      ['metadata', 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta', 1],
      ['items', '[]io.k8s.api.core.v1.Pod', 2],
    ]);
    expect(kindSchemas().length).toBeGreaterThanOrEqual(17);
  });

  it('matches upstream facts: numbers, types, strategies', () => {
    const pick = (t: string, f: string) => {
      const x = jsonField(t, f)!;
      return [x.proto, x.type, x.patchStrategy, x.patchMergeKey, x.required ?? false];
    };
    const core = 'io.k8s.api.core.v1.';
    expect(pick(`${core}PodSpec`, 'containers')).toEqual([2, `[]${core}Container`, 'merge', 'name', true]);
    expect(pick(`${core}PodSpec`, 'volumes')).toEqual([1, `[]${core}Volume`, 'merge,retainKeys', 'name', false]);
    expect(pick(`${core}PodSpec`, 'topologySpreadConstraints')).toEqual([33, `[]${core}TopologySpreadConstraint`, 'merge', 'topologyKey', false]);
    expect(pick(`${core}Container`, 'ports')).toEqual([6, `[]${core}ContainerPort`, 'merge', 'containerPort', false]);
    expect(pick(`${core}Container`, 'volumeMounts')).toEqual([9, `[]${core}VolumeMount`, 'merge', 'mountPath', false]);
    expect(pick(`${core}PodStatus`, 'conditions')).toEqual([2, `[]${core}PodCondition`, 'merge', 'type', false]);
    expect(pick(`${core}ContainerStatus`, 'restartCount')).toEqual([5, 'int32', undefined, undefined, true]);
    expect(pick(`${core}ConfigMap`, 'binaryData')).toEqual([3, 'map[string]bytes', undefined, undefined, false]);
    expect(pick(`${core}NodeStatus`, 'capacity')).toEqual([1, 'map[string]quantity', undefined, undefined, false]);
    expect(pick('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'ownerReferences')[0]).toBe(13);
    expect(pick('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'creationTimestamp')[1]).toBe('time');
    expect(pick('io.k8s.api.coordination.v1.LeaseSpec', 'renewTime')[1]).toBe('microTime');
    // Inline fields: a Volume's sources and a Probe's handlers appear at its own level.
    expect(jsonField(`${core}Volume`, 'configMap')?.type).toBe(`${core}ConfigMapVolumeSource`);
    expect(jsonField(`${core}Probe`, 'httpGet')?.type).toBe(`${core}HTTPGetAction`);
    expect(jsonField(`${core}HTTPGetAction`, 'port')?.type).toBe('intOrString');
  });
});
