// The ServiceAccount admission plugin: a pod runs as its namespace's `default` ServiceAccount unless it
// names one; the account must exist; unless automounting is off (on the pod or the account), every
// container gets the projected `kube-api-access-<suffix>` volume kubelet fills with a bound token, the
// cluster CA (ConfigMap kube-root-ca.crt) and the namespace, at /var/run/secrets/kubernetes.io/serviceaccount;
// the account's imagePullSecrets are copied to a pod that has none.
import { randomBytes } from 'node:crypto';
import type { Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { type AdmissionLookups, storeLookups } from './admission-lookups.js';

export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
/** Token lifetime kubelet asks for: an hour plus seven seconds, as upstream's plugin writes it. */
const TOKEN_EXPIRATION_SECONDS = 3607;
const SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/** Random bytes drawn a page at a time: one call into the CSPRNG serves many suffixes. */
let pool = Buffer.alloc(0);
let used = 0;

function suffix(): string {
  if (used + 5 > pool.length) {
    pool = randomBytes(4096);
    used = 0;
  }
  let out = '';
  for (let i = 0; i < 5; i++) out += SUFFIX_CHARS[pool[used++] % SUFFIX_CHARS.length];
  return out;
}

export class ServiceAccountAdmission implements AdmissionChain {
  constructor(
    store: Store,
    private readonly lookups: AdmissionLookups = storeLookups(store),
  ) {}

  private applies(attrs: AdmissionAttributes): boolean {
    return attrs.operation === 'CREATE' && attrs.resource.group === '' && attrs.resource.resource === 'pods' && !attrs.subresource && Boolean(attrs.object);
  }

  async admit(attrs: AdmissionAttributes): Promise<void> {
    if (!this.applies(attrs)) return;
    const pod = attrs.object!;
    const spec = (pod.spec ??= {});
    if (pod.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined) return;
    spec.serviceAccountName ||= 'default';
    const sa = await this.lookups.serviceAccount(attrs.namespace, spec.serviceAccountName);
    if (!sa) {
      throw forbiddenError('', 'pods', attrs.name, `error looking up service account ${attrs.namespace}/${spec.serviceAccountName}: serviceaccount "${spec.serviceAccountName}" not found`);
    }
    if (!spec.imagePullSecrets?.length && sa.imagePullSecrets?.length) spec.imagePullSecrets = sa.imagePullSecrets.map((s: { name?: string }) => ({ name: s.name }));
    const automount = spec.automountServiceAccountToken ?? sa.automountServiceAccountToken ?? true;
    if (!automount) return;
    const all = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
    if (all.some((c: any) => (c.volumeMounts ?? []).some((m: any) => m.mountPath === SERVICE_ACCOUNT_MOUNT))) return;
    const existing = (spec.volumes ?? []).find((v: any) => v.name?.startsWith('kube-api-access-') && v.projected);
    const name = existing?.name ?? `kube-api-access-${suffix()}`;
    if (!existing) {
      spec.volumes = [
        ...(spec.volumes ?? []),
        {
          name,
          projected: {
            defaultMode: 0o644,
            sources: [
              { serviceAccountToken: { expirationSeconds: TOKEN_EXPIRATION_SECONDS, path: 'token' } },
              { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      ];
    }
    for (const c of all) c.volumeMounts = [...(c.volumeMounts ?? []), { name, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT }];
  }

  async validate(attrs: AdmissionAttributes): Promise<void> {
    if (!this.applies(attrs)) return;
    const pod = attrs.object!;
    if (pod.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined && pod.spec?.serviceAccountName) {
      throw forbiddenError('', 'pods', attrs.name, 'a mirror pod may not reference service accounts');
    }
  }
}
