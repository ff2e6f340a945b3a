import { describe, expect, it } from 'vitest';
import { BadRequestError } from './errors.js';
import { jsonPatch, mergePatch, strategicMerge } from './patch.js';

describe('patches', () => {
  it('merge patch (RFC 7386): null deletes, lists replace', () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { b: { c: null, e: 4 }, l: [3] })).toEqual({ a: 1, b: { d: 3, e: 4 }, l: [3] });
  });

  it('strategic merge merges keyed lists and honours $patch directives', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      spec: {
        containers: [
          { name: 'a', image: 'x:1', env: [{ name: 'K', value: '1' }] },
          { name: 'b', image: 'y:1' },
        ],
        tolerations: [{ key: 't' }],
      },
      metadata: { finalizers: ['f1'] },
    };
    const out = strategicMerge(pod, {
      spec: {
        containers: [{ name: 'a', env: [{ name: 'J', value: '2' }] }, { name: 'b', $patch: 'delete' }, { name: 'c', image: 'z:1' }],
        tolerations: [{ key: 'u' }],
      },
      metadata: { finalizers: ['f2'] },
    });
    expect(out.spec.containers).toEqual([
      { name: 'a', image: 'x:1', env: [{ name: 'K', value: '1' }, { name: 'J', value: '2' }] },
      { name: 'c', image: 'z:1' },
    ]);
    expect(out.spec.tolerations).toEqual([{ key: 'u' }]);
    expect(out.metadata.finalizers).toEqual(['f1', 'f2']);
    expect(strategicMerge({ metadata: { finalizers: ['a', 'b'] } }, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } })).toEqual({
      metadata: { finalizers: ['b'] },
    });
  });

  it('strategic merge reads merge keys and strategies from the kind schema', () => {
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec: { podCIDRs: ['10.0.0.0/24'] } };
    // podCIDRs is a primitive list with patchStrategy merge: merged as a set.
    expect(strategicMerge(node, { spec: { podCIDRs: ['fd00::/64'] } }).spec.podCIDRs).toEqual(['10.0.0.0/24', 'fd00::/64']);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      spec: {
        containers: [{ name: 'a', ports: [{ containerPort: 80, name: 'http' }] }],
        hostAliases: [{ ip: '10.0.0.1', hostnames: ['a'] }],
        volumes: [{ name: 'v', emptyDir: {} }],
      },
    };
    const out = strategicMerge(pod, {
      spec: {
        containers: [{ name: 'a', ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 81 }] }],
        hostAliases: [{ ip: '10.0.0.1', hostnames: ['b'] }],
        // retainKeys: the volume's source changes from emptyDir to configMap.
        volumes: [{ name: 'v', configMap: { name: 'cm' }, $retainKeys: ['configMap', 'name'] }],
      },
    });
    expect(out.spec.containers[0].ports).toEqual([{ containerPort: 80, name: 'http', protocol: 'TCP' }, { containerPort: 81 }]);
    expect(out.spec.hostAliases).toEqual([{ ip: '10.0.0.1', hostnames: ['b'] }]);
    expect(out.spec.volumes).toEqual([{ name: 'v', configMap: { name: 'cm' } }]);
  });

  it('strategic merge orders a keyed list by $setElementOrder, as kubectl apply sends it', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', spec: { containers: [{ name: 'a' }, { name: 'b' }] } };
    const out = strategicMerge(pod, {
      spec: { '$setElementOrder/containers': [{ name: 'c' }, { name: 'b' }, { name: 'a' }], containers: [{ name: 'c', image: 'z' }] },
    });
    expect(out.spec.containers.map((c: { name: string }) => c.name)).toEqual(['c', 'b', 'a']);
  });

  it('strategic merge reaches into a Deployment\'s pod template (containers by name)', () => {
    const d = { apiVersion: 'apps/v1', kind: 'Deployment', spec: { template: { spec: { containers: [{ name: 'a', image: 'x:1' }, { name: 'b', image: 'y:1' }] } } } };
    const out = strategicMerge(d, { spec: { template: { spec: { containers: [{ name: 'b', image: 'y:2' }] } } } });
    expect(out.spec.template.spec.containers).toEqual([
      { name: 'a', image: 'x:1' },
      { name: 'b', image: 'y:2' },
    ]);
  });

  it('strategic merge of a kind without a schema replaces lists, as a merge patch does', () => {
    const obj = { apiVersion: 'example.com/v1', kind: 'Widget', spec: { containers: [{ name: 'a', image: 'x' }] } };
    expect(strategicMerge(obj, { spec: { containers: [{ name: 'b' }] } }).spec.containers).toEqual([{ name: 'b' }]);
  });

  it('JSON patch (RFC 6902) is all-or-nothing', () => {
    const doc = { a: [1, 2], b: { c: 'x' } };
    expect(jsonPatch(doc, [
      { op: 'add', path: '/a/-', value: 3 },
      { op: 'replace', path: '/b/c', value: 'y' },
      { op: 'move', from: '/b/c', path: '/d' },
      { op: 'remove', path: '/a/0' },
    ])).toEqual({ a: [2, 3], b: {}, d: 'y' });
    expect(() => jsonPatch(doc, [{ op: 'add', path: '/a/-', value: 3 }, { op: 'test', path: '/b/c', value: 'nope' }])).toThrow(BadRequestError);
    expect(doc).toEqual({ a: [1, 2], b: { c: 'x' } });
    expect(() => jsonPatch(doc, [{ op: 'remove', path: '/zz' }])).toThrow(/does not exist/);
  });
});
