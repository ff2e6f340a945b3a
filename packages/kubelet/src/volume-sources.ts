// The files of configMap, secret, downwardAPI and projected volumes, as the kubelet's volume plugins make
// their payloads (configmap/secret MakePayload, downwardapi CollectData, projected collectData): every key,
// or only the listed `items` (each with its own mode); a missing object is an error unless `optional`,
// a missing listed key too. The payload is written by the AtomicWriter.
import type { ConfigMap, DownwardAPIVolumeFile, KeyToPath, Pod, Secret, Volume } from '@kemu/core';
import type { FileProjection } from './atomic-writer.js';
import type { EnvObjectSource } from './container-env.js';
import { containerResourceValue, DownwardAPIError, podFieldValue } from './downward-api.js';

/** A volume source that cannot be set up (yet); the message is the kubelet's. */
export class VolumeSourceError extends Error {
  override readonly name = 'VolumeSourceError';
}

const DEFAULT_MODE = 0o644;
type Payload = Map<string, FileProjection>;

/** The volume kinds whose files the kubelet writes (and refreshes) itself. */
export function isSourceVolume(v: Volume): boolean {
  return !!(v.configMap || v.secret || v.downwardAPI || v.projected);
}

/** The directory plugin name of a volume kind, as in `pods/<uid>/volumes/kubernetes.io~<name>/<volume>`. */
export function pluginDirName(v: Volume): string {
  if (v.configMap) return 'kubernetes.io~configmap';
  if (v.secret) return 'kubernetes.io~secret';
  if (v.downwardAPI) return 'kubernetes.io~downward-api';
  if (v.projected) return 'kubernetes.io~projected';
  if (v.emptyDir) return 'kubernetes.io~empty-dir';
  return 'kubernetes.io~unknown';
}

function keyedPayload(
  out: Payload,
  what: 'configmap' | 'secret',
  values: Map<string, Buffer>,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
): void {
  if (!items?.length) {
    for (const [k, data] of values) out.set(k, { data, mode: defaultMode });
    return;
  }
  for (const item of items) {
    const data = values.get(item.key);
    if (!data) {
      if (optional) continue;
      throw new VolumeSourceError(`${what} references non-existent ${what === 'configmap' ? 'config' : 'secret'} key: ${item.key}`);
    }
    out.set(item.path, { data, mode: item.mode ?? defaultMode });
  }
}

function configMapValues(cm: ConfigMap | undefined): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm?.data ?? {})) m.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm?.binaryData ?? {})) m.set(k, Buffer.from(v, 'base64'));
  return m;
}

function secretValues(s: Secret | undefined): Map<string, Buffer> {
  return new Map(Object.entries(s?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

async function configMapInto(out: Payload, pod: Pod, src: EnvObjectSource, name: string, items: KeyToPath[] | undefined, mode: number, optional: boolean) {
  const cm = await src.configMap(pod.metadata.namespace ?? 'default', name);
  if (!cm && !optional) throw new VolumeSourceError(`configmap "${name}" not found`);
  keyedPayload(out, 'configmap', configMapValues(cm), items, mode, optional);
}

async function secretInto(out: Payload, pod: Pod, src: EnvObjectSource, name: string, items: KeyToPath[] | undefined, mode: number, optional: boolean) {
  const s = await src.secret(pod.metadata.namespace ?? 'default', name);
  if (!s && !optional) throw new VolumeSourceError(`secret "${name}" not found`);
  keyedPayload(out, 'secret', secretValues(s), items, mode, optional);
}

async function downwardInto(out: Payload, pod: Pod, src: EnvObjectSource, items: DownwardAPIVolumeFile[] | undefined, mode: number) {
  for (const item of items ?? []) {
    let value: string;
    try {
      if (item.fieldRef) value = podFieldValue(pod, item.fieldRef.fieldPath, { podIPs: [], hostIPs: [] });
      else if (item.resourceFieldRef) {
        const r = item.resourceFieldRef;
        const c = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((x) => x.name === r.containerName);
        if (!c) throw new DownwardAPIError(`container ${r.containerName ?? ''} not found in pod`);
        value = containerResourceValue(c, r.resource, r.divisor, await src.nodeAllocatable());
      } else continue;
    } catch (err) {
      if (err instanceof DownwardAPIError) throw new VolumeSourceError(err.message);
      throw err;
    }
    out.set(item.path, { data: Buffer.from(value, 'utf8'), mode: item.mode ?? mode });
  }
}

/** Writes a projected service account token into the payload; absent when the cluster serves no tokens. */
export type TokenSource = (pod: Pod, audience: string | undefined, expirationSeconds: number) => Promise<string | undefined>;

/** The files of a configMap, secret, downwardAPI or projected volume. */
export async function sourcePayload(pod: Pod, v: Volume, src: EnvObjectSource, tokens?: TokenSource): Promise<Payload> {
  const out: Payload = new Map();
  if (v.configMap) {
    const s = v.configMap;
    await configMapInto(out, pod, src, s.name, s.items, s.defaultMode ?? DEFAULT_MODE, s.optional === true);
  } else if (v.secret) {
    const s = v.secret;
    await secretInto(out, pod, src, s.secretName, s.items, s.defaultMode ?? DEFAULT_MODE, s.optional === true);
  } else if (v.downwardAPI) {
    await downwardInto(out, pod, src, v.downwardAPI.items, v.downwardAPI.defaultMode ?? DEFAULT_MODE);
  } else if (v.projected) {
    const mode = v.projected.defaultMode ?? DEFAULT_MODE;
    const errors: string[] = [];
    for (const p of v.projected.sources ?? []) {
      try {
        if (p.configMap) await configMapInto(out, pod, src, p.configMap.name, p.configMap.items, mode, p.configMap.optional === true);
        else if (p.secret) await secretInto(out, pod, src, p.secret.name, p.secret.items, mode, p.secret.optional === true);
        else if (p.downwardAPI) await downwardInto(out, pod, src, p.downwardAPI.items, mode);
        else if (p.serviceAccountToken) {
          const t = p.serviceAccountToken;
          const token = tokens ? await tokens(pod, t.audience, t.expirationSeconds ?? 3600) : undefined;
          if (token === undefined) throw new VolumeSourceError('the cluster serves no TokenRequest API: no service account token to project');
          out.set(t.path, { data: Buffer.from(token, 'utf8'), mode });
        } else if (p.clusterTrustBundle) {
          if (!p.clusterTrustBundle.optional) throw new VolumeSourceError('clusterTrustBundle projections are not supported by this kubelet');
        }
      } catch (err) {
        if (!(err instanceof VolumeSourceError)) throw err;
        errors.push(err.message);
      }
    }
    // Every source is tried; the errors are reported together, as an aggregate.
    if (errors.length === 1) throw new VolumeSourceError(errors[0]);
    if (errors.length > 1) throw new VolumeSourceError(`[${errors.join(', ')}]`);
  }
  return out;
}
