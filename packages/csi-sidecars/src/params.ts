// StorageClass parameters as external-provisioner reads them: keys under csi.storage.k8s.io/ name secrets
// and the filesystem type and are removed before the driver sees the parameters; templates in secret
// names are resolved per claim.
import type { PersistentVolumeClaim } from '@kemu/core';

export const PREFIX = 'csi.storage.k8s.io/';
export const FSTYPE_KEY = `${PREFIX}fstype`;

/** The secret kinds a class can name, with the template variables each accepts. */
export const SECRET_KINDS = {
  provisioner: {
    name: `${PREFIX}provisioner-secret-name`,
    namespace: `${PREFIX}provisioner-secret-namespace`,
  },
  controllerPublish: {
    name: `${PREFIX}controller-publish-secret-name`,
    namespace: `${PREFIX}controller-publish-secret-namespace`,
  },
  nodeStage: { name: `${PREFIX}node-stage-secret-name`, namespace: `${PREFIX}node-stage-secret-namespace` },
  nodePublish: {
    name: `${PREFIX}node-publish-secret-name`,
    namespace: `${PREFIX}node-publish-secret-namespace`,
  },
  controllerExpand: {
    name: `${PREFIX}controller-expand-secret-name`,
    namespace: `${PREFIX}controller-expand-secret-namespace`,
  },
  nodeExpand: {
    name: `${PREFIX}node-expand-secret-name`,
    namespace: `${PREFIX}node-expand-secret-namespace`,
  },
} as const;
export type SecretKind = keyof typeof SECRET_KINDS;

/** Keys external-provisioner adds with --extra-create-metadata. */
export const PVC_NAME_KEY = `${PREFIX}pvc/name`;
export const PVC_NAMESPACE_KEY = `${PREFIX}pvc/namespace`;
export const PV_NAME_KEY = `${PREFIX}pv/name`;

const RESERVED = new Set<string>([
  FSTYPE_KEY,
  ...Object.values(SECRET_KINDS).flatMap((k) => [k.name, k.namespace]),
]);

export class ParameterError extends Error {}

export interface ParsedParameters {
  /** What the driver receives. */
  driverParameters: Record<string, string>;
  fsType: string;
  secrets: Partial<Record<SecretKind, { nameTemplate: string; namespaceTemplate: string }>>;
}

export function parseClassParameters(params: Record<string, string> | undefined): ParsedParameters {
  const out: ParsedParameters = { driverParameters: {}, fsType: '', secrets: {} };
  for (const [k, v] of Object.entries(params ?? {})) {
    if (k.startsWith(PREFIX)) {
      if (!RESERVED.has(k))
        throw new ParameterError(`found unknown parameter key "${k}" with reserved namespace ${PREFIX}`);
      continue;
    }
    if (k.toLowerCase() === 'fstype') {
      // Deprecated spelling of csi.storage.k8s.io/fstype, still honoured.
      out.fsType = v;
      continue;
    }
    out.driverParameters[k] = v;
  }
  if (params?.[FSTYPE_KEY] !== undefined) out.fsType = params[FSTYPE_KEY];
  for (const [kind, keys] of Object.entries(SECRET_KINDS) as [
    SecretKind,
    { name: string; namespace: string },
  ][]) {
    const name = params?.[keys.name];
    const ns = params?.[keys.namespace];
    if (name === undefined && ns === undefined) continue;
    if (name === undefined || ns === undefined) {
      throw new ParameterError(
        `either name and namespace for ${kind} secrets specified, Both must be specified`,
      );
    }
    out.secrets[kind] = { nameTemplate: name, namespaceTemplate: ns };
  }
  return out;
}

/** Resolve `${pvc.name}`, `${pvc.namespace}`, `${pv.name}`, `${pvc.annotations['key']}` in a secret reference. */
export function resolveTemplate(
  template: string,
  pvName: string,
  claim: PersistentVolumeClaim | undefined,
  allowAnnotations: boolean,
): string {
  return template.replace(/\$\{([^}]+)\}/g, (_m, expr: string) => {
    if (expr === 'pv.name') return pvName;
    if (expr === 'pvc.name' && claim) return claim.metadata.name!;
    if (expr === 'pvc.namespace' && claim) return claim.metadata.namespace!;
    const a = /^pvc\.annotations\['([^']+)'\]$/.exec(expr);
    if (a && claim && allowAnnotations) return claim.metadata.annotations?.[a[1]!] ?? '';
    throw new ParameterError(
      `error resolving value "${template}": "${expr}" is not a supported template variable here`,
    );
  });
}
