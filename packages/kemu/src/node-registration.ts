// What a node registers its Node with, as the kubelet's flags give it: taints as kubectl taint and
// --register-with-taints write them (`key=value:Effect` or `key:Effect`, several separated by commas for the
// flag) and labels as --node-labels does (`key=value,...`).
import { labelValue, qualifiedName, type Taint, type TaintEffect } from '@kemu/core';

const EFFECTS: TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** A taint as kubectl taint writes one: `key=value:Effect` or `key:Effect`. */
export function parseTaint(spec: string): Taint {
  const colon = spec.lastIndexOf(':');
  if (colon < 0) throw new Error(`invalid taint spec: ${spec}: want key=value:Effect or key:Effect`);
  const effect = spec.slice(colon + 1);
  const kv = spec.slice(0, colon);
  const eq = kv.indexOf('=');
  const key = eq < 0 ? kv : kv.slice(0, eq);
  const value = eq < 0 ? undefined : kv.slice(eq + 1);
  if (!EFFECTS.includes(effect as TaintEffect))
    throw new Error(`invalid taint effect: ${effect}, unsupported taint effect (want ${EFFECTS.join(', ')})`);
  const keyErr = qualifiedName(key)[0];
  if (keyErr) throw new Error(`invalid taint key ${JSON.stringify(key)}: ${keyErr}`);
  const valueErr = value ? labelValue(value)[0] : undefined;
  if (valueErr) throw new Error(`invalid taint value ${JSON.stringify(value)}: ${valueErr}`);
  return { key, ...(value ? { value } : {}), effect: effect as TaintEffect };
}

/** A taint back in `key=value:Effect` form. */
export function formatTaint(t: Taint): string {
  return `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;
}

/** The kubelet's --register-with-taints list: taints separated by commas. */
export function parseTaintList(list: string): Taint[] {
  return list.split(',').filter((x) => x.trim()).map((x) => parseTaint(x.trim()));
}

/** The kubelet's --node-labels list: `key=value` pairs separated by commas. */
export function parseNodeLabels(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list.split(',').map((x) => x.trim()).filter(Boolean)) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    if (eq < 0) throw new Error(`invalid node label ${JSON.stringify(pair)}: want key=value`);
    const keyErr = qualifiedName(key)[0];
    if (keyErr) throw new Error(`invalid node label key ${JSON.stringify(key)}: ${keyErr}`);
    const valueErr = labelValue(value)[0];
    if (valueErr) throw new Error(`invalid node label value ${JSON.stringify(value)}: ${valueErr}`);
    out[key] = value;
  }
  return out;
}
