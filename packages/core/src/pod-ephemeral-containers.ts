// The pods/ephemeralcontainers subresource: the one way to change a pod's spec.ephemeralContainers (how
// `kubectl debug` adds a debug container to a running pod). Ephemeral containers can only be added: an
// existing one may not be removed or changed. They share the pod's namespaces and volumes but take no
// ports, probes, lifecycle hooks or resources, and never restart.
import type { EphemeralContainer, Pod } from './api-core.js';
import type { KubeObject } from './api-meta.js';
import { defaultPullPolicy } from './defaults.js';
import { InvalidError, type StatusCause } from './errors.js';
import { FieldErrors } from './field-errors.js';
import { dns1123Label } from './names.js';
import { validationErrors } from './validation.js';

const PATH = 'spec.ephemeralContainers';
const FORBIDDEN_FIELDS = ['ports', 'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle', 'resources', 'resizePolicy', 'restartPolicy'] as const;

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The next pod: the current one with only its ephemeral containers taken from `incoming`. */
export function withEphemeralContainers(cur: Pod, incoming: KubeObject): Pod {
  const next = structuredClone(cur);
  next.spec.ephemeralContainers = (incoming as Pod).spec?.ephemeralContainers ?? [];
  if (next.spec.ephemeralContainers.length === 0) delete next.spec.ephemeralContainers;
  for (const c of next.spec.ephemeralContainers ?? []) {
    c.terminationMessagePath ??= '/dev/termination-log';
    c.terminationMessagePolicy ??= 'File';
    c.imagePullPolicy ??= defaultPullPolicy(c.image);
  }
  return next;
}

/** Field errors of an ephemeral containers update, worded as the API server's. */
export function ephemeralContainersUpdateErrors(next: Pod, prev: Pod): StatusCause[] {
  const e = new FieldErrors();
  const old = new Map((prev.spec.ephemeralContainers ?? []).map((c) => [c.name, c]));
  const now = new Map((next.spec.ephemeralContainers ?? []).map((c) => [c.name, c]));
  for (const [name, c] of old) {
    if (!now.has(name)) e.forbidden(PATH, `existing ephemeral containers ${JSON.stringify(name)} may not be removed\n`);
    else if (!same(now.get(name), c)) e.forbidden(PATH, `existing ephemeral containers ${JSON.stringify(name)} may not be changed\n`);
  }
  const others = new Set([...(next.spec.initContainers ?? []), ...next.spec.containers].map((c) => c.name));
  const seen = new Set<string>();
  (next.spec.ephemeralContainers ?? []).forEach((c: EphemeralContainer, i) => {
    const p = `${PATH}[${i}]`;
    if (!c.name) e.required(`${p}.name`);
    else {
      e.check(`${p}.name`, c.name, dns1123Label(c.name));
      if (others.has(c.name) || seen.has(c.name)) e.duplicate(`${p}.name`, c.name);
      seen.add(c.name);
    }
    if (!c.image) e.required(`${p}.image`);
    for (const f of FORBIDDEN_FIELDS) {
      if ((c as unknown as Record<string, unknown>)[f] !== undefined && !(f === 'resources' && Object.keys(c.resources ?? {}).length === 0)) e.forbidden(`${p}.${f}`, 'cannot be set for an Ephemeral Container');
    }
    (c.volumeMounts ?? []).forEach((m, j) => {
      if (m.subPath) e.forbidden(`${p}.volumeMounts[${j}].subPath`, 'cannot be set for an Ephemeral Container');
    });
    if (c.targetContainerName && !others.has(c.targetContainerName)) e.notFound(`${p}.targetContainerName`, c.targetContainerName);
  });
  return e.list;
}

/** Throws InvalidError (Pod "name" is invalid: ...) when the ephemeral containers update is not allowed. */
export function assertValidEphemeralUpdate(next: Pod, prev: Pod): void {
  const causes = [...validationErrors(next), ...ephemeralContainersUpdateErrors(next, prev)];
  if (causes.length) throw new InvalidError('Pod', next.metadata.name ?? '', '', causes);
}
