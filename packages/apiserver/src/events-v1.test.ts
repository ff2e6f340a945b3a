// events.k8s.io/v1 Events with real kubectl (v1.32): the same stored objects as core/v1 Events under the
// newer field names, in discovery, with kubectl's Event columns, created, patched, watched and validated as
// kube-apiserver does for that group.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeObjectBytes, encodeObject } from './protobuf/index.js';
import { runClient, startTestApiServer, type TestApiServer } from './testing.js';

const ok = requirePeers('events.k8s.io/v1 with kubectl', [peers.kubectl]);
const okOld = requirePeers('events.k8s.io/v1 with kubectl v1.20', [peers.kubectl, peers.kubectlOld]);

const v1Event = (name: string, extra = '') => `apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: ${name}, namespace: default}
eventTime: "2026-11-26T10:00:00.000000Z"
reportingController: example.com/operator
reportingInstance: operator-0
action: Reconcile
reason: Synced
type: Normal
note: synced the widget
regarding: {kind: Pod, name: web, namespace: default}
${extra}`;

describe.runIf(ok)('events.k8s.io/v1 Event', () => {
  let t: TestApiServer;
  const kubectl = (args: string[], stdin?: string) => runClient('kubectl', args, { kubeconfig: t.kubeconfig, stdin });
  beforeAll(async () => {
    t = await startTestApiServer();
    // What a kubelet records: a core/v1 Event.
    await t.store.create({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.1', namespace: 'default' },
      involvedObject: { kind: 'Pod', name: 'web', namespace: 'default', fieldPath: 'spec.containers{c}' },
      reason: 'Pulled',
      message: 'Container image "busybox" already present on machine',
      source: { component: 'kubelet', host: 'node-1' },
      firstTimestamp: new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
      lastTimestamp: new Date(Date.now() - 30_000).toISOString().replace(/\.\d+Z$/, 'Z'),
      count: 2,
      type: 'Normal',
    } as never);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('discovery lists the resource, and kubectl shows core Events with the Event columns', async () => {
    const r = await kubectl(['api-resources', '--api-group=events.k8s.io']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^events\s+ev\s+events\.k8s\.io\/v1\s+true\s+Event$/m);
    const g = await kubectl(['get', 'events.events.k8s.io']);
    expect(g.code, g.stderr).toBe(0);
    expect(g.stdout).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n3\ds\s+Normal\s+Pulled\s+pod\/web\s+Container image "busybox" already present on machine\n$/);
    const wide = await kubectl(['get', 'events.v1.events.k8s.io', '-o', 'wide']);
    expect(wide.stdout).toMatch(/SUBOBJECT\s+SOURCE\s+MESSAGE\s+FIRST SEEN\s+COUNT\s+NAME/);
    expect(wide.stdout).toMatch(/spec\.containers\{c\}\s+kubelet, node-1\s+Container image.*\s+6\ds\s+2\s+web\.1/);
  });

  it.runIf(okOld)('kubectl v1.20 lists the group with the same columns', async () => {
    const g = await runClient(KUBECTL_OLD, ['get', 'events.events.k8s.io'], { kubeconfig: t.kubeconfig });
    expect(g.code, g.stderr).toBe(0);
    expect(g.stdout).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n\d+s\s+Normal\s+Pulled\s+pod\/web\s+Container image/);
  });

  it('reads the stored Event in the events.k8s.io form', async () => {
    const r = await kubectl(['get', 'events.events.k8s.io', 'web.1', '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const e = JSON.parse(r.stdout);
    expect(e).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      regarding: { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{c}' },
      note: 'Container image "busybox" already present on machine',
      deprecatedSource: { component: 'kubelet', host: 'node-1' },
      deprecatedCount: 2,
      reason: 'Pulled',
    });
    expect(e.involvedObject).toBeUndefined();
    expect(e.message).toBeUndefined();
  });

  it('creates through the group land in the same storage; patches apply to the group\'s field names', async () => {
    const c = await kubectl(['create', '-f', '-'], v1Event('op.1'));
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout.trim()).toBe('event.events.k8s.io/op.1 created');
    const core = JSON.parse((await kubectl(['get', 'events', 'op.1', '-o', 'json'])).stdout);
    expect(core).toMatchObject({ apiVersion: 'v1', involvedObject: { kind: 'Pod', name: 'web' }, message: 'synced the widget', reportingComponent: 'example.com/operator', reportingInstance: 'operator-0', action: 'Reconcile' });
    // Through the group, an Event is immutable but for its series (upstream's update validation).
    const p = await kubectl(['patch', 'events.events.k8s.io', 'op.1', '--type=merge', '-p', '{"series":{"count":3,"lastObservedTime":"2026-11-26T10:05:00.000000Z"}}']);
    expect(p.code, p.stderr).toBe(0);
    const after = JSON.parse((await kubectl(['get', 'events', 'op.1', '-o', 'json'])).stdout);
    expect(after.message).toBe('synced the widget');
    expect(after.series).toEqual({ count: 3, lastObservedTime: '2026-11-26T10:05:00.000000Z' });
    const note = await kubectl(['patch', 'events.events.k8s.io', 'op.1', '--type=merge', '-p', '{"note":"patched","series":{"count":1,"lastObservedTime":"2026-11-26T10:06:00.000000Z"}}']);
    expect(note.code).not.toBe(0);
    expect(note.stderr).toContain('The Event "op.1" is invalid: \n* series.count: Invalid value: "": should be at least 2\n* message: Invalid value: "patched": field is immutable');
    // Through core/v1 the same object stays writable, as upstream keeps it for old clients.
    const corePatch = await kubectl(['patch', 'events', 'op.1', '--type=merge', '-p', '{"message":"patched through core"}']);
    expect(corePatch.code, corePatch.stderr).toBe(0);
    expect(JSON.parse((await kubectl(['get', 'events.events.k8s.io', 'op.1', '-o', 'json'])).stdout).note).toBe('patched through core');
    const sel = await kubectl(['get', 'events.events.k8s.io', '--field-selector', 'regarding.name=web,reportingController=example.com/operator', '-o', 'name']);
    expect(sel.stdout.trim()).toBe('event.events.k8s.io/op.1');
    const explain = await kubectl(['explain', 'events.regarding', '--api-version=events.k8s.io/v1']);
    expect(explain.code, explain.stderr).toBe(0);
    expect(explain.stdout).toContain('GROUP:      events.k8s.io');
    const apply = await kubectl(['apply', '-f', '-'], v1Event('op.2', 'series: {count: 2, lastObservedTime: "2026-11-26T10:07:00.000000Z"}\n'));
    expect(apply.code, apply.stderr).toBe(0);
    expect((await kubectl(['get', 'events', 'op.2', '-o', 'jsonpath={.series.count}'])).stdout).toBe('2');
    const reapply = await kubectl(['apply', '-f', '-'], v1Event('op.2', 'series: {count: 5, lastObservedTime: "2026-11-26T10:08:00.000000Z"}\n'));
    expect(reapply.code, reapply.stderr).toBe(0);
    expect((await kubectl(['get', 'events', 'op.2', '-o', 'jsonpath={.series.count}'])).stdout).toBe('5');
    expect((await kubectl(['delete', 'events.events.k8s.io', 'op.1'])).stdout.trim()).toBe('event.events.k8s.io "op.1" deleted');
    expect((await kubectl(['get', 'events', 'op.1'])).stderr).toContain('not found');
  });

  it('refuses a create missing what the group requires, with kube-apiserver\'s Invalid shape', async () => {
    const bad = v1Event('bad.1').replace('reportingController: example.com/operator\n', '').replace('type: Normal', 'type: Info') + 'deprecatedCount: 4\n';
    const r = await kubectl(['create', '-f', '-'], bad);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The Event "bad.1" is invalid:');
    // Upstream names the causes with the core field names.
    expect(r.stderr).toContain('* reportingController: Required value\n');
    expect(r.stderr).toContain('* type: Invalid value: "": has invalid value: Info\n');
    expect(r.stderr).toContain('* count: Invalid value: "": needs to be unset');
    expect((await kubectl(['get', 'events', 'bad.1'])).stderr).toContain('not found');
  });

  it('kubectl get events.events.k8s.io -w prints new Events as rows', async () => {
    const child = spawn('kubectl', ['get', 'events.events.k8s.io', '-w', '--no-headers'], { env: { PATH: process.env.PATH ?? '', KUBECONFIG: t.kubeconfig, HOME: t.dir } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    try {
      for (let i = 0; i < 100 && !out.includes('Pulled'); i++) await new Promise((r) => setTimeout(r, 50));
      await t.store.create({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'watched.1', namespace: 'default' }, involvedObject: { kind: 'Node', name: 'n2' }, message: 'seen by -w', type: 'Warning', reason: 'Watched', count: 1 } as never);
      for (let i = 0; i < 100 && !out.includes('seen by -w'); i++) await new Promise((r) => setTimeout(r, 50));
      expect(out).toMatch(/\s+Warning\s+Watched\s+node\/n2\s+seen by -w\n/);
    } finally {
      child.kill();
    }
  });

  it('a watch of the group sees core writes in the group\'s form', async () => {
    const lines: string[] = [];
    const req = http.request({ socketPath: t.api.socketPath, path: '/apis/events.k8s.io/v1/namespaces/default/events?watch=true&resourceVersion=0' });
    const got = new Promise<void>((resolve) => {
      req.on('response', (res) => {
        let buf = '';
        res.on('data', (d) => {
          buf += d;
          const parts = buf.split('\n');
          buf = parts.pop() ?? '';
          lines.push(...parts);
          if (lines.some((l) => l.includes('late.1'))) resolve();
        });
      });
    });
    req.end();
    await new Promise((r) => setTimeout(r, 200));
    await t.store.create({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'late.1', namespace: 'default' }, involvedObject: { kind: 'Node', name: 'n1' }, message: 'late', type: 'Warning', reason: 'Late' } as never);
    await got;
    req.destroy();
    const ev = JSON.parse(lines.find((l) => l.includes('late.1'))!);
    expect(ev).toMatchObject({ type: 'ADDED', object: { apiVersion: 'events.k8s.io/v1', kind: 'Event', regarding: { kind: 'Node', name: 'n1' }, note: 'late' } });
  });

  it('protobuf both ways (what client-go\'s events recorder posts): the group\'s own message numbers', async () => {
    const send = (method: string, path: string, body: Buffer | undefined, headers: Record<string, string>) =>
      new Promise<{ code: number; body: Buffer }>((resolve, reject) => {
        const req = http.request({ socketPath: t.api.socketPath, path, method, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const pb = 'application/vnd.kubernetes.protobuf';
    const event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'pb.1', namespace: 'default' },
      eventTime: '2026-11-26T10:00:00.000000Z',
      reportingController: 'example.com/pb',
      reportingInstance: 'pb-0',
      action: 'Binding',
      reason: 'Scheduled',
      type: 'Normal',
      note: 'sent as protobuf',
      regarding: { kind: 'Pod', name: 'web', namespace: 'default' },
    };
    const c = await send('POST', '/apis/events.k8s.io/v1/namespaces/default/events', encodeObject(event), { 'content-type': pb, accept: pb });
    expect(c.code, c.body.toString()).toBe(201);
    expect(decodeObjectBytes(c.body)).toMatchObject({ apiVersion: 'events.k8s.io/v1', note: 'sent as protobuf', regarding: { name: 'web' } });
    const core = await t.store.get('Event', 'default', 'pb.1');
    expect(core).toMatchObject({ message: 'sent as protobuf', reportingComponent: 'example.com/pb', involvedObject: { kind: 'Pod', name: 'web' } });
  });
});
