// Validation of the parts of a pod spec the kubelet resolves from other objects or runs itself: env
// (valueFrom, envFrom), volume sources' item paths and modes (configMap, secret, downwardAPI, projected),
// volume mount subPath/subPathExpr and lifecycle handlers. Field paths and wording as the API server's.
import type { Container, DownwardAPIVolumeFile, KeyToPath, LifecycleHandler, PodSpec } from './api-core.js';
import type { FieldErrors } from './field-errors.js';
import { qualifiedName } from './names.js';
import { configKeyErrors } from './validation-secret.js';

const FILE_MODE = 'must be a number between 0 and 0777 (octal), both inclusive';
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const ENV_NAME_MESSAGE =
  "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
const ENV_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'];
const VOLUME_FIELD_PATHS = ['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid'];
const RESOURCES = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];
const SUBSCRIPT = /^(metadata\.(?:labels|annotations))\['(.*)'\]$/;

/** A path below a volume: relative, without `..` elements. */
function localDescendingPath(e: FieldErrors, field: string, p: string): void {
  if (p.startsWith('/')) e.invalid(field, p, 'must be a relative path');
  if (p.split('/').includes('..')) e.invalid(field, p, "must not contain '..'");
}

/** As localDescendingPath, and not starting with `..` (reserved for the AtomicWriter's own entries). */
function localNonReservedPath(e: FieldErrors, field: string, p: string): void {
  localDescendingPath(e, field, p);
  if (p.startsWith('..') && !p.startsWith('../')) e.invalid(field, p, "must not start with '..'");
}

function fileMode(e: FieldErrors, field: string, mode: unknown): void {
  if (mode !== undefined && !(Number.isInteger(mode) && (mode as number) >= 0 && (mode as number) <= 0o777)) e.invalid(field, mode, FILE_MODE);
}

function keyToPaths(e: FieldErrors, path: string, items: KeyToPath[] | undefined, paths: Set<string>): void {
  (items ?? []).forEach((kp, i) => {
    const p = `${path}[${i}]`;
    if (!kp.key) e.required(`${p}.key`);
    if (!kp.path) e.required(`${p}.path`);
    else {
      localNonReservedPath(e, `${p}.path`, kp.path);
      if (paths.has(kp.path)) e.invalid(p, kp.path, 'conflicting duplicate paths');
      paths.add(kp.path);
    }
    fileMode(e, `${p}.mode`, kp.mode);
  });
}

function fieldSelector(e: FieldErrors, path: string, fieldPath: string | undefined, allowed: string[]): void {
  if (!fieldPath) {
    e.required(`${path}.fieldPath`);
    return;
  }
  const sub = SUBSCRIPT.exec(fieldPath);
  if (sub) e.check(`${path}.fieldPath`, sub[2], qualifiedName(sub[2]));
  else if (!allowed.includes(fieldPath)) e.notSupported(`${path}.fieldPath`, fieldPath, allowed);
}

function resourceSelector(e: FieldErrors, path: string, resource: string | undefined, needContainer: boolean, containerName?: string): void {
  if (needContainer && !containerName) e.required(`${path}.containerName`);
  if (!resource) e.required(`${path}.resource`);
  else if (!RESOURCES.includes(resource) && !/^(limits|requests)\.hugepages-/.test(resource)) e.notSupported(`${path}.resource`, resource, RESOURCES);
}

function downwardFiles(e: FieldErrors, path: string, items: DownwardAPIVolumeFile[] | undefined, paths: Set<string>): void {
  (items ?? []).forEach((f, i) => {
    const p = `${path}[${i}]`;
    if (!f.path) e.required(`${p}.path`);
    else {
      localNonReservedPath(e, `${p}.path`, f.path);
      if (paths.has(f.path)) e.invalid(p, f.path, 'conflicting duplicate paths');
      paths.add(f.path);
    }
    if (f.fieldRef && f.resourceFieldRef) e.invalid(p, '', 'fieldRef and resourceFieldRef can not be specified simultaneously');
    else if (f.fieldRef) fieldSelector(e, `${p}.fieldRef`, f.fieldRef.fieldPath, VOLUME_FIELD_PATHS);
    else if (f.resourceFieldRef) resourceSelector(e, `${p}.resourceFieldRef`, f.resourceFieldRef.resource, true, f.resourceFieldRef.containerName);
    else e.required(p, 'one of fieldRef and resourceFieldRef is required');
    fileMode(e, `${p}.mode`, f.mode);
  });
}

function handler(e: FieldErrors, path: string, h: LifecycleHandler, grace: number | undefined): void {
  const kinds = (['exec', 'httpGet', 'tcpSocket', 'sleep'] as const).filter((k) => h[k] !== undefined);
  if (kinds.length === 0) {
    e.required(path, 'must specify a handler type');
    return;
  }
  if (kinds.length > 1) e.forbidden(`${path}.${kinds[1]}`, 'may not specify more than 1 handler type');
  if (h.exec && !h.exec.command?.length) e.required(`${path}.exec.command`);
  if (h.httpGet && (h.httpGet.port === undefined || h.httpGet.port === '')) e.required(`${path}.httpGet.port`);
  if (h.sleep) {
    const s = h.sleep.seconds;
    const g = grace ?? 30;
    if (!Number.isInteger(s) || s <= 0 || s > g) e.invalid(`${path}.sleep.seconds`, s, `must be greater than 0 and less than terminationGracePeriodSeconds (${g})`);
  }
}

function container(e: FieldErrors, path: string, c: Container, grace: number | undefined): void {
  (c.env ?? []).forEach((ev, j) => {
    const p = `${path}.env[${j}]`;
    if (ev.name && !ENV_NAME.test(ev.name)) e.invalid(`${p}.name`, ev.name, ENV_NAME_MESSAGE);
    const vf = ev.valueFrom;
    if (!vf) return;
    if (ev.value) e.invalid(`${p}.valueFrom`, '', 'may not be specified when `value` is not empty');
    const set = (['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef'] as const).filter((k) => vf[k] !== undefined);
    if (set.length === 0) {
      e.invalid(`${p}.valueFrom`, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`');
      return;
    }
    if (set.length > 1) {
      e.invalid(`${p}.valueFrom`, '', 'may not have more than one field specified at a time');
      return;
    }
    if (vf.fieldRef) fieldSelector(e, `${p}.valueFrom.fieldRef`, vf.fieldRef.fieldPath, ENV_FIELD_PATHS);
    if (vf.resourceFieldRef) resourceSelector(e, `${p}.valueFrom.resourceFieldRef`, vf.resourceFieldRef.resource, false);
    for (const which of ['configMapKeyRef', 'secretKeyRef'] as const) {
      const ref = vf[which];
      if (!ref) continue;
      if (!ref.name) e.required(`${p}.valueFrom.${which}.name`);
      if (!ref.key) e.required(`${p}.valueFrom.${which}.key`);
      else e.check(`${p}.valueFrom.${which}.key`, ref.key, configKeyErrors(ref.key));
    }
  });
  (c.envFrom ?? []).forEach((ef, j) => {
    const p = `${path}.envFrom[${j}]`;
    if (ef.prefix && !ENV_NAME.test(ef.prefix)) e.invalid(`${p}.prefix`, ef.prefix, ENV_NAME_MESSAGE);
    const set = (['configMapRef', 'secretRef'] as const).filter((k) => ef[k] !== undefined);
    if (set.length === 0) e.invalid(p, '', 'must specify one of: `configMapRef` or `secretRef`');
    else if (set.length > 1) e.invalid(p, '', 'may not have more than one field specified at a time');
    else if (!ef[set[0]]!.name) e.required(`${p}.${set[0]}.name`);
  });
  (c.volumeMounts ?? []).forEach((m, j) => {
    const p = `${path}.volumeMounts[${j}]`;
    if (m.subPath) localDescendingPath(e, `${p}.subPath`, m.subPath);
    if (m.subPathExpr) {
      if (m.subPath) e.invalid(`${p}.subPathExpr`, m.subPathExpr, 'subPathExpr and subPath are mutually exclusive');
      localDescendingPath(e, `${p}.subPathExpr`, m.subPathExpr);
    }
  });
  if (c.lifecycle?.postStart) handler(e, `${path}.lifecycle.postStart`, c.lifecycle.postStart, grace);
  if (c.lifecycle?.preStop) handler(e, `${path}.lifecycle.preStop`, c.lifecycle.preStop, grace);
}

/** The checks above for every volume and container of a pod spec. */
export function validatePodSources(e: FieldErrors, s: PodSpec): void {
  (s.volumes ?? []).forEach((v, i) => {
    const p = `spec.volumes[${i}]`;
    if (v.configMap) {
      fileMode(e, `${p}.configMap.defaultMode`, v.configMap.defaultMode);
      keyToPaths(e, `${p}.configMap.items`, v.configMap.items, new Set());
    }
    if (v.secret) {
      fileMode(e, `${p}.secret.defaultMode`, v.secret.defaultMode);
      keyToPaths(e, `${p}.secret.items`, v.secret.items, new Set());
    }
    if (v.downwardAPI) {
      fileMode(e, `${p}.downwardAPI.defaultMode`, v.downwardAPI.defaultMode);
      downwardFiles(e, `${p}.downwardAPI.items`, v.downwardAPI.items, new Set());
    }
    if (v.ephemeral) {
      const t = v.ephemeral.volumeClaimTemplate;
      if (!t) e.required(`${p}.ephemeral.volumeClaimTemplate`);
      else if (!t.spec?.accessModes?.length) e.required(`${p}.ephemeral.volumeClaimTemplate.spec.accessModes`, 'at least 1 access mode is required');
    }
    if (v.projected) {
      fileMode(e, `${p}.projected.defaultMode`, v.projected.defaultMode);
      const paths = new Set<string>();
      (v.projected.sources ?? []).forEach((src, j) => {
        const sp = `${p}.projected.sources[${j}]`;
        const kinds = (['secret', 'configMap', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle'] as const).filter((k) => src[k] !== undefined);
        if (kinds.length > 1) e.forbidden(sp, 'may not specify more than 1 volume type per source');
        if (src.configMap) keyToPaths(e, `${sp}.configMap.items`, src.configMap.items, paths);
        if (src.secret) keyToPaths(e, `${sp}.secret.items`, src.secret.items, paths);
        if (src.downwardAPI) downwardFiles(e, `${sp}.downwardAPI.items`, src.downwardAPI.items, paths);
        const t = src.serviceAccountToken;
        if (t) {
          const tp = `${sp}.serviceAccountToken`;
          if (!t.path) e.required(`${tp}.path`);
          else {
            localNonReservedPath(e, `${tp}.path`, t.path);
            if (paths.has(t.path)) e.invalid(sp, t.path, 'conflicting duplicate paths');
            paths.add(t.path);
          }
          const exp = t.expirationSeconds;
          if (exp !== undefined && exp < 600) e.invalid(`${tp}.expirationSeconds`, exp, 'may not specify a duration less than 10 minutes');
          else if (exp !== undefined && exp > 2 ** 32) e.invalid(`${tp}.expirationSeconds`, exp, 'may not specify a duration larger than 2^32 seconds');
        }
      });
    }
  });
  const grace = s.terminationGracePeriodSeconds;
  (s.initContainers ?? []).forEach((c, i) => container(e, `spec.initContainers[${i}]`, c, grace));
  (s.containers ?? []).forEach((c, i) => container(e, `spec.containers[${i}]`, c, grace));
  (s.ephemeralContainers ?? []).forEach((c, i) => container(e, `spec.ephemeralContainers[${i}]`, c, grace));
}
