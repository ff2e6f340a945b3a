// How the printers upstream write selectors, label maps, container lists and "more" suffixes in cells.
import type { LabelSelector } from '@kemu/core';

/** `k=v,k2=v2` sorted, `<none>` when empty (upstream's labels.FormatLabels). */
export function formatLabels(m: Record<string, string> | undefined | null): string {
  const keys = Object.keys(m ?? {}).sort();
  return keys.length ? keys.map((k) => `${k}=${m![k]}`).join(',') : '<none>';
}

/** A label selector as a string (`app=web,tier in (a,b),!legacy`), `<none>` when empty or absent. */
export function formatLabelSelector(s: LabelSelector | undefined | null): string {
  if (!s) return '<none>';
  const parts: [string, string][] = [];
  for (const [k, v] of Object.entries(s.matchLabels ?? {})) parts.push([k, `${k}=${v}`]);
  for (const e of s.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    const text =
      e.operator === 'In' ? `${e.key} in (${values})` : e.operator === 'NotIn' ? `${e.key} notin (${values})` : e.operator === 'Exists' ? e.key : `!${e.key}`;
    parts.push([e.key, text]);
  }
  parts.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return parts.length ? parts.map(([, t]) => t).join(',') : '<none>';
}

/** The first `max` items joined by `,`, then ` + N more...` (upstream's list cells). */
export function firstOf(items: string[], max: number, sep = ','): string {
  if (items.length <= max) return items.join(sep);
  return `${items.slice(0, max).join(sep)} + ${items.length - max} more...`;
}

interface Container {
  name: string;
  image?: string;
}

/** The CONTAINERS and IMAGES cells of a pod template. */
export function containersAndImages(containers: Container[] | undefined): [string, string] {
  const list = containers ?? [];
  return [list.map((c) => c.name).join(','), list.map((c) => c.image ?? '').join(',')];
}
