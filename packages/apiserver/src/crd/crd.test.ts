import { createMemoryStore, kindForResource, type KubeObject, lookupKind, type StatusError, type Store } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiV3 } from '../openapi/documents.js';
import { type KubectlServer, startKubectlServer } from '../openapi/testing-kubectl.js';
import { acceptsTable, buildTable } from '../tables/index.js';
import { registerCustomResourceDefinitionKind, scaleOf, withScale } from './index.js';

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'backups.ops.example.com' },
  spec: {
    group: 'ops.example.com',
    scope: 'Namespaced',
    names: { plural: 'backups', singular: 'backup', kind: 'Backup', shortNames: ['bk'] },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
        selectableFields: [{ jsonPath: '.spec.retention' }],
        additionalPrinterColumns: [
          { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
          { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
          { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'A scheduled backup of a database.',
            properties: {
              spec: {
                type: 'object',
                description: 'What to back up and when.',
                required: ['schedule'],
                properties: {
                  schedule: { type: 'string', pattern: '^[0-9*/, -]+$', description: 'Cron schedule of the backup.' },
                  replicas: { type: 'integer', minimum: 1, default: 1 },
                  retention: { type: 'string', enum: ['short', 'long'], default: 'short' },
                  target: { 'x-kubernetes-int-or-string': true },
                },
              },
              status: {
                type: 'object',
                properties: {
                  replicas: { type: 'integer' },
                  conditions: { type: 'array', items: { type: 'object', properties: { type: { type: 'string' }, status: { type: 'string' } } } },
                },
              },
            },
          },
        },
      },
    ],
  },
};

const backup = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'ops.example.com/v1', kind: 'Backup', metadata: { name, namespace: 'default' }, spec });

describe('CustomResourceDefinitions', () => {
  let store: Store;
  beforeAll(async () => {
    store = await createMemoryStore();
    registerCustomResourceDefinitionKind();
    await store.create(crd as KubeObject);
  });

  it('an accepted CRD is established and its kind served', async () => {
    const got = (await store.get('CustomResourceDefinition', '', 'backups.ops.example.com')) as KubeObject;
    expect(got.spec.names).toMatchObject({ singular: 'backup', listKind: 'BackupList' });
    expect(got.status.conditions.map((c: { type: string; status: string }) => [c.type, c.status])).toEqual([
      ['NamesAccepted', 'True'],
      ['Established', 'True'],
    ]);
    expect(got.status.storedVersions).toEqual(['v1']);
  });

  it('prunes unknown fields and fills defaults', async () => {
    const created = await store.create(backup('nightly', { schedule: '0 3 * * *', unknown: 'x', target: 5 }));
    expect(created.spec).toEqual({ schedule: '0 3 * * *', replicas: 1, retention: 'short', target: 5 });
  });

  it('refuses objects that break the schema with the Status kube-apiserver gives', async () => {
    let err: StatusError | undefined;
    try {
      await store.create(backup('bad', { schedule: 'hourly!', replicas: 'two', retention: 'forever' }));
    } catch (e) {
      err = e as StatusError;
    }
    expect(err?.code).toBe(422);
    expect(err?.reason).toBe('Invalid');
    const causes = (err?.details?.causes ?? []).map((c) => [c.field, c.message]);
    expect(causes).toEqual(
      expect.arrayContaining([
        ['spec.schedule', `Invalid value: "hourly!": spec.schedule in body should match '^[0-9*/, -]+$'`],
        ['spec.replicas', 'Invalid value: "string": spec.replicas in body must be of type integer: "string"'],
        ['spec.retention', 'Unsupported value: "forever": supported values: "short", "long"'],
      ]),
    );
    await expect(store.create(backup('missing', {}))).rejects.toMatchObject({ details: { causes: [expect.objectContaining({ field: 'spec.schedule', message: 'Required value' })] } });
  });

  it('refuses a CRD whose schema is not structural', async () => {
    const bad = structuredClone(crd);
    bad.metadata.name = 'things.ops.example.com';
    bad.spec.names = { plural: 'things', singular: 'thing', kind: 'Thing', shortNames: [] };
    (bad.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties as Record<string, unknown>).loose = { description: 'no type' };
    await expect(store.create(bad as KubeObject)).rejects.toMatchObject({
      code: 422,
      details: { causes: [expect.objectContaining({ field: 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[loose].type', message: 'Required value: must not be empty for specified object fields' })] },
    });
  });

  it('prints its additionalPrinterColumns and publishes its schema', async () => {
    const obj = { ...(await store.get('Backup', 'default', 'nightly')), status: { replicas: 1, conditions: [{ type: 'Ready', status: 'True' }] } } as KubeObject;
    const t = buildTable('ops.example.com/v1', 'Backup', [obj]);
    expect(t.columnDefinitions.map((c) => c.name)).toEqual(['Name', 'Schedule', 'Replicas', 'Ready', 'Age']);
    expect(t.rows[0].cells.slice(0, 4)).toEqual(['nightly', '0 3 * * *', 1, 'True']);
    const doc = JSON.parse(openApiV3('apis/ops.example.com/v1')!.json.toString());
    expect(doc.components.schemas['com.example.ops.v1.Backup']['x-kubernetes-group-version-kind']).toEqual([{ group: 'ops.example.com', kind: 'Backup', version: 'v1' }]);
    expect(doc.components.schemas['com.example.ops.v1.BackupSpec'].properties.schedule.description).toBe('Cron schedule of the backup.');
  });

  it('selectableFields become field selectors', async () => {
    const obj = await store.get('Backup', 'default', 'nightly');
    expect(lookupKind('Backup')!.fields['spec.retention'](obj)).toBe('short');
    const list = await store.list('Backup', { namespace: 'default', fieldSelector: 'spec.retention=long' });
    expect(list.items).toEqual([]);
  });

  it('a deleted CRD stops serving its kind', async () => {
    const other = structuredClone(crd);
    other.metadata.name = 'snapshots.ops.example.com';
    other.spec.names = { plural: 'snapshots', singular: 'snapshot', kind: 'Snapshot', shortNames: [] };
    await store.create(other as KubeObject);
    expect(lookupKind('Snapshot')?.resource).toBe('snapshots');
    await store.delete('CustomResourceDefinition', '', 'snapshots.ops.example.com');
    expect(lookupKind('Snapshot')).toBeUndefined();
    expect(kindForResource('snapshots')).toBeUndefined();
    expect(openApiV3('apis/ops.example.com/v1')!.json.toString()).not.toContain('Snapshot');
  });

  it('reads and writes the scale subresource at the CRD\'s paths', async () => {
    const obj = { ...(await store.get('Backup', 'default', 'nightly')), status: { replicas: 1 } } as KubeObject;
    const paths = crd.spec.versions[0].subresources.scale;
    expect(scaleOf(obj, paths)).toMatchObject({ kind: 'Scale', spec: { replicas: 1 }, status: { replicas: 1 } });
    expect(withScale(obj, paths, { spec: { replicas: 3 } }).spec.replicas).toBe(3);
    expect(() => withScale(obj, paths, { spec: { replicas: -1 } })).toThrow(/non-negative/);
  });
});

describe.runIf(requirePeers('kubectl against a custom resource', [peers.kubectl]))('kubectl and a CRD', () => {
  let store: Store;
  let srv: KubectlServer;
  beforeAll(async () => {
    store = await createMemoryStore();
    registerCustomResourceDefinitionKind();
    await store.create(structuredClone(crd) as KubeObject).catch(() => undefined);
    await store.create(backup('weekly', { schedule: '0 4 * * 0', replicas: 2 }));
    srv = await startKubectlServer(async (req, _body, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/apis/ops.example.com/v1/namespaces/default/backups' || !acceptsTable(req.headers.accept)) return false;
      const list = await store.list('Backup', { namespace: 'default' });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(buildTable('ops.example.com/v1', 'Backup', list.items)));
      return true;
    });
  });
  afterAll(() => srv?.close());

  it('lists with the printer columns, through the short name', async () => {
    const r = await srv.kubectl(['get', 'bk']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/));
    expect(lines[0]).toEqual(['NAME', 'SCHEDULE', 'REPLICAS', 'READY', 'AGE']);
    // A missing value is a null cell, which kubectl prints as blank (READY here).
    expect(lines[1]).toEqual(['weekly', '0 4 * * 0', '2', expect.stringMatching(/^\d+s$/)]);
  });

  it('explains the custom kind from its schema', async () => {
    const r = await srv.kubectl(['explain', 'backups.spec']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/GROUP:\s+ops.example.com/);
    expect(r.stdout).toMatch(/schedule\s+<string> -required-/);
    expect(r.stdout).toContain('Cron schedule of the backup.');
  });
});
