// Media types in and out, as kube-apiserver negotiates them: the Accept header picks JSON, YAML, protobuf,
// a meta.k8s.io Table or PartialObjectMetadata, or aggregated discovery; the Content-Type of a body picks its
// decoder. What cannot be served is a 406 NotAcceptable, what cannot be read a 415 UnsupportedMediaType,
// each with upstream's message.
import { StatusError } from '@kemu/core';

export const JSON_TYPE = 'application/json';
export const YAML_TYPE = 'application/yaml';
export const PROTOBUF_TYPE = 'application/vnd.kubernetes.protobuf';
export const APPLY_YAML_TYPE = 'application/apply-patch+yaml';
export const APPLY_CBOR_TYPE = 'application/apply-patch+cbor';

export interface MediaRange {
  type: string;
  subtype: string;
  params: Record<string, string>;
  q: number;
}

/** Parses an Accept header into media ranges, most preferred first (q, then order). */
export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header || !header.trim()) return [{ type: '*', subtype: '*', params: {}, q: 1 }];
  const out: (MediaRange & { i: number })[] = [];
  header.split(',').forEach((part, i) => {
    const [mt, ...ps] = part.split(';').map((s) => s.trim());
    const [type, subtype] = (mt ?? '').toLowerCase().split('/');
    if (!type || !subtype) return;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
      if (k === 'q') q = Number(v);
      else params[k] = v;
    }
    if (!(q > 0)) return;
    out.push({ type, subtype, params, q, i });
  });
  return out.sort((a, b) => b.q - a.q || a.i - b.i);
}

/** The kinds of response body a handler can produce. */
export type Rendering =
  | { kind: 'object'; media: 'json' | 'yaml' | 'protobuf' }
  | { kind: 'table'; version: 'v1' | 'v1beta1'; media: 'json' | 'yaml' | 'protobuf' }
  | { kind: 'partial'; version: 'v1' | 'v1beta1'; media: 'json' | 'yaml' | 'protobuf' }
  | { kind: 'discovery'; version: 'v2' | 'v2beta1' };

export interface RenderCapabilities {
  tables: boolean;
  protobuf: boolean;
  /** The handler serves discovery documents (and can answer aggregated discovery). */
  discovery?: boolean;
  /** The handler serves objects that can be shown as Tables / metadata (resource reads). */
  resource?: boolean;
}

function mediaOf(r: MediaRange): 'json' | 'yaml' | 'protobuf' | undefined {
  const t = `${r.type}/${r.subtype}`;
  if (t === JSON_TYPE) return 'json';
  if (t === YAML_TYPE) return 'yaml';
  if (t === PROTOBUF_TYPE) return 'protobuf';
  if (t === '*/*' || t === 'application/*') return 'json';
  return undefined;
}

export function notAcceptable(caps: RenderCapabilities): StatusError {
  const types = [JSON_TYPE, YAML_TYPE, ...(caps.protobuf ? [PROTOBUF_TYPE] : [])];
  return new StatusError('NotAcceptable', 406, `only the following media types are accepted: ${types.join(', ')}`);
}

/** Picks what to render for an Accept header; NotAcceptable when nothing offered can be produced. */
export function negotiate(accept: string | undefined, caps: RenderCapabilities): Rendering {
  for (const r of parseAccept(accept)) {
    const media = mediaOf(r);
    if (!media) continue;
    if (media === 'protobuf' && !caps.protobuf) continue;
    const { as, g, v } = r.params;
    if (!as) return { kind: 'object', media };
    if (as === 'APIGroupDiscoveryList' && g === 'apidiscovery.k8s.io' && (v === 'v2' || v === 'v2beta1') && media === 'json') {
      if (caps.discovery) return { kind: 'discovery', version: v };
      continue;
    }
    if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1') || !caps.resource) continue;
    if (as === 'Table' && caps.tables) return { kind: 'table', version: v, media };
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') return { kind: 'partial', version: v, media };
  }
  throw notAcceptable(caps);
}

/** The Content-Type of a body reduced to its media type (no parameters), lower-cased. */
export function bodyMediaType(header: string | undefined): string {
  // What clients send nearly always: no parameters, already lower-case.
  if (header === JSON_TYPE) return JSON_TYPE;
  return (header ?? '').split(';')[0].trim().toLowerCase();
}

export function unsupportedMediaType(accepted: string[]): StatusError {
  return new StatusError(
    'UnsupportedMediaType',
    415,
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}
