// Server-side apply over HTTP (PATCH application/apply-patch+yaml): creation, field ownership in
// managedFields, removal of fields a manager stops applying (also list elements keyed by name), shared
// ownership of equal values, conflicts with another manager, and force.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApiServer, type TestApiServer } from './testing.js';

let t: TestApiServer;
beforeAll(async () => {
  t = await startTestApiServer();
});
afterAll(async () => {
  await t?.close();
});

function apply(path: string, yaml: string, manager: string, force = false): Promise<{ code: number; json: any }> {
  return new Promise((resolve, reject) => {
    const q = `?fieldManager=${manager}${force ? '&force=true' : ''}`;
    const req = http.request({ socketPath: t.api.socketPath, path: path + q, method: 'PATCH', headers: { 'content-type': 'application/apply-patch+yaml' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(yaml);
  });
}

const POD = '/apis/apps/v1/namespaces/default/deployments/ssa';
const pod = (containers: string) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ssa\nspec:\n  selector: {matchLabels: {app: ssa}}\n  template:\n    metadata: {labels: {app: ssa}}\n    spec:\n      containers:\n${containers}`;
const c = (name: string, image: string) => `      - name: ${name}\n        image: ${image}\n`;
const containersOf = (d: any) => d.spec.template.spec.containers;
const path = '.spec.template.spec.containers[name="a"].image';

describe('server-side apply', () => {
  it('creates, owns what it applied, and removes what it stops applying, list elements included', async () => {
    const created = await apply(POD, pod(c('a', 'img:1') + c('b', 'img:1')), 'alice');
    expect(created.code).toBe(201);
    const mf = created.json.metadata.managedFields;
    expect(mf).toHaveLength(1);
    expect(mf[0]).toMatchObject({ manager: 'alice', operation: 'Apply', apiVersion: 'apps/v1', fieldsType: 'FieldsV1' });
    expect(mf[0].fieldsV1['f:spec']['f:template']['f:spec']['f:containers']).toHaveProperty(['k:{"name":"a"}', 'f:image']);
    const second = await apply(POD, pod(c('a', 'img:1')), 'alice');
    expect(second.code).toBe(200);
    expect(containersOf(second.json).map((x: { name: string }) => x.name)).toEqual(['a']);
  });

  it('a field applied with the same value by two managers is shared; a different value conflicts until forced', async () => {
    expect((await apply(POD, pod(c('a', 'img:1')), 'bob')).code).toBe(200);
    const conflict = await apply(POD, pod(c('a', 'img:2')), 'carol');
    expect(conflict.code).toBe(409);
    expect(conflict.json.reason).toBe('Conflict');
    expect(conflict.json.message).toBe(`Apply failed with 2 conflicts: conflicts with "alice" using apps/v1:\n- ${path}\nconflicts with "bob" using apps/v1:\n- ${path}`);
    expect(conflict.json.details.causes).toEqual([
      { reason: 'FieldManagerConflict', message: 'conflict with "alice" using apps/v1', field: path },
      { reason: 'FieldManagerConflict', message: 'conflict with "bob" using apps/v1', field: path },
    ]);
    const forced = await apply(POD, pod(c('a', 'img:2')), 'carol', true);
    expect(forced.code).toBe(200);
    expect(containersOf(forced.json)[0].image).toBe('img:2');
    const owners = forced.json.metadata.managedFields.filter((m: any) => m.fieldsV1?.['f:spec']?.['f:template']?.['f:spec']?.['f:containers']?.['k:{"name":"a"}']?.['f:image']);
    expect(owners.map((m: { manager: string }) => m.manager)).toEqual(['carol']);
  });

  it('refuses an apply without a field manager, and a body that names another kind', async () => {
    const r = await new Promise<{ code: number; json: any }>((resolve, reject) => {
      const req = http.request({ socketPath: t.api.socketPath, path: POD, method: 'PATCH', headers: { 'content-type': 'application/apply-patch+yaml' } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(pod(c('a', 'img:1')));
    });
    expect(r.code).toBe(422);
    expect(r.json.details.causes[0]).toMatchObject({ field: 'fieldManager', reason: 'FieldValueRequired' });
    const wrong = await apply(POD, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\n', 'alice');
    expect(wrong.code).toBe(400);
  });
});
