// The audit log backend (kube-apiserver's --audit-log-path with --audit-policy-file): every event the
// policy keeps, as one audit.k8s.io/v1 Event JSON object per line. Writes are buffered and appended off the
// request path; the file is created 0600 and a symlink in its place is refused.
import fs from 'node:fs';
import type { AuditEvent, AuditSink, UserInfo } from '../auth-seams.js';
import { type AuditPolicy, auditLevel } from './audit-policy.js';

function apiUser(u: UserInfo) {
  return { username: u.name, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups, ...(u.extra ? { extra: u.extra } : {}) };
}

/** An event as upstream serialises it (the levels above Metadata are recorded at Metadata here). */
export function auditEventJson(ev: AuditEvent, level: string): Record<string, unknown> {
  const ref = ev.objectRef;
  return {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level,
    auditID: ev.auditID,
    stage: ev.stage,
    requestURI: ev.requestURI,
    verb: ev.verb,
    user: apiUser(ev.user),
    ...(ev.impersonatedUser ? { impersonatedUser: apiUser(ev.impersonatedUser) } : {}),
    sourceIPs: ev.sourceIPs,
    ...(ev.userAgent ? { userAgent: ev.userAgent } : {}),
    ...(ref ? { objectRef: Object.fromEntries(Object.entries(ref).filter(([, v]) => v !== undefined && v !== '')) } : {}),
    ...(ev.responseStatus ? { responseStatus: { metadata: {}, ...ev.responseStatus } } : {}),
    requestReceivedTimestamp: ev.requestReceivedTimestamp,
    stageTimestamp: ev.stageTimestamp,
  };
}

export class AuditLogSink implements AuditSink {
  private buffer: string[] = [];
  private fd: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    file: string,
    private readonly policy: AuditPolicy,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
  }

  record(ev: AuditEvent): void {
    const { level, omitStages } = auditLevel(this.policy, ev);
    if (level === 'None' || omitStages.includes(ev.stage)) return;
    this.buffer.push(`${JSON.stringify(auditEventJson(ev, level))}\n`);
    this.timer ??= setTimeout(() => this.flush(), 50);
  }

  /** Writes what is buffered (from a timer, so requests never wait on the disk). */
  flush(): void {
    this.timer = undefined;
    if (!this.buffer.length) return;
    const data = this.buffer.join('');
    this.buffer = [];
    try {
      fs.writeSync(this.fd, data);
    } catch (err) {
      this.onError(err);
    }
  }

  /** Flushes synchronously and closes the file. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.buffer.length) fs.writeSync(this.fd, this.buffer.join(''));
    this.buffer = [];
    fs.closeSync(this.fd);
  }
}
