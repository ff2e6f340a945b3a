import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionAttributes } from '../auth-seams.js';
import { evaluatePodSecurity, formatViolations } from './pod-security-checks.js';
import { PodSecurityAdmission } from './pod-security.js';

const pod = (name: string, spec: Record<string, unknown>, ns = 'secure'): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec });
const restrictedContainer = {
  name: 'app',
  image: 'busybox',
  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
};

function attrs(obj: KubeObject, op: 'CREATE' | 'UPDATE' = 'CREATE', old?: KubeObject, resource = 'pods', group = ''): AdmissionAttributes {
  return {
    operation: op,
    kind: { group, version: 'v1', kind: obj.kind },
    resource: { group, version: 'v1', resource },
    subresource: '',
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name ?? '',
    object: obj,
    oldObject: old,
    dryRun: false,
    userInfo: { name: 'alice', groups: ['system:authenticated'] },
    warnings: [],
    auditAnnotations: {},
  };
}

describe('Pod Security Standards checks', () => {
  it('words a plain pod under restricted as kube-apiserver does', () => {
    const v = formatViolations(evaluatePodSecurity('restricted', {}, { containers: [{ name: 'nginx', image: 'nginx' }] }));
    expect(v).toBe(
      'allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
  });

  it('lists baseline violations: host namespaces, privileged, hostPath, hostPort, capabilities', () => {
    const spec = {
      hostNetwork: true,
      hostPID: true,
      volumes: [{ name: 'root', hostPath: { path: '/' } }, { name: 'cfg', configMap: { name: 'c' } }],
      containers: [
        { name: 'a', securityContext: { privileged: true, capabilities: { add: ['NET_ADMIN', 'CHOWN'] } }, ports: [{ containerPort: 80, hostPort: 8080 }] },
        { name: 'b', securityContext: { privileged: true } },
      ],
    };
    expect(formatViolations(evaluatePodSecurity('baseline', {}, spec))).toBe(
      'non-default capabilities (container "a" must not include "NET_ADMIN" in securityContext.capabilities.add), ' +
        'host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "root"), ' +
        'hostPort (container "a" uses hostPort 8080), privileged (containers "a", "b" must not set securityContext.privileged=true)',
    );
    // restricted replaces hostPath volumes with restricted volume types
    const r = formatViolations(evaluatePodSecurity('restricted', {}, spec));
    expect(r).toContain('restricted volume types (volume "root" uses restricted volume type "hostPath")');
    expect(r).not.toContain('hostPath volumes');
    expect(evaluatePodSecurity('privileged', {}, spec)).toEqual([]);
  });

  it('accepts a pod that meets restricted', () => {
    expect(evaluatePodSecurity('restricted', {}, { containers: [restrictedContainer], volumes: [{ name: 'x', emptyDir: {} }] })).toEqual([]);
  });
});

describe('PodSecurity admission', () => {
  let store: Store;
  let psa: PodSecurityAdmission;

  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'secure', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    await store.create({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'lax', labels: { 'pod-security.kubernetes.io/warn': 'baseline', 'pod-security.kubernetes.io/warn-version': 'v1.32', 'pod-security.kubernetes.io/audit': 'restricted' } },
    });
    psa = new PodSecurityAdmission(store);
  });

  it('refuses a privileged pod under enforce=restricted with the upstream 403', async () => {
    const p = pod('priv', { containers: [{ ...restrictedContainer, securityContext: { ...restrictedContainer.securityContext, privileged: true } }] });
    await expect(psa.validate(attrs(p))).rejects.toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: 'pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true)',
    });
    await expect(psa.validate(attrs(pod('ok', { containers: [restrictedContainer] })))).resolves.toBeUndefined();
  });

  it('warns and audits without refusing under warn and audit', async () => {
    const a = attrs(pod('priv', { containers: [{ name: 'c', securityContext: { privileged: true } }] }, 'lax'));
    await psa.validate(a);
    expect(a.warnings).toEqual(['would violate PodSecurity "baseline:v1.32": privileged (container "c" must not set securityContext.privileged=true)']);
    expect(a.auditAnnotations?.['pod-security.kubernetes.io/audit-violations']).toMatch(/^would violate PodSecurity "restricted:latest": privileged .*, allowPrivilegeEscalation != false/);
  });

  it('warns, but does not refuse, a Deployment whose template violates enforce', async () => {
    const d: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'secure' },
      spec: { template: { metadata: {}, spec: { hostNetwork: true, containers: [restrictedContainer] } } },
    };
    const a = attrs(d, 'CREATE', undefined, 'deployments', 'apps');
    await psa.validate(a);
    expect(a.warnings).toEqual([]); // no warn label in this namespace
  });

  it('refuses a bad level label on a namespace, and warns when a tighter level finds violating pods', async () => {
    const ns = (labels: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lax', labels } });
    await expect(psa.validate(attrs(ns({ 'pod-security.kubernetes.io/enforce': 'strict' }), 'CREATE', undefined, 'namespaces'))).rejects.toMatchObject({
      code: 422,
      message: 'Namespace "lax" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted',
    });
    await store.create(pod('hostnet', { hostNetwork: true, containers: [{ name: 'c', image: 'busybox' }] }, 'lax'));
    const a = attrs(ns({ 'pod-security.kubernetes.io/enforce': 'baseline' }), 'UPDATE', ns({}), 'namespaces');
    await psa.validate(a);
    expect(a.warnings).toEqual(['existing pods in namespace "lax" violate the new PodSecurity enforce level "baseline:latest"', 'hostnet: host namespaces']);
  });

  it('lets an image-only update of an already admitted pod through', async () => {
    const old = pod('legacy', { hostNetwork: true, containers: [{ name: 'c', image: 'busybox:1' }] });
    const next = pod('legacy', { hostNetwork: true, containers: [{ name: 'c', image: 'busybox:2' }] });
    await expect(psa.validate(attrs(next, 'UPDATE', old))).resolves.toBeUndefined();
    const worse = pod('legacy', { hostNetwork: true, hostPID: true, containers: [{ name: 'c', image: 'busybox:2' }] });
    await expect(psa.validate(attrs(worse, 'UPDATE', old))).rejects.toMatchObject({ code: 403 });
  });
});
