// Validation of the policy kinds: PodDisruptionBudget, HorizontalPodAutoscaler, ResourceQuota, LimitRange,
// ServiceAccount, and networking.k8s.io Ingress and IngressClass.
import type { Ingress } from './api-networking.js';
import type { KubeObject } from './api-meta.js';
import type { HorizontalPodAutoscaler, PodDisruptionBudget } from './api-policy.js';
import type { LimitRange, ResourceQuota } from './api-quota.js';
import type { FieldErrors } from './field-errors.js';
import { dns1123Label, dns1123Subdomain } from './names.js';
import { parseQuantity } from './quantity.js';
import { intOrPercent } from './validation-apps.js';
import { validateLabelSelector } from './validation.js';

const oneOf = (v: unknown, set: readonly string[]) => typeof v === 'string' && set.includes(v);

function quantities(e: FieldErrors, path: string, list: Record<string, unknown> | undefined): void {
  for (const [k, v] of Object.entries(list ?? {})) {
    try {
      const q = parseQuantity(v as string);
      if (q.nanos < 0n) e.invalid(`${path}[${k}]`, v, 'must be greater than or equal to 0');
    } catch (err) {
      e.invalid(`${path}[${k}]`, v, (err as Error).message);
    }
  }
}

export function validatePDB(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as PodDisruptionBudget).spec;
  if (!s) return;
  if (s.minAvailable !== undefined && s.maxUnavailable !== undefined) {
    e.invalid('spec', s, 'minAvailable and maxUnavailable cannot be both set');
  }
  intOrPercent(e, 'spec.minAvailable', s.minAvailable);
  intOrPercent(e, 'spec.maxUnavailable', s.maxUnavailable);
  validateLabelSelector(e, 'spec.selector', s.selector);
  if (s.unhealthyPodEvictionPolicy !== undefined && !oneOf(s.unhealthyPodEvictionPolicy, ['AlwaysAllow', 'IfHealthyBudget'])) {
    e.notSupported('spec.unhealthyPodEvictionPolicy', s.unhealthyPodEvictionPolicy, ['AlwaysAllow', 'IfHealthyBudget']);
  }
}

export function validateHPA(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as HorizontalPodAutoscaler).spec;
  if (!s) return e.required('spec');
  if (!s.scaleTargetRef?.kind) e.required('spec.scaleTargetRef.kind');
  if (!s.scaleTargetRef?.name) e.required('spec.scaleTargetRef.name');
  if (s.minReplicas !== undefined && !(Number.isInteger(s.minReplicas) && s.minReplicas >= 1)) {
    e.invalid('spec.minReplicas', s.minReplicas, 'must be greater than or equal to 1');
  }
  if (!(Number.isInteger(s.maxReplicas) && s.maxReplicas >= 1)) e.invalid('spec.maxReplicas', s.maxReplicas, 'must be greater than 0');
  else if (s.minReplicas !== undefined && s.maxReplicas < s.minReplicas) {
    e.invalid('spec.maxReplicas', s.maxReplicas, 'must be greater than or equal to `minReplicas`');
  }
  const types = ['ContainerResource', 'External', 'Object', 'Pods', 'Resource'];
  (s.metrics ?? []).forEach((m, i) => {
    if (!oneOf(m?.type, types)) e.notSupported(`spec.metrics[${i}].type`, m?.type ?? '', types);
    if (m?.type === 'Resource' && !m.resource?.name) e.required(`spec.metrics[${i}].resource.name`);
  });
}

export function validateResourceQuota(e: FieldErrors, obj: KubeObject): void {
  quantities(e, 'spec.hard', (obj as ResourceQuota).spec?.hard);
}

export function validateLimitRange(e: FieldErrors, obj: KubeObject): void {
  const lr = obj as LimitRange;
  (lr.spec?.limits ?? []).forEach((item, i) => {
    const p = `spec.limits[${i}]`;
    if (!item?.type) e.required(`${p}.type`);
    for (const k of ['max', 'min', 'default', 'defaultRequest', 'maxLimitRequestRatio'] as const) quantities(e, `${p}.${k}`, item?.[k]);
    for (const [res, mn] of Object.entries(item?.min ?? {})) {
      const mx = item?.max?.[res];
      try {
        if (mx !== undefined && parseQuantity(mn).cmp(parseQuantity(mx)) > 0) {
          e.invalid(`${p}.min[${res}]`, mn, `min value ${mn} is greater than max value ${mx}`);
        }
      } catch {
        // reported above
      }
    }
  });
}

export function validateServiceAccount(e: FieldErrors, obj: KubeObject): void {
  (obj.secrets ?? []).forEach((s: { name?: string }, i: number) => {
    if (s?.name) e.check(`secrets[${i}].name`, s.name, dns1123Subdomain(s.name));
  });
}

export function validateIngress(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as Ingress).spec;
  if (!s) return;
  if (!s.defaultBackend && !s.rules?.length) e.invalid('spec', s, 'either `defaultBackend` or `rules` must be specified');
  const backend = (path: string, b: { service?: { name?: string; port?: { name?: string; number?: number } }; resource?: unknown } | undefined) => {
    if (!b) return e.required(path);
    if (b.service && b.resource) e.invalid(path, b, 'cannot set both resource and service backends');
    if (b.service) {
      if (!b.service.name) e.required(`${path}.service.name`);
      else e.check(`${path}.service.name`, b.service.name, dns1123Label(b.service.name));
      const port = b.service.port;
      if (!port || (port.name === undefined && port.number === undefined)) e.required(`${path}.service.port`, 'port name or number is required');
      else if (port.name !== undefined && port.number !== undefined) e.invalid(`${path}.service.port`, port, 'cannot set both port name & port number');
      else if (port.number !== undefined && !(Number.isInteger(port.number) && port.number >= 1 && port.number <= 65535)) {
        e.invalid(`${path}.service.port.number`, port.number, 'must be between 1 and 65535, inclusive');
      }
    } else if (!b.resource) e.invalid(path, b, 'resource or service backend is required');
  };
  if (s.defaultBackend) backend('spec.defaultBackend', s.defaultBackend);
  (s.rules ?? []).forEach((r, i) => {
    if (r?.host) {
      const h = r.host.startsWith('*.') ? r.host.slice(2) : r.host;
      e.check(`spec.rules[${i}].host`, r.host, dns1123Subdomain(h));
    }
    (r?.http?.paths ?? []).forEach((p, j) => {
      const pp = `spec.rules[${i}].http.paths[${j}]`;
      if (!oneOf(p?.pathType, ['Exact', 'ImplementationSpecific', 'Prefix'])) {
        e.notSupported(`${pp}.pathType`, p?.pathType ?? '', ['Exact', 'ImplementationSpecific', 'Prefix']);
      }
      if (p?.pathType !== 'ImplementationSpecific' && (!p?.path || !p.path.startsWith('/'))) {
        e.invalid(`${pp}.path`, p?.path ?? '', 'must be an absolute path');
      }
      backend(`${pp}.backend`, p?.backend);
    });
  });
}

export function validateIngressClass(e: FieldErrors, obj: KubeObject): void {
  const c = obj.spec?.controller;
  if (!c) e.required('spec.controller');
  else if (!c.includes('/') || dns1123Subdomain(c.split('/')[0]).length > 0) {
    e.invalid('spec.controller', c, 'must be a domain-prefixed path (such as "acme.io/foo")');
  }
}
