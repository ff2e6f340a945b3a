// The scale subresource of a custom resource: an autoscaling/v1 Scale read from, and written to, the paths
// the CRD names (specReplicasPath, statusReplicasPath, labelSelectorPath).
import { BadRequestError, type KubeObject } from '@kemu/core';
import { findAll, parseJsonPath } from './jsonpath.js';
import type { ScaleAdapter } from '../subresources.js';
import { servedCustomResource, storageVersion } from './custom-resources.js';
import type { CustomResourceDefinitionVersion } from './types.js';

export interface Scale {
  apiVersion: 'autoscaling/v1';
  kind: 'Scale';
  metadata: KubeObject['metadata'];
  spec: { replicas?: number };
  status: { replicas: number; selector?: string };
}

type ScaleSpec = NonNullable<NonNullable<CustomResourceDefinitionVersion['subresources']>['scale']>;

const first = (obj: unknown, path: string) => findAll(obj, parseJsonPath(path))[0];

export function scaleOf(obj: KubeObject, s: ScaleSpec): Scale {
  const m = obj.metadata;
  const spec = first(obj, s.specReplicasPath);
  const status = first(obj, s.statusReplicasPath);
  const selector = s.labelSelectorPath ? first(obj, s.labelSelectorPath) : undefined;
  return {
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: typeof spec === 'number' ? { replicas: spec } : {},
    status: { replicas: typeof status === 'number' ? status : 0, ...(typeof selector === 'string' ? { selector } : {}) },
  };
}

/** The object with the Scale's spec.replicas written at specReplicasPath (a copy). */
export function withScale(obj: KubeObject, s: ScaleSpec, scale: { spec?: { replicas?: unknown } }): KubeObject {
  const replicas = scale.spec?.replicas;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
    throw new BadRequestError('spec.replicas: Invalid value: must be a non-negative integer');
  const out = structuredClone(obj);
  const keys = s.specReplicasPath.split('.').slice(1);
  let cur: Record<string, unknown> = out;
  for (const k of keys.slice(0, -1)) cur = (cur[k] ??= {}) as Record<string, unknown>;
  cur[keys[keys.length - 1]] = replicas;
  return out;
}

/** How the scale subresource reads and writes a custom kind, when its CRD's storage version has one. */
export function customResourceScale(kind: string): ScaleAdapter | undefined {
  const crd = servedCustomResource(kind);
  const s = crd && storageVersion(crd).subresources?.scale;
  if (!s) return undefined;
  return { scaleOf: (obj) => ({ ...scaleOf(obj, s) }), withReplicas: (obj, replicas) => withScale(obj, s, { spec: { replicas } }) };
}
