import { describe, expect, it } from 'vitest';
import type { Pod } from './api-core.js';
import { applyDefaults } from './defaults.js';
import { validationErrors } from './validation.js';

const pod = (spec: Partial<Pod['spec']>): Pod => {
  const p: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default' },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
  };
  applyDefaults(p);
  return p;
};
const messages = (p: Pod) => validationErrors(p).map((c) => `${c.field}: ${c.message}`);

describe('pod source validation', () => {
  it('keeps volume item paths inside the volume and modes in range', () => {
    const p = pod({
      volumes: [
        {
          name: 'cfg',
          configMap: {
            name: 'c',
            defaultMode: 0o1777,
            items: [
              { key: 'a', path: '../escape' },
              { key: 'b', path: '/etc/passwd' },
              { key: 'c', path: '..data' },
              { key: 'd', path: 'ok', mode: -1 },
              { key: 'e', path: 'ok' },
            ],
          },
        },
      ],
    });
    expect(messages(p)).toEqual([
      'spec.volumes[0].configMap.defaultMode: Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive',
      `spec.volumes[0].configMap.items[0].path: Invalid value: "../escape": must not contain '..'`,
      'spec.volumes[0].configMap.items[1].path: Invalid value: "/etc/passwd": must be a relative path',
      `spec.volumes[0].configMap.items[2].path: Invalid value: "..data": must not start with '..'`,
      'spec.volumes[0].configMap.items[3].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive',
      'spec.volumes[0].configMap.items[4]: Invalid value: "ok": conflicting duplicate paths',
    ]);
  });

  it('checks projected sources, downward API fields and token lifetimes', () => {
    const p = pod({
      volumes: [
        {
          name: 'all',
          projected: {
            sources: [
              { secret: { name: 's', items: [{ key: 'k', path: 'x' }] }, configMap: { name: 'c' } },
              { downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'spec.nodeName' } }, { path: 'cpu', resourceFieldRef: { resource: 'limits.cpu' } }] } },
              { serviceAccountToken: { path: 'token', expirationSeconds: 60 } },
            ],
          },
        },
      ],
    });
    expect(messages(p)).toEqual([
      'spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source',
      'spec.volumes[0].projected.sources[1].downwardAPI.items[0]: Invalid value: "x": conflicting duplicate paths',
      'spec.volumes[0].projected.sources[1].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"',
      'spec.volumes[0].projected.sources[1].downwardAPI.items[1].resourceFieldRef.containerName: Required value',
      'spec.volumes[0].projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
    ]);
  });

  it('checks env sources, envFrom, subPath and lifecycle handlers', () => {
    const p = pod({
      terminationGracePeriodSeconds: 10,
      containers: [
        {
          name: 'app',
          image: 'busybox',
          env: [
            { name: '1BAD', value: 'x' },
            { name: 'BOTH', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'NONE', valueFrom: {} },
            { name: 'TWO', valueFrom: { fieldRef: { fieldPath: 'metadata.name' }, secretKeyRef: { name: 's', key: 'k' } } },
            { name: 'LABELS', valueFrom: { fieldRef: { fieldPath: 'metadata.labels' } } },
            { name: 'ONE_LABEL', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
            { name: 'KEY', valueFrom: { configMapKeyRef: { name: 'c', key: 'bad/key' } } },
          ],
          envFrom: [{ prefix: '9_', configMapRef: { name: 'c' } }, {}],
          volumeMounts: [{ name: 'v', mountPath: '/v', subPath: '../up', subPathExpr: '$(X)' }],
          lifecycle: { postStart: {}, preStop: { sleep: { seconds: 11 } } },
        },
      ],
      volumes: [{ name: 'v', emptyDir: {} }],
    });
    const fields = messages(p).map((m) => m.split(': ').slice(0, 2).join(': '));
    expect(fields).toEqual([
      'spec.containers[0].env[0].name: Invalid value',
      'spec.containers[0].env[1].valueFrom: Invalid value',
      'spec.containers[0].env[2].valueFrom: Invalid value',
      'spec.containers[0].env[3].valueFrom: Invalid value',
      'spec.containers[0].env[4].valueFrom.fieldRef.fieldPath: Unsupported value',
      'spec.containers[0].env[6].valueFrom.configMapKeyRef.key: Invalid value',
      'spec.containers[0].envFrom[0].prefix: Invalid value',
      'spec.containers[0].envFrom[1]: Invalid value',
      'spec.containers[0].volumeMounts[0].subPath: Invalid value',
      'spec.containers[0].volumeMounts[0].subPathExpr: Invalid value',
      'spec.containers[0].lifecycle.postStart: Required value',
      'spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value',
    ]);
    expect(messages(p)).toContain('spec.containers[0].env[1].valueFrom: Invalid value: "": may not be specified when `value` is not empty');
    expect(messages(p)).toContain('spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 11: must be greater than 0 and less than terminationGracePeriodSeconds (10)');
  });
});
