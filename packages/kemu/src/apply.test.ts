// `kemu apply -f` with a multi-document manifest against a real API server socket: valid documents apply,
// each invalid one is reported on its own, and the exit status says something was not applied.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMemoryStore, type Store } from '@kemu/core';
import { type ApiServer, startApiServer } from '@kemu/apiserver';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { apply } from './commands.js';

let store: Store;
let server: ApiServer;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-apply-'));

beforeAll(async () => {
  store = await createMemoryStore();
  server = await startApiServer(store, path.join(dir, 'kemu.sock'), {});
});
afterAll(async () => {
  await server.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const MANIFEST = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: good}
spec:
  selector: {matchLabels: {app: good}}
  template:
    metadata: {labels: {app: good}}
    spec: {containers: [{name: c, image: nginx:1.27}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: mismatched}
spec:
  replicas: -1
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: b}}
    spec: {containers: [{name: c, image: nginx:1.27}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "every minute"
  jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}}}}
---
apiVersion: v1
kind: Service
metadata: {name: good}
spec: {selector: {app: good}, ports: [{port: 80}]}
`;

it('applies the valid documents and reports each invalid one as kubectl does', async () => {
  const file = path.join(dir, 'app.yaml');
  fs.writeFileSync(file, MANIFEST);
  const log: string[] = [];
  const err: string[] = [];
  const code = await apply(file, { stateDir: dir }, { log: (l) => log.push(l), err: (l) => err.push(l) });
  expect(code).toBe(1);
  expect(log).toEqual(['deployment.apps/good created', 'service/good created']);
  expect(err).toEqual([
    'The Deployment "mismatched" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: {"app":"b"}: `selector` does not match template `labels`]',
    `error: resource mapping not found for kind "Widget" in "${file} (document 3)": no matches for kind "Widget" in version "example.com/v1"`,
    'The CronJob "tick" is invalid: spec.schedule: Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]',
  ]);
  expect((await store.get('Deployment', 'default', 'good')).spec.replicas).toBe(1);
  expect((await store.list('Deployment', { namespace: 'default' })).items).toHaveLength(1);
  // A second apply of the same file changes nothing it already applied.
  const again: string[] = [];
  await apply(file, { stateDir: dir }, { log: (l) => again.push(l), err: () => undefined });
  expect(again).toEqual(['deployment.apps/good unchanged', 'service/good unchanged']);
});
