import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionAttributes } from '../auth-seams.js';
import { ValidatingAdmissionPolicyAdmission, VALIDATION_FAILURE_ANNOTATION } from './validating-admission-policy.js';

const V = 'admissionregistration.k8s.io/v1';
const deployment = (name: string, replicas: number, ns = 'dev', image = 'nginx:1.25'): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: ns, labels: { app: name } },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image }] } } },
});
function attrs(obj: KubeObject, op: 'CREATE' | 'UPDATE' = 'CREATE'): AdmissionAttributes {
  return {
    operation: op,
    kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
    resource: { group: 'apps', version: 'v1', resource: 'deployments' },
    subresource: '',
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name ?? '',
    object: obj,
    dryRun: false,
    userInfo: { name: 'alice', groups: ['system:authenticated'] },
    warnings: [],
    auditAnnotations: {},
  };
}
const rules = [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments'] }];

describe('ValidatingAdmissionPolicy', () => {
  let store: Store;
  let vap: ValidatingAdmissionPolicyAdmission;
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  };
  const policy = async (name: string, spec: Record<string, unknown>, actions: string[] = ['Deny'], bindingSpec: Record<string, unknown> = {}) => {
    await store.create({ apiVersion: V, kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec: { matchConstraints: { resourceRules: rules }, ...spec } });
    await store.create({ apiVersion: V, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: `${name}-binding` }, spec: { policyName: name, validationActions: actions, ...bindingSpec } });
    await until(() => vap.bindings.indexer.get(undefined, `${name}-binding`) !== undefined && vap.policies.indexer.get(undefined, name) !== undefined);
  };

  beforeEach(async () => {
    store = await createMemoryStore();
    for (const [name, env] of [['dev', 'test'], ['prod', 'prod']]) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { environment: env } } });
    vap = new ValidatingAdmissionPolicyAdmission(store);
    await vap.start();
  });
  afterEach(() => vap.stop());

  it('denies what a CEL validation refuses, worded as kube-apiserver, and lets the rest through', async () => {
    await policy('max-replicas', { validations: [{ expression: 'object.spec.replicas <= 5' }] });
    await expect(vap.validate(attrs(deployment('web', 3)))).resolves.toBeUndefined();
    const err = await vap.validate(attrs(deployment('web', 7))).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5`,
    });
    expect((err as { toStatus(): { details: unknown } }).toStatus().details).toMatchObject({
      kind: 'deployments',
      group: 'apps',
      causes: [{ message: `ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5`, field: '' }],
    });
  });

  it('uses message, messageExpression, reason, variables, request and namespace selectors', async () => {
    await policy(
      'no-latest',
      {
        variables: [{ name: 'images', expression: 'object.spec.template.spec.containers.map(c, c.image)' }],
        validations: [
          { expression: "variables.images.all(i, !i.endsWith(':latest'))", messageExpression: "'image tag latest is not allowed for ' + object.metadata.name", reason: 'Forbidden' },
          { expression: "request.userInfo.username != 'mallory'", message: 'mallory may not deploy' },
        ],
      },
      ['Deny'],
      { matchResources: { namespaceSelector: { matchLabels: { environment: 'prod' } } } },
    );
    await expect(vap.validate(attrs(deployment('api', 1, 'dev', 'nginx:latest')))).resolves.toBeUndefined();
    await expect(vap.validate(attrs(deployment('api', 1, 'prod', 'nginx:latest')))).rejects.toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: `deployments.apps "api" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest-binding' denied request: image tag latest is not allowed for api`,
    });
    const m = attrs(deployment('api', 1, 'prod'));
    m.userInfo = { name: 'mallory', groups: [] };
    await expect(vap.validate(m)).rejects.toMatchObject({ message: expect.stringMatching(/denied request: mallory may not deploy$/) });
  });

  it('warns and audits instead of denying when the binding says so', async () => {
    await policy('max-replicas', { validations: [{ expression: 'object.spec.replicas <= 5', message: 'at most 5 replicas' }] }, ['Warn', 'Audit']);
    const a = attrs(deployment('web', 9));
    await vap.validate(a);
    expect(a.warnings).toEqual([`Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': at most 5 replicas`]);
    expect(JSON.parse(a.auditAnnotations![VALIDATION_FAILURE_ANNOTATION])).toEqual([
      { message: 'at most 5 replicas', policy: 'max-replicas', binding: 'max-replicas-binding', validationActions: ['Warn', 'Audit'] },
    ]);
  });

  it('follows failurePolicy when an expression errors, and reads params', async () => {
    await policy('broken', { failurePolicy: 'Fail', validations: [{ expression: 'object.spec.nope > 1' }] });
    await expect(vap.validate(attrs(deployment('web', 1)))).rejects.toMatchObject({ message: expect.stringContaining(`denied request: expression 'object.spec.nope > 1' resulted in error:`) });
    await store.delete('ValidatingAdmissionPolicyBinding', '', 'broken-binding');
    await until(() => vap.bindings.indexer.list().length === 0);
    await policy('lenient', { failurePolicy: 'Ignore', validations: [{ expression: 'object.spec.nope > 1' }] });
    await expect(vap.validate(attrs(deployment('web', 1)))).resolves.toBeUndefined();
    await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'limits', namespace: 'dev' }, data: { max: '2' } });
    await policy('param-max', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: 'object.spec.replicas <= int(params.data.max)' }] }, ['Deny'], { paramRef: { name: 'limits', namespace: 'dev' } });
    await expect(vap.validate(attrs(deployment('web', 2)))).resolves.toBeUndefined();
    await expect(vap.validate(attrs(deployment('web', 3)))).rejects.toMatchObject({ message: expect.stringContaining('failed expression: object.spec.replicas <= int(params.data.max)') });
  });
});
