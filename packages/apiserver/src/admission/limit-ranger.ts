// The LimitRanger admission plugin: a namespace's LimitRanges default the requests and limits of
// containers that leave them out (recording what it set in the `kubernetes.io/limit-ranger` annotation),
// then refuse pods and claims outside their min, max and max limit/request ratio, worded as upstream.
import { type KubeObject, type LimitRangeItem, parseQuantity, type Quantity, type Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { podResources } from './quota-usage.js';
import { type AdmissionLookups, storeLookups } from './admission-lookups.js';

const ANNOTATION = 'kubernetes.io/limit-ranger';

function isPodWrite(attrs: AdmissionAttributes): boolean {
  return attrs.resource.group === '' && attrs.resource.resource === 'pods' && !attrs.subresource && attrs.operation === 'CREATE';
}
function isClaimWrite(attrs: AdmissionAttributes): boolean {
  return attrs.resource.group === '' && attrs.resource.resource === 'persistentvolumeclaims' && !attrs.subresource && (attrs.operation === 'CREATE' || attrs.operation === 'UPDATE');
}

export class LimitRangerAdmission implements AdmissionChain {
  constructor(
    store: Store,
    private readonly lookups: AdmissionLookups = storeLookups(store),
  ) {}

  /** The items one request is checked against, looked up once for its admit and validate. */
  private readonly perRequest = new WeakMap<AdmissionAttributes, Promise<LimitRangeItem[]>>();

  private items(attrs: AdmissionAttributes): Promise<LimitRangeItem[]> {
    let items = this.perRequest.get(attrs);
    if (!items) {
      items = this.lookups.limitRanges(attrs.namespace).then((ls) => ls.flatMap((l: KubeObject) => (l.spec?.limits ?? []) as LimitRangeItem[]));
      this.perRequest.set(attrs, items);
    }
    return items;
  }

  async admit(attrs: AdmissionAttributes): Promise<void> {
    if (!isPodWrite(attrs) || !attrs.object) return;
    const items = (await this.items(attrs)).filter((i) => i.type === 'Container');
    if (!items.length) return;
    const pod = attrs.object;
    const notes: string[] = [];
    const apply = (c: any) => {
      const setReq: string[] = [];
      const setLim: string[] = [];
      for (const item of items) {
        for (const [k, v] of Object.entries(item.default ?? {})) {
          c.resources ??= {};
          c.resources.limits ??= {};
          if (c.resources.limits[k] === undefined) {
            c.resources.limits[k] = v;
            setLim.push(k);
          }
        }
        for (const [k, v] of Object.entries(item.defaultRequest ?? {})) {
          c.resources ??= {};
          c.resources.requests ??= {};
          if (c.resources.requests[k] === undefined) {
            c.resources.requests[k] = v;
            setReq.push(k);
          }
        }
      }
      if (setReq.length) notes.push(`${setReq.join(', ')} request for container ${c.name}`);
      if (setLim.length) notes.push(`${setLim.join(', ')} limit for container ${c.name}`);
    };
    for (const c of pod.spec?.initContainers ?? []) apply(c);
    for (const c of pod.spec?.containers ?? []) apply(c);
    if (notes.length) {
      pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [ANNOTATION]: `LimitRanger plugin set: ${notes.join('; ')}` };
    }
  }

  async validate(attrs: AdmissionAttributes): Promise<void> {
    if (!attrs.object || !(isPodWrite(attrs) || isClaimWrite(attrs))) return;
    const items = await this.items(attrs);
    if (!items.length) return;
    const errs: string[] = [];
    if (isPodWrite(attrs)) {
      const spec = attrs.object.spec ?? {};
      for (const item of items) {
        if (item.type === 'Container') {
          for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
            check(errs, 'Container', item, toMap(c.resources?.requests), toMap(c.resources?.limits));
          }
        } else if (item.type === 'Pod') {
          check(errs, 'Pod', item, podResources(spec, 'requests'), podResources(spec, 'limits'));
        }
      }
    } else {
      const req = toMap(attrs.object.spec?.resources?.requests);
      const lim = toMap(attrs.object.spec?.resources?.limits);
      for (const item of items) if (item.type === 'PersistentVolumeClaim') check(errs, 'PersistentVolumeClaim', item, req, lim);
    }
    if (errs.length) throw forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
  }
}

function toMap(l: Record<string, string | number> | undefined): Map<string, Quantity> {
  return new Map(Object.entries(l ?? {}).map(([k, v]) => [k, parseQuantity(v)]));
}

/** Go's %f: six decimals. */
const ratio = (n: number) => n.toFixed(6);

function check(errs: string[], type: string, item: LimitRangeItem, req: Map<string, Quantity>, lim: Map<string, Quantity>): void {
  for (const [k, v] of Object.entries(item.min ?? {})) {
    const min = parseQuantity(v);
    const r = req.get(k);
    const l = lim.get(k);
    if (!r) errs.push(`minimum ${k} usage per ${type} is ${min.toString()}.  No request is specified`);
    else if (r.cmp(min) < 0) errs.push(`minimum ${k} usage per ${type} is ${min.toString()}, but request is ${r.toString()}`);
    if (l && l.cmp(min) < 0) errs.push(`minimum ${k} usage per ${type} is ${min.toString()}, but limit is ${l.toString()}`);
  }
  for (const [k, v] of Object.entries(item.max ?? {})) {
    const max = parseQuantity(v);
    const r = req.get(k);
    const l = lim.get(k);
    if (type !== 'PersistentVolumeClaim' && !l) errs.push(`maximum ${k} usage per ${type} is ${max.toString()}.  No limit is specified`);
    else if (l && l.cmp(max) > 0) errs.push(`maximum ${k} usage per ${type} is ${max.toString()}, but limit is ${l.toString()}`);
    if (r && r.cmp(max) > 0) errs.push(`maximum ${k} usage per ${type} is ${max.toString()}, but request is ${r.toString()}`);
  }
  for (const [k, v] of Object.entries(item.maxLimitRequestRatio ?? {})) {
    const max = parseQuantity(v);
    const r = req.get(k);
    const l = lim.get(k);
    if (!l) errs.push(`${k} max limit to request ratio per ${type} is ${max.toString()}, but no limit is specified`);
    else if (!r || r.isZero()) errs.push(`${k} max limit to request ratio per ${type} is ${max.toString()}, but no request is specified or request is 0`);
    else {
      const actual = Number(l.nanos) / Number(r.nanos);
      if (actual > Number(max.nanos) / 1e9) errs.push(`${k} max limit to request ratio per ${type} is ${max.toString()}, but provided ratio is ${ratio(actual)}`);
    }
  }
}
