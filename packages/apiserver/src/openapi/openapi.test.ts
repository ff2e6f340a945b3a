import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFields } from '../protobuf/wire.js';
import { openApiV2, openApiV3, openApiV3Index } from './documents.js';
import { type KubectlServer, startKubectlServer } from './testing-kubectl.js';

const parse = (d: { json: Buffer } | undefined) => JSON.parse(d!.json.toString());

describe('OpenAPI documents from the kind schemas', () => {
  it('v3: a Pod schema with its GVK, and containers merged by name for strategic merge and apply', () => {
    const doc = parse(openApiV3('api/v1'));
    expect(doc.openapi).toBe('3.0.0');
    const pod = doc.components.schemas['io.k8s.api.core.v1.Pod'];
    expect(pod['x-kubernetes-group-version-kind']).toEqual([{ group: '', kind: 'Pod', version: 'v1' }]);
    const containers = doc.components.schemas['io.k8s.api.core.v1.PodSpec'].properties.containers;
    expect(containers).toMatchObject({
      type: 'array',
      items: { $ref: '#/components/schemas/io.k8s.api.core.v1.Container' },
      'x-kubernetes-patch-merge-key': 'name',
      'x-kubernetes-patch-strategy': 'merge',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    });
    expect(doc.components.schemas['io.k8s.api.core.v1.PodSpec'].required).toEqual(['containers']);
    // A described reference is wrapped in allOf, as OpenAPI 3.0 ignores siblings of $ref.
    expect(doc.components.schemas['io.k8s.api.core.v1.Pod'].properties.spec).toEqual({
      allOf: [{ $ref: '#/components/schemas/io.k8s.api.core.v1.PodSpec' }],
      description: 'What the pod should run.',
    });
    expect(doc.components.schemas['io.k8s.apimachinery.pkg.util.intstr.IntOrString']['x-kubernetes-int-or-string']).toBe(true);
    // Every reference resolves inside the document.
    const text = openApiV3('api/v1')!.json.toString();
    for (const m of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) expect(doc.components.schemas[m[1]], m[1]).toBeDefined();
    // The PATCH operation takes fieldValidation, which kubectl checks before it leaves validation to the server.
    const patch = doc.paths['/api/v1/namespaces/{namespace}/pods/{name}'].patch;
    expect(patch['x-kubernetes-group-version-kind']).toEqual({ group: '', version: 'v1', kind: 'Pod' });
    expect(patch.parameters.map((p: { name: string }) => p.name)).toContain('fieldValidation');
  });

  it('v3 index: one URL per group/version, with the hash of its document', () => {
    const index = openApiV3Index();
    expect(Object.keys(index.paths)).toEqual(expect.arrayContaining(['api/v1', 'apis/storage.k8s.io/v1', 'apis/coordination.k8s.io/v1']));
    expect(index.paths['api/v1'].serverRelativeURL).toBe(`/openapi/v3/api/v1?hash=${openApiV3('api/v1')!.hash}`);
    expect(openApiV3('apis/nothing/v1')).toBeUndefined();
  });

  it('v2: Swagger 2.0 with definitions for every served kind', () => {
    const doc = parse(openApiV2());
    expect(doc.swagger).toBe('2.0');
    expect(doc.definitions['io.k8s.api.storage.v1.StorageClass']['x-kubernetes-group-version-kind']).toEqual([
      { group: 'storage.k8s.io', kind: 'StorageClass', version: 'v1' },
    ]);
    expect(doc.definitions['io.k8s.api.core.v1.Pod'].properties.spec).toEqual({
      $ref: '#/definitions/io.k8s.api.core.v1.PodSpec',
      description: 'What the pod should run.',
    });
    expect(doc.definitions['io.k8s.apimachinery.pkg.util.intstr.IntOrString']).toMatchObject({ type: 'string', format: 'int-or-string' });
    const text = openApiV2().json.toString();
    for (const m of text.matchAll(/"#\/definitions\/([^"]+)"/g)) expect(doc.definitions[m[1]], m[1]).toBeDefined();
  });
});

describe('/openapi/v2 in protobuf (what kubectl 1.20 asks for)', () => {
  const fields = (b: Buffer) => [...readFields(b)].map((f) => ({ field: f.field, value: f.value as Buffer }));
  const str = (b: Buffer, n: number) => fields(b).find((f) => f.field === n)?.value.toString('utf8');

  it('carries every definition with its type, properties and x-kubernetes extensions', () => {
    const doc = fields(openApiV2().protobuf!());
    expect(doc.find((f) => f.field === 1)?.value.toString()).toBe('2.0');
    const definitions = fields(doc.find((f) => f.field === 9)!.value).map((d) => d.value);
    const byName = new Map(definitions.map((d) => [str(d, 1), fields(d).find((f) => f.field === 2)!.value]));
    expect(byName.size).toBe(Object.keys(JSON.parse(openApiV2().json.toString()).definitions).length);
    const podSpec = byName.get('io.k8s.api.core.v1.PodSpec')!;
    expect(str(fields(podSpec).find((f) => f.field === 22)!.value, 1)).toBe('object');
    const props = fields(fields(podSpec).find((f) => f.field === 25)!.value).map((p) => p.value);
    const containers = fields(props.find((p) => str(p, 1) === 'containers')!).find((f) => f.field === 2)!.value;
    const ext = fields(containers)
      .filter((f) => f.field === 31)
      .map((f) => [str(f.value, 1), str(fields(f.value).find((x) => x.field === 2)!.value, 2)]);
    expect(ext).toEqual(expect.arrayContaining([['x-kubernetes-patch-merge-key', '"name"'], ['x-kubernetes-patch-strategy', '"merge"']]));
    const pod = byName.get('io.k8s.api.core.v1.Pod')!;
    const gvk = fields(pod).find((f) => f.field === 31 && str(f.value, 1) === 'x-kubernetes-group-version-kind')!;
    expect(JSON.parse(str(fields(gvk.value).find((x) => x.field === 2)!.value, 2)!)).toEqual([{ group: '', kind: 'Pod', version: 'v1' }]);
  });
});

describe.runIf(requirePeers('kubectl explain against the OpenAPI documents', [peers.kubectl]))('kubectl explain', () => {
  let srv: KubectlServer;
  beforeAll(async () => {
    srv = await startKubectlServer();
  });
  afterAll(() => srv?.close());

  it('explains pod.spec.containers from /openapi/v3', async () => {
    const r = await srv.kubectl(['explain', 'pod.spec.containers']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/KIND:\s+Pod/);
    expect(r.stdout).toMatch(/FIELD: containers <\[\]Container>/);
    expect(r.stdout).toContain('The application containers; at least one.');
    expect(r.stdout).toMatch(/name\s+<string> -required-/);
    expect(r.stdout).toContain('Name of the container, a DNS label unique within the pod.');
    expect(srv.requests.some((q) => q.startsWith('GET /openapi/v3/api/v1?hash='))).toBe(true);
  });

  it('explains a storage.k8s.io kind and recurses', async () => {
    const r = await srv.kubectl(['explain', 'storageclass', '--recursive']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/GROUP:\s+storage.k8s.io/);
    expect(r.stdout).toMatch(/provisioner\s+<string> -required-/);
  });
});
