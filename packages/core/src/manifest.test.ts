import { describe, expect, it } from 'vitest';
import { ManifestError, parseManifests, toYaml } from './manifest.js';

const good = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1.25
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: hostpath.csi.kemu.dev
volumeBindingMode: WaitForFirstConsumer
`;

describe('manifests', () => {
  it('parses multi-document YAML', () => {
    const objs = parseManifests(good, { source: 'app.yaml' });
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Pod/web', 'StorageClass/fast']);
    expect(objs[0].spec.restartPolicy).toBeUndefined(); // parsing does not default the returned objects
  });

  it('parses JSON objects, arrays and List kinds', () => {
    const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } }] });
    expect(parseManifests(list)).toHaveLength(1);
    expect(parseManifests('[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}]')[0].kind).toBe('Namespace');
  });

  it('rejects invalid objects with a field path, naming the document', () => {
    const bad = good.replace('image: nginx:1.25', 'imagePullPolicy: Sometimes');
    const err = (() => {
      try {
        parseManifests(bad, { source: 'app.yaml' });
      } catch (e) {
        return e as ManifestError;
      }
    })()!;
    expect(err).toBeInstanceOf(ManifestError);
    expect(err.message).toBe(
      'error validating "app.yaml (document 1)": Pod "web" is invalid: [spec.containers[0].image: Required value, spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"]',
    );
    expect(err.causes.map((c) => c.field)).toEqual(['spec.containers[0].image', 'spec.containers[0].imagePullPolicy']);
  });

  it('is all or nothing: a bad second document fails the whole parse', () => {
    const bad = `${good}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n`;
    expect(() => parseManifests(bad, { source: 'app.yaml' })).toThrow(
      /^error validating "app.yaml \(document 3\)": ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );
  });

  it('rejects unknown kinds, missing fields and YAML syntax errors', () => {
    expect(() => parseManifests('apiVersion: v1\nkind: Pood\nmetadata: {name: x}\n', { source: 'f.yaml' })).toThrow(
      'error: resource mapping not found for kind "Pood" in "f.yaml": no matches for kind "Pood" in version "v1"',
    );
    expect(() => parseManifests('kind: Pod\nmetadata: {name: x}\n', { source: 'f.yaml' })).toThrow('error validating "f.yaml": apiVersion not set');
    expect(() => parseManifests('apiVersion: v1\nkind: Pod\n  bad: [\n', { source: 'f.yaml' })).toThrow(/^error parsing "f.yaml": line \d+ column \d+/);
  });

  it('round-trips through toYaml', () => {
    const objs = parseManifests(good);
    expect(parseManifests(toYaml(objs))).toEqual(objs);
  });
});
