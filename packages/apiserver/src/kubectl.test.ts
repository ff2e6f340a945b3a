// Real kubectl v1.32 (this machine image's) against the API server over HTTPS with a client certificate from
// the cluster CA, reading the kubeconfig the server's helpers write: discovery, explain, get with kubectl's
// columns, apply (client-side with validation, and server-side with a conflict), diff, patch (three types),
// label, annotate, describe, wait, get -w and delete with selectors.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient, startTestApiServer, type TestApiServer } from './testing.js';

const ok = requirePeers('the kubectl v1.32 end-to-end tests', [peers.kubectl]);

describe.runIf(ok)('kubectl v1.32 against the API server', () => {
  let t: TestApiServer;
  const kubectl = (args: string[], stdin?: string) => runClient('kubectl', args, { kubeconfig: t.kubeconfig, stdin });
  const manifest = (file: string, text: string) => {
    const p = path.join(t.dir, file);
    fs.writeFileSync(p, text);
    return p;
  };

  beforeAll(async () => {
    t = await startTestApiServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reports its version and resources, and explains a field from the OpenAPI schema', async () => {
    const v = await kubectl(['version', '-o', 'json']);
    expect(v.code, v.stderr).toBe(0);
    expect(JSON.parse(v.stdout).serverVersion).toMatchObject({ major: '1', minor: '32' });
    const r = await kubectl(['api-resources', '--no-headers']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^pods\s+po\s+v1\s+true\s+Pod$/m);
    expect(r.stdout).toMatch(/^leases\s+coordination\.k8s\.io\/v1\s+true\s+Lease$/m);
    const e = await kubectl(['explain', 'pod.spec.containers.image']);
    expect(e.code, e.stderr).toBe(0);
    expect(e.stdout).toMatch(/FIELD:\s+image <string>/);
  });

  it('applies with client-side validation, gets with columns and formats, and refuses an unknown field', async () => {
    const file = manifest(
      'pod.yaml',
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n',
    );
    const a = await kubectl(['apply', '-f', file]);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout.trim()).toBe('pod/web created');
    const g = await kubectl(['get', 'pods']);
    expect(g.code, g.stderr).toBe(0);
    expect(g.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0\/1\s+Pending\s+0\s+\d+s\n$/);
    const w = await kubectl(['get', 'pod', 'web', '-o', 'wide']);
    expect(w.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\n/);
    const jp = await kubectl(['get', 'pod', 'web', '-o', 'jsonpath={.spec.containers[0].image}']);
    expect(jp.stdout).toBe('busybox:1.36');
    const y = await kubectl(['get', 'pod', 'web', '-o', 'yaml']);
    expect(y.stdout).toMatch(/^kind: Pod$/m);
    const j = JSON.parse((await kubectl(['get', 'pods', '-o', 'json'])).stdout);
    expect(j.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['web']);
    const bad = manifest('bad.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata: {a: b}\nspecc: {}\n');
    const b = await kubectl(['apply', '-f', bad]);
    expect(b.code).not.toBe(0);
    expect(b.stderr).toMatch(/unknown field "specc"/);
  });

  it('server-side apply: owns fields, reports a conflict with another manager, and takes over with --force-conflicts', async () => {
    const v1 = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: "1"\n  b: "1"\n';
    const f = manifest('ssa.yaml', v1);
    expect((await kubectl(['apply', '--server-side', '-f', f])).stdout.trim()).toBe('configmap/ssa serverside-applied');
    const p = await kubectl(['patch', 'configmap', 'ssa', '--type=merge', '-p', '{"data":{"a":"9"}}']);
    expect(p.code, p.stderr).toBe(0);
    fs.writeFileSync(f, v1.replace('b: "1"', 'b: "2"'));
    // b changed only by this manager: no conflict; a is still "1" in the file but "9" live (owned by kubectl-patch).
    const c = await kubectl(['apply', '--server-side', '-f', f]);
    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: .data.a');
    const forced = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', f]);
    expect(forced.code, forced.stderr).toBe(0);
    const live = JSON.parse((await kubectl(['get', 'cm', 'ssa', '-o', 'json', '--show-managed-fields'])).stdout);
    expect(live.data).toEqual({ a: '1', b: '2' });
    const apply = live.metadata.managedFields.find((m: { manager: string }) => m.manager === 'kubectl');
    expect(apply).toMatchObject({ operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} } } });
    // Leaving a field out of the next apply removes it (no one else owns it).
    fs.writeFileSync(f, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: "1"\n');
    expect((await kubectl(['apply', '--server-side', '-f', f])).code).toBe(0);
    expect(JSON.parse((await kubectl(['get', 'cm', 'ssa', '-o', 'json'])).stdout).data).toEqual({ a: '1' });
  });

  it('patches with all three types, labels, annotates, diffs and describes', async () => {
    const f = manifest('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata:\n  k: v\n');
    expect((await kubectl(['apply', '-f', f])).code).toBe(0);
    expect((await kubectl(['patch', 'cm', 'p', '--type=merge', '-p', '{"data":{"m":"1"}}'])).stdout.trim()).toBe('configmap/p patched');
    expect((await kubectl(['patch', 'cm', 'p', '--type=json', '-p', '[{"op":"add","path":"/data/j","value":"2"}]'])).code).toBe(0);
    expect((await kubectl(['patch', 'pod', 'web', '-p', '{"spec":{"containers":[{"name":"c","image":"busybox:1.37"}]}}'])).code).toBe(0);
    expect((await kubectl(['get', 'pod', 'web', '-o', 'jsonpath={.spec.containers[*].image}'])).stdout).toBe('busybox:1.37');
    expect((await kubectl(['label', 'cm', 'p', 'tier=db'])).stdout.trim()).toBe('configmap/p labeled');
    expect((await kubectl(['annotate', 'cm', 'p', 'note=x'])).stdout.trim()).toBe('configmap/p annotated');
    const live = JSON.parse((await kubectl(['get', 'cm', 'p', '-o', 'json'])).stdout);
    expect(live.data).toEqual({ k: 'v', m: '1', j: '2' });
    expect(live.metadata.labels).toEqual({ tier: 'db' });
    expect(live.metadata.annotations.note).toBe('x');
    fs.writeFileSync(f, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata:\n  k: changed\n');
    const d = await kubectl(['diff', '-f', f]);
    expect(d.code, d.stderr).toBe(1);
    expect(d.stdout).toMatch(/^\+\s+k: changed$/m);
    const desc = await kubectl(['describe', 'pod', 'web']);
    expect(desc.code, desc.stderr).toBe(0);
    expect(desc.stdout).toMatch(/^Name:\s+web$/m);
  });

  it('streams changes to get -w and waits for a condition', async () => {
    const child = spawn('kubectl', ['get', 'cm', '-w', '--no-headers', '-o', 'name'], {
      env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), KUBECONFIG: t.kubeconfig },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    try {
      await waitFor(() => out.includes('configmap/p'));
      await kubectl(['create', '-f', manifest('w.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\n')]);
      await waitFor(() => out.includes('configmap/watched'));
    } finally {
      child.kill();
    }
    const waited = kubectl(['wait', 'pod/web', '--for=condition=Ready', '--timeout=20s']);
    await new Promise((r) => setTimeout(r, 300));
    const st = await kubectl([
      'patch', 'pod', 'web', '--subresource=status', '--type=merge',
      '-p', '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}',
    ]);
    expect(st.code, st.stderr).toBe(0);
    const w = await waited;
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout.trim()).toBe('pod/web condition met');
  });

  it('create subcommands, which send protobuf bodies: namespace, configmap, secret', async () => {
    const out: string[] = [];
    for (const args of [
      ['create', 'namespace', 'team'],
      ['create', 'configmap', 'settings', '-n', 'team', '--from-literal=mode=fast'],
      ['create', 'secret', 'generic', 'creds', '-n', 'team', '--from-literal=password=s3cret'],
    ]) {
      const r = await kubectl(args);
      expect(r.code, r.stderr).toBe(0);
      out.push(r.stdout.trim());
    }
    expect(out).toEqual(['namespace/team created', 'configmap/settings created', 'secret/creds created']);
    expect(JSON.parse((await kubectl(['get', 'cm', 'settings', '-n', 'team', '-o', 'json'])).stdout).data).toEqual({ mode: 'fast' });
    const secret = JSON.parse((await kubectl(['get', 'secret', 'creds', '-n', 'team', '-o', 'json'])).stdout);
    expect(Buffer.from(secret.data.password, 'base64').toString()).toBe('s3cret');
  });

  it('a CRD with a schema, defaults, a status subresource and printer columns: served, validated, listed', async () => {
    const crd = manifest(
      'crd.yaml',
      [
        'apiVersion: apiextensions.k8s.io/v1',
        'kind: CustomResourceDefinition',
        'metadata: {name: crontabs.stable.example.com}',
        'spec:',
        '  group: stable.example.com',
        '  scope: Namespaced',
        '  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}',
        '  versions:',
        '  - name: v1',
        '    served: true',
        '    storage: true',
        '    subresources: {status: {}}',
        '    additionalPrinterColumns:',
        '    - {name: Spec, type: string, jsonPath: .spec.cronSpec}',
        '    - {name: Replicas, type: integer, jsonPath: .spec.replicas}',
        '    schema:',
        '      openAPIV3Schema:',
        '        type: object',
        '        properties:',
        '          spec:',
        '            type: object',
        '            properties:',
        "              cronSpec: {type: string, pattern: '^[0-9*/ ]+$'}",
        '              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}',
        '          status: {type: object, properties: {phase: {type: string}}}',
        '',
      ].join('\n'),
    );
    expect((await kubectl(['apply', '-f', crd])).code).toBe(0);
    const est = await kubectl(['wait', 'crd/crontabs.stable.example.com', '--for=condition=Established', '--timeout=10s']);
    expect(est.code, est.stderr).toBe(0);
    expect((await kubectl(['api-resources', '--api-group=stable.example.com', '--no-headers'])).stdout).toMatch(/^crontabs\s+ct\s+stable\.example\.com\/v1\s+true\s+CronTab$/m);
    const cr = manifest('cr.yaml', 'apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: every5}\nspec: {cronSpec: "*/5 * * * *"}\n');
    expect((await kubectl(['apply', '-f', cr])).stdout.trim()).toBe('crontab.stable.example.com/every5 created');
    const g = await kubectl(['get', 'ct']);
    expect(g.stdout).toMatch(/^NAME\s+SPEC\s+REPLICAS\nevery5\s+\*\/5 \* \* \* \*\s+1\n$/);
    const bad = manifest('bad-cr.yaml', 'apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: bad}\nspec: {cronSpec: "nope", replicas: 50}\n');
    const b = await kubectl(['apply', '-f', bad]);
    expect(b.code).not.toBe(0);
    expect(b.stderr).toContain('The CronTab "bad" is invalid');
    expect(b.stderr).toContain('spec.replicas: Invalid value: 50: spec.replicas in body should be less than or equal to 10');
    const st = await kubectl(['patch', 'ct', 'every5', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Active"}}']);
    expect(st.code, st.stderr).toBe(0);
    expect((await kubectl(['get', 'ct', 'every5', '-o', 'jsonpath={.status.phase}'])).stdout).toBe('Active');
  });

  it('deletes by label selector, with a grace period, and all of a kind', async () => {
    await kubectl(['create', '-f', manifest('d.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d1\n  labels: {del: "yes"}\n')]);
    const l = await kubectl(['delete', 'cm', '-l', 'del=yes']);
    expect(l.stdout.trim()).toBe('configmap "d1" deleted');
    const g = await kubectl(['delete', 'pod', 'web', '--grace-period=0', '--force']);
    expect(g.code, g.stderr).toBe(0);
    const all = await kubectl(['delete', 'cm', '--all']);
    expect(all.code, all.stderr).toBe(0);
    expect((await kubectl(['get', 'cm', '-o', 'name'])).stdout).toBe('');
  });
});

async function waitFor(cond: () => boolean, ms = 15_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
