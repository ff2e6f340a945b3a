// Validation on create and update, with field paths and wording as the API server reports them.
import { isIP } from 'node:net';
import type { ConfigMap, Container, NodeSelectorTerm, Pod, PodSpec, Toleration } from './api-core.js';
import type { KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';
import { InvalidError, type StatusCause } from './errors.js';
import { FieldErrors } from './field-errors.js';
import { kindHooks } from './kind-hooks.js';
import { type KindInfo, lookupKind } from './kinds.js';
import { dns1123Label, dns1123Subdomain, labelValue, pathSegmentName, qualifiedName } from './names.js';
import { parseQuantity, type Quantity } from './quantity.js';
import { isRBACKind } from './validation-rbac.js';
import { validatePodSources } from './validation-pod-sources.js';
import { validatePodDNSConfig } from './validation-pod-dns.js';
import { validateConfigMapData } from './validation-secret.js';

const RESTART = ['Always', 'Never', 'OnFailure'] as const;
const DNS_POLICY = ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'] as const;
const PULL = ['Always', 'IfNotPresent', 'Never'] as const;
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'] as const;
const EFFECTS = ['NoExecute', 'NoSchedule', 'PreferNoSchedule'] as const;
const ACCESS = ['ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOncePod'] as const;
const VOLUME_MODES = ['Block', 'Filesystem'] as const;
const LABEL_OPS = ['DoesNotExist', 'Exists', 'In', 'NotIn'] as const;
const NODE_OPS = ['DoesNotExist', 'Exists', 'Gt', 'In', 'Lt', 'NotIn'] as const;
const TOTAL_ANNOTATION_SIZE = 256 * 1024;

const oneOf = (v: unknown, set: readonly string[]) => typeof v === 'string' && set.includes(v);

function isCIDR(s: unknown): boolean {
  if (typeof s !== 'string') return false;
  const [ip, len, extra] = s.split('/');
  if (extra !== undefined || len === undefined || !/^\d+$/.test(len)) return false;
  const fam = isIP(ip);
  return fam !== 0 && Number(len) <= (fam === 4 ? 32 : 128);
}

function nameRule(kind: string): (v: string) => string[] {
  // Namespaces are DNS labels; everything else here is a DNS subdomain.
  return kind === 'Namespace' ? dns1123Label : dns1123Subdomain;
}

export function validateMeta(e: FieldErrors, meta: ObjectMeta | undefined, info: KindInfo): void {
  if (!meta) {
    e.required('metadata');
    return;
  }
  if (!meta.name) {
    if (!meta.generateName) e.required('metadata.name', 'name or generateName is required');
  } else {
    const seg = pathSegmentName(meta.name);
    if (seg.length) e.check('metadata.name', meta.name, seg);
    else if (!isRBACKind(info.kind)) e.check('metadata.name', meta.name, nameRule(info.kind)(meta.name));
  }
  if (info.namespaced) {
    if (!meta.namespace) e.required('metadata.namespace');
    else e.check('metadata.namespace', meta.namespace, dns1123Label(meta.namespace));
  } else if (meta.namespace) {
    e.forbidden('metadata.namespace', 'not allowed on this type');
  }
  validateLabels(e, 'metadata.labels', meta.labels);
  if (meta.annotations !== undefined) {
    if (typeof meta.annotations !== 'object' || meta.annotations === null) {
      e.invalid('metadata.annotations', meta.annotations, 'must be a map of string to string');
    } else {
      let size = 0;
      for (const [k, v] of Object.entries(meta.annotations)) {
        e.check('metadata.annotations', k, qualifiedName(k.toLowerCase()));
        if (typeof v !== 'string') e.invalid(`metadata.annotations[${k}]`, v, 'must be a string');
        size += k.length + String(v).length;
      }
      if (size > TOTAL_ANNOTATION_SIZE) e.tooLong('metadata.annotations', TOTAL_ANNOTATION_SIZE);
    }
  }
  (meta.ownerReferences ?? []).forEach((r, i) => {
    const p = `metadata.ownerReferences[${i}]`;
    if (!r.apiVersion) e.invalid(`${p}.apiVersion`, r.apiVersion ?? '', 'version must not be empty');
    if (!r.kind) e.invalid(`${p}.kind`, r.kind ?? '', 'kind must not be empty');
    if (!r.name) e.invalid(`${p}.name`, r.name ?? '', 'name must not be empty');
    if (!r.uid) e.invalid(`${p}.uid`, r.uid ?? '', 'uid must not be empty');
  });
  if ((meta.ownerReferences ?? []).filter((r) => r.controller).length > 1) {
    e.invalid('metadata.ownerReferences', meta.ownerReferences, 'Only one reference can have Controller set to true');
  }
  (meta.finalizers ?? []).forEach((f, i) => {
    e.check(`metadata.finalizers[${i}]`, f, qualifiedName(f));
  });
}

export function validateLabels(e: FieldErrors, path: string, labels: Record<string, string> | undefined): void {
  if (labels === undefined) return;
  if (typeof labels !== 'object' || labels === null) {
    e.invalid(path, labels, 'must be a map of string to string');
    return;
  }
  for (const [k, v] of Object.entries(labels)) {
    e.check(path, k, qualifiedName(k));
    if (typeof v !== 'string') e.invalid(`${path}[${k}]`, v, 'must be a string');
    else e.check(path, v, labelValue(v));
  }
}

export function validateLabelSelector(e: FieldErrors, path: string, sel: LabelSelector | undefined): void {
  if (!sel) return;
  validateLabels(e, `${path}.matchLabels`, sel.matchLabels);
  (sel.matchExpressions ?? []).forEach((x, i) => {
    const p = `${path}.matchExpressions[${i}]`;
    e.check(`${p}.key`, x.key ?? '', qualifiedName(x.key ?? ''));
    if (!oneOf(x.operator, LABEL_OPS)) e.notSupported(`${p}.operator`, x.operator, LABEL_OPS);
    else if ((x.operator === 'In' || x.operator === 'NotIn') && !x.values?.length) {
      e.required(`${p}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\'');
    } else if ((x.operator === 'Exists' || x.operator === 'DoesNotExist') && x.values?.length) {
      e.forbidden(`${p}.values`, 'may not be specified when `operator` is \'Exists\' or \'DoesNotExist\'');
    }
  });
}

function quantity(e: FieldErrors, path: string, v: unknown): Quantity | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') {
    e.invalid(path, v, 'must be a quantity');
    return undefined;
  }
  try {
    return parseQuantity(v);
  } catch (err) {
    e.invalid(path, v, (err as Error).message);
    return undefined;
  }
}

function validateResources(e: FieldErrors, path: string, r: Container['resources']): void {
  if (!r) return;
  const req: Record<string, Quantity> = {};
  for (const [k, v] of Object.entries(r.requests ?? {})) {
    const q = quantity(e, `${path}.requests[${k}]`, v);
    if (q?.nanos !== undefined && q.nanos < 0n) e.invalid(`${path}.requests[${k}]`, v, 'must be greater than or equal to 0');
    if (q) req[k] = q;
  }
  for (const [k, v] of Object.entries(r.limits ?? {})) {
    const q = quantity(e, `${path}.limits[${k}]`, v);
    if (q && q.nanos < 0n) e.invalid(`${path}.limits[${k}]`, v, 'must be greater than or equal to 0');
    if (q && req[k] && req[k].cmp(q) > 0) {
      e.invalid(`${path}.requests`, String(r.requests![k]), `must be less than or equal to ${k} limit of ${v}`);
    }
  }
}

function validatePort(e: FieldErrors, path: string, v: unknown, allowZero: boolean): void {
  const lo = allowZero ? 0 : 1;
  if (!Number.isInteger(v) || (v as number) < lo || (v as number) > 65535) {
    e.invalid(path, v, `must be between ${lo} and 65535, inclusive`);
  }
}

function validateContainers(
  e: FieldErrors,
  path: string,
  list: Container[] | undefined,
  volumes: Set<string>,
  names: Set<string>,
  init: boolean,
): void {
  (list ?? []).forEach((c, i) => {
    const p = `${path}[${i}]`;
    if (!c || typeof c !== 'object') {
      e.invalid(p, c, 'must be an object');
      return;
    }
    if (!c.name) e.required(`${p}.name`);
    else {
      e.check(`${p}.name`, c.name, dns1123Label(c.name));
      if (names.has(c.name)) e.duplicate(`${p}.name`, c.name);
      names.add(c.name);
    }
    if (!c.image || (typeof c.image === 'string' && c.image.trim() === '')) e.required(`${p}.image`);
    if (c.imagePullPolicy !== undefined && !oneOf(c.imagePullPolicy, PULL)) {
      e.notSupported(`${p}.imagePullPolicy`, c.imagePullPolicy, PULL);
    }
    if (c.restartPolicy !== undefined) {
      if (!init) e.forbidden(`${p}.restartPolicy`, 'may not be set for non-init containers');
      else if (c.restartPolicy !== 'Always') e.notSupported(`${p}.restartPolicy`, c.restartPolicy, ['Always']);
    }
    const portNames = new Set<string>();
    (c.ports ?? []).forEach((port, j) => {
      const pp = `${p}.ports[${j}]`;
      validatePort(e, `${pp}.containerPort`, port.containerPort, false);
      if (port.hostPort !== undefined) validatePort(e, `${pp}.hostPort`, port.hostPort, true);
      if (port.protocol !== undefined && !oneOf(port.protocol, PROTOCOLS)) {
        e.notSupported(`${pp}.protocol`, port.protocol, PROTOCOLS);
      }
      if (port.name) {
        if (port.name.length > 15 || !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(port.name) || !/[a-z]/.test(port.name)) {
          e.invalid(`${pp}.name`, port.name, 'must be no more than 15 characters and contain only lower case alphanumeric characters or \'-\', with at least one letter');
        }
        if (portNames.has(port.name)) e.duplicate(`${pp}.name`, port.name);
        portNames.add(port.name);
      }
      if (port.hostIP !== undefined && port.hostIP !== '' && isIP(port.hostIP) === 0) {
        e.invalid(`${pp}.hostIP`, port.hostIP, 'must be a valid IP address');
      }
    });
    (c.env ?? []).forEach((ev, j) => {
      if (!ev.name) e.required(`${p}.env[${j}].name`);
    });
    validateResources(e, `${p}.resources`, c.resources);
    (c.volumeMounts ?? []).forEach((m, j) => {
      const mp = `${p}.volumeMounts[${j}]`;
      if (!m.name) e.required(`${mp}.name`);
      else if (!volumes.has(m.name)) e.notFound(`${mp}.name`, m.name);
      if (!m.mountPath) e.required(`${mp}.mountPath`);
    });
    (c.volumeDevices ?? []).forEach((d, j) => {
      if (!d.name) e.required(`${p}.volumeDevices[${j}].name`);
      else if (!volumes.has(d.name)) e.notFound(`${p}.volumeDevices[${j}].name`, d.name);
      if (!d.devicePath) e.required(`${p}.volumeDevices[${j}].devicePath`);
    });
  });
}

function validateTolerations(e: FieldErrors, path: string, list: Toleration[] | undefined): void {
  (list ?? []).forEach((t, i) => {
    const p = `${path}[${i}]`;
    if (t.key) e.check(`${p}.key`, t.key, qualifiedName(t.key));
    if (!t.key && t.operator !== 'Exists') {
      e.invalid(`${p}.operator`, t.operator ?? '', 'operator must be Exists when `key` is empty, which means "match all values and all keys"');
    }
    if (t.operator !== undefined && t.operator !== 'Exists' && t.operator !== 'Equal') {
      e.notSupported(`${p}.operator`, t.operator, ['Equal', 'Exists']);
    }
    if (t.operator === 'Exists' && t.value) e.invalid(`${p}.operator`, t.value, 'value must be empty when `operator` is \'Exists\'');
    if (t.effect && !oneOf(t.effect, EFFECTS)) e.notSupported(`${p}.effect`, t.effect, EFFECTS);
    if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute') {
      e.invalid(`${p}.effect`, t.effect ?? '', 'effect must be \'NoExecute\' when `tolerationSeconds` is set');
    }
  });
}

function validateNodeSelectorTerm(e: FieldErrors, path: string, term: NodeSelectorTerm): void {
  const reqs = (key: 'matchExpressions' | 'matchFields') =>
    (term[key] ?? []).forEach((r, i) => {
      const p = `${path}.${key}[${i}]`;
      if (key === 'matchFields' && r.key !== 'metadata.name') {
        e.invalid(`${p}.key`, r.key, 'not a valid field selector key');
      } else if (key === 'matchExpressions') e.check(`${p}.key`, r.key ?? '', qualifiedName(r.key ?? ''));
      if (!oneOf(r.operator, NODE_OPS)) e.notSupported(`${p}.operator`, r.operator, NODE_OPS);
      else if ((r.operator === 'In' || r.operator === 'NotIn') && !r.values?.length) {
        e.required(`${p}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\'');
      } else if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && r.values?.length) {
        e.forbidden(`${p}.values`, 'may not be specified when `operator` is \'Exists\' or \'DoesNotExist\'');
      } else if (r.operator === 'Gt' || r.operator === 'Lt') {
        if (r.values?.length !== 1 || !/^-?\d+$/.test(r.values[0])) {
          e.required(`${p}.values`, 'must be specified single value when `operator` is \'Lt\' or \'Gt\'');
        }
      }
    });
  reqs('matchExpressions');
  reqs('matchFields');
}

export function validatePodSpec(e: FieldErrors, s: PodSpec | undefined): void {
  if (!s || typeof s !== 'object') {
    e.required('spec');
    return;
  }
  const volumes = new Set<string>();
  (s.volumes ?? []).forEach((v, i) => {
    const p = `spec.volumes[${i}]`;
    if (!v.name) e.required(`${p}.name`);
    else {
      e.check(`${p}.name`, v.name, dns1123Label(v.name));
      if (volumes.has(v.name)) e.duplicate(`${p}.name`, v.name);
      volumes.add(v.name);
    }
    const sources = ['persistentVolumeClaim', 'emptyDir', 'hostPath', 'configMap', 'secret', 'csi', 'projected', 'downwardAPI', 'ephemeral'].filter(
      (k) => (v as unknown as Record<string, unknown>)[k] !== undefined,
    );
    if (sources.length === 0) e.required(p, 'must specify a volume type');
    else if (sources.length > 1) e.forbidden(`${p}.${sources[1]}`, `may not specify more than 1 volume type`);
    if (v.persistentVolumeClaim && !v.persistentVolumeClaim.claimName) e.required(`${p}.persistentVolumeClaim.claimName`);
    if (v.hostPath) {
      if (!v.hostPath.path) e.required(`${p}.hostPath.path`);
      else if (v.hostPath.path.split('/').includes('..')) e.invalid(`${p}.hostPath.path`, v.hostPath.path, "must not contain '..'");
    }
    if (v.emptyDir?.sizeLimit !== undefined) quantity(e, `${p}.emptyDir.sizeLimit`, v.emptyDir.sizeLimit);
    if (v.csi && !v.csi.driver) e.required(`${p}.csi.driver`);
    if (v.configMap && !v.configMap.name) e.required(`${p}.configMap.name`);
    if (v.secret && !v.secret.secretName) e.required(`${p}.secret.secretName`);
  });
  if (!Array.isArray(s.containers) || s.containers.length === 0) e.required('spec.containers');
  const names = new Set<string>();
  validateContainers(e, 'spec.initContainers', s.initContainers, volumes, names, true);
  validateContainers(e, 'spec.containers', s.containers, volumes, names, false);
  validatePodSources(e, s);
  if (s.restartPolicy !== undefined && !oneOf(s.restartPolicy, RESTART)) e.notSupported('spec.restartPolicy', s.restartPolicy, RESTART);
  if (s.dnsPolicy !== undefined && !oneOf(s.dnsPolicy, DNS_POLICY)) e.notSupported('spec.dnsPolicy', s.dnsPolicy, DNS_POLICY);
  validatePodDNSConfig(e, s);
  if (s.terminationGracePeriodSeconds !== undefined && !(Number.isInteger(s.terminationGracePeriodSeconds) && s.terminationGracePeriodSeconds >= 0)) {
    e.invalid('spec.terminationGracePeriodSeconds', s.terminationGracePeriodSeconds, 'must be greater than or equal to 0');
  }
  if (s.activeDeadlineSeconds !== undefined && !(Number.isInteger(s.activeDeadlineSeconds) && s.activeDeadlineSeconds > 0)) {
    e.invalid('spec.activeDeadlineSeconds', s.activeDeadlineSeconds, 'must be between 1 and 2147483647, inclusive');
  }
  if (s.nodeName) e.check('spec.nodeName', s.nodeName, dns1123Subdomain(s.nodeName));
  validateLabels(e, 'spec.nodeSelector', s.nodeSelector);
  validateTolerations(e, 'spec.tolerations', s.tolerations);
  if (s.schedulerName !== undefined) e.check('spec.schedulerName', s.schedulerName, dns1123Subdomain(s.schedulerName));
  if (s.priorityClassName) e.check('spec.priorityClassName', s.priorityClassName, dns1123Subdomain(s.priorityClassName));
  if (s.priority !== undefined && !Number.isInteger(s.priority)) e.invalid('spec.priority', s.priority, 'must be an integer');
  const gates = new Set<string>();
  (s.schedulingGates ?? []).forEach((g, i) => {
    e.check(`spec.schedulingGates[${i}].name`, g.name ?? '', qualifiedName(g.name ?? ''));
    if (gates.has(g.name)) e.duplicate(`spec.schedulingGates[${i}].name`, g.name);
    gates.add(g.name);
  });
  const na = s.affinity?.nodeAffinity;
  if (na?.requiredDuringSchedulingIgnoredDuringExecution) {
    const terms = na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    const p = 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms';
    if (!terms?.length) e.required(p, 'must have at least one node selector term');
    (terms ?? []).forEach((t, i) => {
      validateNodeSelectorTerm(e, `${p}[${i}]`, t);
    });
  }
  (na?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((t, i) => {
    const p = `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    if (!Number.isInteger(t.weight) || t.weight < 1 || t.weight > 100) e.invalid(`${p}.weight`, t.weight, 'must be in the range 1-100');
    validateNodeSelectorTerm(e, `${p}.preference`, t.preference ?? {});
  });
  for (const which of ['podAffinity', 'podAntiAffinity'] as const) {
    const pa = s.affinity?.[which];
    const base = `spec.affinity.${which}`;
    (pa?.requiredDuringSchedulingIgnoredDuringExecution ?? []).forEach((t, i) => {
      const p = `${base}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`;
      if (!t.topologyKey) e.required(`${p}.topologyKey`, 'can not be empty');
      else e.check(`${p}.topologyKey`, t.topologyKey, qualifiedName(t.topologyKey));
      validateLabelSelector(e, `${p}.labelSelector`, t.labelSelector);
    });
    (pa?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((w, i) => {
      const p = `${base}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
      if (!Number.isInteger(w.weight) || w.weight < 1 || w.weight > 100) e.invalid(`${p}.weight`, w.weight, 'must be in the range 1-100');
      if (!w.podAffinityTerm?.topologyKey) e.required(`${p}.podAffinityTerm.topologyKey`, 'can not be empty');
      validateLabelSelector(e, `${p}.podAffinityTerm.labelSelector`, w.podAffinityTerm?.labelSelector);
    });
  }
  (s.topologySpreadConstraints ?? []).forEach((c, i) => {
    const p = `spec.topologySpreadConstraints[${i}]`;
    if (!Number.isInteger(c.maxSkew) || c.maxSkew <= 0) e.invalid(`${p}.maxSkew`, c.maxSkew, 'must be greater than zero');
    if (!c.topologyKey) e.required(`${p}.topologyKey`, 'can not be empty');
    if (!oneOf(c.whenUnsatisfiable, ['DoNotSchedule', 'ScheduleAnyway'])) {
      e.notSupported(`${p}.whenUnsatisfiable`, c.whenUnsatisfiable, ['DoNotSchedule', 'ScheduleAnyway']);
    }
    if (c.minDomains !== undefined) {
      if (!Number.isInteger(c.minDomains) || c.minDomains <= 0) e.invalid(`${p}.minDomains`, c.minDomains, 'must be greater than 0');
      else if (c.whenUnsatisfiable !== 'DoNotSchedule') e.invalid(`${p}.minDomains`, c.minDomains, 'can only use minDomains if whenUnsatisfiable=DoNotSchedule');
    }
    validateLabelSelector(e, `${p}.labelSelector`, c.labelSelector);
  });
  if (s.overhead) validateResources(e, 'spec.overhead', { requests: s.overhead });
}

function validateKindBody(e: FieldErrors, obj: KubeObject): void {
  const s = obj.spec;
  switch (obj.kind) {
    case 'Pod':
      validatePodSpec(e, obj.spec);
      break;
    case 'Node':
      (s?.taints ?? []).forEach((t: { key: string; effect: string }, i: number) => {
        const p = `spec.taints[${i}]`;
        if (!t.key) e.required(`${p}.key`);
        else e.check(`${p}.key`, t.key, qualifiedName(t.key));
        if (!t.effect) e.required(`${p}.effect`);
        else if (!oneOf(t.effect, EFFECTS)) e.notSupported(`${p}.effect`, t.effect, EFFECTS);
      });
      if (s?.podCIDR && !isCIDR(s.podCIDR)) e.invalid('spec.podCIDR', s.podCIDR, 'must be a valid CIDR');
      (s?.podCIDRs ?? []).forEach((c: string, i: number) => {
        if (!isCIDR(c)) e.invalid(`spec.podCIDRs[${i}]`, c, 'must be a valid CIDR');
      });
      for (const which of ['capacity', 'allocatable']) {
        for (const [k, v] of Object.entries(obj.status?.[which] ?? {})) quantity(e, `status.${which}[${k}]`, v);
      }
      break;
    case 'PersistentVolume': {
      if (!s) {
        e.required('spec');
        break;
      }
      if (!s.capacity?.storage) e.required('spec.capacity', 'must specify a capacity');
      else quantity(e, 'spec.capacity[storage]', s.capacity.storage);
      if (!s.accessModes?.length) e.required('spec.accessModes');
      (s.accessModes ?? []).forEach((m: string, i: number) => {
        if (!oneOf(m, ACCESS)) e.notSupported(`spec.accessModes[${i}]`, m, ACCESS);
      });
      if (!oneOf(s.persistentVolumeReclaimPolicy, ['Delete', 'Recycle', 'Retain'])) {
        e.notSupported('spec.persistentVolumeReclaimPolicy', s.persistentVolumeReclaimPolicy, ['Delete', 'Recycle', 'Retain']);
      }
      if (!oneOf(s.volumeMode, VOLUME_MODES)) e.notSupported('spec.volumeMode', s.volumeMode, VOLUME_MODES);
      const sources = ['csi', 'hostPath', 'local'].filter((k) => s[k] !== undefined);
      if (sources.length === 0) e.required('spec', 'must specify a volume type');
      else if (sources.length > 1) e.forbidden(`spec.${sources[1]}`, 'may not specify more than 1 volume type');
      if (s.csi) {
        if (!s.csi.driver) e.required('spec.csi.driver');
        if (!s.csi.volumeHandle) e.required('spec.csi.volumeHandle');
      }
      if (s.hostPath && !s.hostPath.path) e.required('spec.hostPath.path');
      if (s.storageClassName) e.check('spec.storageClassName', s.storageClassName, dns1123Subdomain(s.storageClassName));
      break;
    }
    case 'PersistentVolumeClaim': {
      if (!s) {
        e.required('spec');
        break;
      }
      if (!s.accessModes?.length) e.required('spec.accessModes', 'at least 1 access mode is required');
      (s.accessModes ?? []).forEach((m: string, i: number) => {
        if (!oneOf(m, ACCESS)) e.notSupported(`spec.accessModes[${i}]`, m, ACCESS);
      });
      const storage = s.resources?.requests?.storage;
      if (storage === undefined) e.required('spec.resources[storage]');
      else {
        const q = quantity(e, 'spec.resources[storage]', storage);
        if (q && q.nanos <= 0n) e.invalid('spec.resources[storage]', storage, 'must be greater than zero');
      }
      if (!oneOf(s.volumeMode, VOLUME_MODES)) e.notSupported('spec.volumeMode', s.volumeMode, VOLUME_MODES);
      if (s.storageClassName) e.check('spec.storageClassName', s.storageClassName, dns1123Subdomain(s.storageClassName));
      validateLabelSelector(e, 'spec.selector', s.selector);
      break;
    }
    case 'StorageClass':
      if (!obj.provisioner) e.required('provisioner');
      else e.check('provisioner', obj.provisioner, qualifiedName(obj.provisioner));
      if (!oneOf(obj.reclaimPolicy, ['Delete', 'Retain'])) e.notSupported('reclaimPolicy', obj.reclaimPolicy, ['Delete', 'Retain']);
      if (!oneOf(obj.volumeBindingMode, ['Immediate', 'WaitForFirstConsumer'])) {
        e.notSupported('volumeBindingMode', obj.volumeBindingMode, ['Immediate', 'WaitForFirstConsumer']);
      }
      break;
    case 'VolumeAttachment':
      if (!s?.attacher) e.required('spec.attacher');
      if (!s?.nodeName) e.required('spec.nodeName');
      else e.check('spec.nodeName', s.nodeName, dns1123Subdomain(s.nodeName));
      if (!s?.source || Object.keys(s.source).filter((k) => s.source[k] !== undefined).length !== 1) {
        e.required('spec.source', 'must specify exactly one of persistentVolumeName or inlineVolumeSpec');
      }
      break;
    case 'CSINode': {
      const seen = new Set<string>();
      (s?.drivers ?? []).forEach((d: { name: string; nodeID: string }, i: number) => {
        if (!d.name) e.required(`spec.drivers[${i}].name`);
        else if (seen.has(d.name)) e.duplicate(`spec.drivers[${i}].name`, d.name);
        seen.add(d.name);
        if (!d.nodeID) e.required(`spec.drivers[${i}].nodeID`);
      });
      break;
    }
    case 'PriorityClass': {
      if (!Number.isInteger(obj.value)) e.required('value');
      const name = obj.metadata?.name ?? '';
      if (name.startsWith('system-') && name !== 'system-cluster-critical' && name !== 'system-node-critical') {
        e.forbidden('metadata.name', "priority class names with 'system-' prefix are reserved for system use only");
      }
      if (!name.startsWith('system-') && obj.value > 1_000_000_000) {
        e.forbidden('value', 'maximum allowed value of a user defined priority is 1000000000');
      }
      if (!oneOf(obj.preemptionPolicy, ['Never', 'PreemptLowerPriority'])) {
        e.notSupported('preemptionPolicy', obj.preemptionPolicy, ['Never', 'PreemptLowerPriority']);
      }
      break;
    }
    case 'Lease':
      if (s?.leaseDurationSeconds !== undefined && !(Number.isInteger(s.leaseDurationSeconds) && s.leaseDurationSeconds > 0)) {
        e.invalid('spec.leaseDurationSeconds', s.leaseDurationSeconds, 'must be greater than 0');
      }
      if (s?.leaseTransitions !== undefined && !(Number.isInteger(s.leaseTransitions) && s.leaseTransitions >= 0)) {
        e.invalid('spec.leaseTransitions', s.leaseTransitions, 'must be greater than or equal to 0');
      }
      break;
    case 'ConfigMap':
      validateConfigMapData(e, obj as ConfigMap);
      break;
    case 'Event':
      if (!obj.involvedObject) e.required('involvedObject');
      else if (obj.involvedObject.namespace && obj.involvedObject.namespace !== obj.metadata?.namespace) {
        e.invalid('involvedObject.namespace', obj.involvedObject.namespace, 'does not match event.namespace');
      }
      if (obj.type !== undefined && !oneOf(obj.type, ['Normal', 'Warning'])) e.notSupported('type', obj.type, ['Normal', 'Warning']);
      break;
    case 'IPPool': {
      if (!isCIDR(s?.cidr)) e.invalid('spec.cidr', s?.cidr ?? '', 'must be a valid CIDR');
      else {
        const v6 = s.cidr.includes(':');
        const [lo, hi] = v6 ? [116, 128] : [20, 32];
        if (!Number.isInteger(s.blockSize) || s.blockSize < lo || s.blockSize > hi) {
          e.invalid('spec.blockSize', s.blockSize, `must be between ${lo} and ${hi}, inclusive`);
        } else if (s.blockSize < Number(s.cidr.split('/')[1])) {
          e.invalid('spec.blockSize', s.blockSize, 'must be at least the pool prefix length');
        }
      }
      for (const m of ['ipipMode', 'vxlanMode']) {
        if (!oneOf(s?.[m], ['Always', 'CrossSubnet', 'Never'])) e.notSupported(`spec.${m}`, s?.[m], ['Always', 'CrossSubnet', 'Never']);
      }
      break;
    }
    case 'IPAMBlock':
      if (!isCIDR(s?.cidr)) e.invalid('spec.cidr', s?.cidr ?? '', 'must be a valid CIDR');
      if (!Array.isArray(s?.allocations)) e.required('spec.allocations');
      if (!Array.isArray(s?.unallocated)) e.required('spec.unallocated');
      break;
    case 'BlockAffinity':
      if (!s?.node) e.required('spec.node');
      if (!isCIDR(s?.cidr)) e.invalid('spec.cidr', s?.cidr ?? '', 'must be a valid CIDR');
      if (!oneOf(s?.state, ['confirmed', 'pending', 'pendingDeletion'])) {
        e.notSupported('spec.state', s?.state, ['confirmed', 'pending', 'pendingDeletion']);
      }
      break;
  }
}

const CONDITION_STATUS = ['False', 'True', 'Unknown'] as const;

function validateConditions(e: FieldErrors, path: string, conds: unknown): void {
  if (conds === undefined) return;
  if (!Array.isArray(conds)) {
    e.invalid(path, conds, 'must be a list');
    return;
  }
  const seen = new Set<string>();
  conds.forEach((c: { type?: string; status?: string }, i) => {
    if (!c?.type) e.required(`${path}[${i}].type`);
    else if (seen.has(c.type)) e.duplicate(`${path}[${i}].type`, c.type);
    else seen.add(c.type);
    if (!oneOf(c?.status, CONDITION_STATUS)) e.notSupported(`${path}[${i}].status`, c?.status ?? '', CONDITION_STATUS);
  });
}

function validateIPs(e: FieldErrors, path: string, single: unknown, list: unknown): void {
  if (single !== undefined && single !== '' && (typeof single !== 'string' || isIP(single) === 0)) {
    e.invalid(path, single, 'must be a valid IP address');
  }
  if (Array.isArray(list)) {
    list.forEach((x: { ip?: string }, i) => {
      if (typeof x?.ip !== 'string' || isIP(x.ip) === 0) e.invalid(`${path.replace(/IP$/, 'IPs')}[${i}].ip`, x?.ip ?? '', 'must be a valid IP address');
    });
    if (typeof single === 'string' && single && list.length && list[0]?.ip !== single) {
      e.invalid(`${path.replace(/IP$/, 'IPs')}[0].ip`, list[0]?.ip ?? '', `must be equal to ${path}`);
    }
  }
}

/** Status fields the API server checks (phases, condition shapes, IPs). */
function validateStatus(e: FieldErrors, obj: KubeObject): void {
  const st = obj.status;
  if (st === undefined || st === null) return;
  switch (obj.kind) {
    case 'Pod': {
      const phases = ['Failed', 'Pending', 'Running', 'Succeeded', 'Unknown'];
      if (st.phase !== undefined && !oneOf(st.phase, phases)) e.notSupported('status.phase', st.phase, phases);
      validateConditions(e, 'status.conditions', st.conditions);
      validateIPs(e, 'status.podIP', st.podIP, st.podIPs);
      validateIPs(e, 'status.hostIP', st.hostIP, st.hostIPs);
      for (const which of ['containerStatuses', 'initContainerStatuses']) {
        (st[which] ?? []).forEach((cs: { name?: string; restartCount?: number }, i: number) => {
          if (!cs?.name) e.required(`status.${which}[${i}].name`);
          if (cs?.restartCount !== undefined && !(Number.isInteger(cs.restartCount) && cs.restartCount >= 0)) {
            e.invalid(`status.${which}[${i}].restartCount`, cs.restartCount, 'must be greater than or equal to 0');
          }
        });
      }
      break;
    }
    case 'Node':
      validateConditions(e, 'status.conditions', st.conditions);
      (st.addresses ?? []).forEach((a: { type?: string; address?: string }, i: number) => {
        if (!a?.type) e.required(`status.addresses[${i}].type`);
        if (!a?.address) e.required(`status.addresses[${i}].address`);
      });
      break;
    case 'PersistentVolumeClaim': {
      const phases = ['Bound', 'Lost', 'Pending'];
      if (st.phase !== undefined && !oneOf(st.phase, phases)) e.notSupported('status.phase', st.phase, phases);
      validateConditions(e, 'status.conditions', st.conditions);
      break;
    }
    case 'PersistentVolume': {
      const phases = ['Available', 'Bound', 'Failed', 'Pending', 'Released'];
      if (st.phase !== undefined && !oneOf(st.phase, phases)) e.notSupported('status.phase', st.phase, phases);
      break;
    }
    case 'Namespace': {
      const phases = ['Active', 'Terminating'];
      if (st.phase !== undefined && !oneOf(st.phase, phases)) e.notSupported('status.phase', st.phase, phases);
      break;
    }
    case 'VolumeAttachment':
      if (st.attached !== undefined && typeof st.attached !== 'boolean') e.invalid('status.attached', st.attached, 'must be a boolean');
      break;
  }
}

/** All field errors of an object (empty when valid). Does not throw. */
export function validationErrors(obj: KubeObject): StatusCause[] {
  const e = new FieldErrors();
  const info = lookupKind(obj?.kind);
  if (!info) {
    e.invalid('kind', obj?.kind ?? '', 'kind is not registered');
    return e.list;
  }
  if (obj.apiVersion !== info.apiVersion) e.notSupported('apiVersion', obj.apiVersion, [info.apiVersion]);
  validateMeta(e, obj.metadata, info);
  validateKindBody(e, obj);
  validateStatus(e, obj);
  kindHooks(obj.kind)?.validate?.(e, obj);
  return e.list;
}

const POD_MUTABLE =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

function stableJSON(v: unknown): string {
  return JSON.stringify(v ?? null);
}

/** Field errors of an update (old → new), beyond validating `next` on its own. */
export function updateErrors(next: KubeObject, prev: KubeObject): StatusCause[] {
  const e = new FieldErrors();
  const nm = next.metadata;
  const pm = prev.metadata;
  if (nm.name !== pm.name) e.invalid('metadata.name', nm.name, 'field is immutable');
  if ((nm.namespace ?? '') !== (pm.namespace ?? '')) e.invalid('metadata.namespace', nm.namespace, 'field is immutable');
  if (nm.uid !== undefined && nm.uid !== pm.uid) e.invalid('metadata.uid', nm.uid, 'field is immutable');
  kindHooks(next.kind)?.validateUpdate?.(e, next, prev);
  switch (next.kind) {
    case 'Pod': {
      const a = (prev as Pod).spec;
      const b = (next as Pod).spec;
      // Compare with the mutable fields masked out.
      const mask = (s: PodSpec, other: PodSpec) => ({
        ...s,
        containers: s.containers?.map((c, i) => ({ ...c, image: other.containers?.[i]?.image })),
        initContainers: s.initContainers?.map((c, i) => ({ ...c, image: other.initContainers?.[i]?.image })),
        activeDeadlineSeconds: undefined,
        tolerations: undefined,
        schedulingGates: undefined,
      });
      if (stableJSON(mask(b, b)) !== stableJSON(mask(a, b))) e.forbidden('spec', POD_MUTABLE);
      const oldTol = a.tolerations ?? [];
      const newTol = b.tolerations ?? [];
      if (!oldTol.every((t) => newTol.some((u) => stableJSON(u) === stableJSON(t)))) {
        e.forbidden('spec.tolerations', 'existing toleration can not be modified except its tolerationSeconds');
      }
      const oldGates = new Set((a.schedulingGates ?? []).map((g) => g.name));
      if ((b.schedulingGates ?? []).some((g) => !oldGates.has(g.name))) {
        e.forbidden('spec.schedulingGates', 'only deletion is allowed, but found new scheduling gate');
      }
      break;
    }
    case 'PersistentVolumeClaim': {
      const a = prev.spec;
      const b = next.spec;
      const strip = (s: any, vol: string | undefined) => ({ ...s, resources: undefined, volumeName: vol });
      // volumeName may be set once by the binder; storage requests may grow (expansion).
      if (stableJSON(strip(b, a.volumeName ? b.volumeName : undefined)) !== stableJSON(strip(a, a.volumeName || undefined))) {
        e.forbidden('spec', 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims');
      }
      break;
    }
    case 'StorageClass':
      for (const f of ['provisioner', 'parameters', 'reclaimPolicy', 'volumeBindingMode']) {
        if (stableJSON(next[f]) !== stableJSON(prev[f])) e.forbidden(f, `updates to ${f} are forbidden.`);
      }
      break;
    case 'VolumeAttachment':
      if (stableJSON(next.spec) !== stableJSON(prev.spec)) e.invalid('spec', next.spec, 'field is immutable');
      break;
    case 'PriorityClass':
      if (next.value !== prev.value) e.forbidden('value', 'may not be changed in an update.');
      break;
    case 'ConfigMap':
      if (prev.immutable) {
        if (stableJSON(next.data) !== stableJSON(prev.data) || stableJSON(next.binaryData) !== stableJSON(prev.binaryData)) {
          e.forbidden('data', 'field is immutable when `immutable` is set');
        }
        if (next.immutable !== true) e.forbidden('immutable', 'field is immutable when `immutable` is set');
      }
      break;
  }
  return e.list;
}

/** Throw InvalidError when the object is invalid. */
export function assertValid(obj: KubeObject, prev?: KubeObject): void {
  const causes = validationErrors(obj);
  if (prev) causes.push(...updateErrors(obj, prev));
  if (causes.length) {
    const info = lookupKind(obj?.kind);
    throw new InvalidError(obj?.kind ?? 'Object', obj?.metadata?.name ?? obj?.metadata?.generateName ?? '', info?.group ?? '', causes);
  }
}
