import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../auth-seams.js';
import { AuditLogSink } from './audit-log.js';
import { AuditPolicyError, auditLevel, parseAuditPolicy } from './audit-policy.js';

const POLICY = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-scheduler"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["secrets"]
- level: Metadata
  namespaces: ["dev"]
- level: None
`;

const ev = (over: Partial<AuditEvent> = {}): AuditEvent => ({
  auditID: 'a1',
  stage: 'ResponseComplete',
  requestURI: '/api/v1/namespaces/dev/pods',
  verb: 'list',
  user: { name: 'alice', groups: ['dev', 'system:authenticated'] },
  sourceIPs: ['127.0.0.1'],
  userAgent: 'kubectl/v1.32.4',
  objectRef: { resource: 'pods', namespace: 'dev', apiGroup: '', apiVersion: 'v1' },
  responseStatus: { code: 403, reason: 'Forbidden' },
  requestReceivedTimestamp: '2026-11-26T10:00:00.000000Z',
  stageTimestamp: '2026-11-26T10:00:00.001000Z',
  ...over,
});

describe('audit policy and log', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-audit-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('takes the first matching rule', () => {
    const p = parseAuditPolicy(POLICY);
    expect(auditLevel(p, ev()).level).toBe('Metadata');
    expect(auditLevel(p, ev({ objectRef: { resource: 'secrets', namespace: 'prod', apiGroup: '' } })).level).toBe('RequestResponse');
    expect(auditLevel(p, ev({ user: { name: 'system:kube-scheduler', groups: [] } })).level).toBe('None');
    expect(auditLevel(p, ev({ objectRef: undefined, requestURI: '/healthz/ping' })).level).toBe('None');
    expect(auditLevel(p, ev({ objectRef: { resource: 'pods', namespace: 'prod', apiGroup: '' } })).level).toBe('None');
  });

  it('refuses a bad policy naming the field', () => {
    expect(() => parseAuditPolicy('apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n', 'p.yaml')).toThrow(
      new AuditPolicyError('p.yaml: rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"'),
    );
    expect(() => parseAuditPolicy('kind: Policy\n', 'p.yaml')).toThrow('expected apiVersion audit.k8s.io/v1, kind Policy');
  });

  it('writes audit.k8s.io/v1 Events as JSON lines, owner-only, leaving out omitted stages', () => {
    const file = path.join(dir, 'audit.log');
    const sink = new AuditLogSink(file, parseAuditPolicy(POLICY));
    sink.record(ev({ stage: 'RequestReceived' }));
    sink.record(ev());
    sink.record(ev({ objectRef: { resource: 'pods', namespace: 'prod', apiGroup: '' } }));
    sink.close();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([
      {
        kind: 'Event',
        apiVersion: 'audit.k8s.io/v1',
        level: 'Metadata',
        auditID: 'a1',
        stage: 'ResponseComplete',
        requestURI: '/api/v1/namespaces/dev/pods',
        verb: 'list',
        user: { username: 'alice', groups: ['dev', 'system:authenticated'] },
        sourceIPs: ['127.0.0.1'],
        userAgent: 'kubectl/v1.32.4',
        objectRef: { resource: 'pods', namespace: 'dev', apiVersion: 'v1' },
        responseStatus: { metadata: {}, code: 403, reason: 'Forbidden' },
        requestReceivedTimestamp: '2026-11-26T10:00:00.000000Z',
        stageTimestamp: '2026-11-26T10:00:00.001000Z',
      },
    ]);
  });

  it('refuses to write through a symlink', () => {
    const target = path.join(dir, 'elsewhere');
    fs.writeFileSync(target, '');
    fs.symlinkSync(target, path.join(dir, 'audit.log'));
    expect(() => new AuditLogSink(path.join(dir, 'audit.log'), parseAuditPolicy(POLICY))).toThrow(/ELOOP/);
  });
});
