import { describe, expect, it } from 'vitest';
import type { PersistentVolumeClaim, Pod } from './api-core.js';
import { applyDefaults, defaultPullPolicy } from './defaults.js';
import { InvalidError } from './errors.js';
import { assertValid, updateErrors, validationErrors } from './validation.js';

const pod = (): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default' },
  spec: { containers: [{ name: 'app', image: 'nginx:1.25' }] },
});

describe('validation', () => {
  it('accepts a defaulted minimal pod', () => {
    const p = pod();
    applyDefaults(p);
    expect(validationErrors(p)).toEqual([]);
  });

  it('reports every problem with its field path', () => {
    const p = pod();
    p.spec.containers.push({ name: 'app', image: 'x', ports: [{ containerPort: 70000, protocol: 'XTP' as 'TCP' }], resources: { requests: { cpu: '2' }, limits: { cpu: '1', memory: 'lots' } } });
    p.spec.volumes = [{ name: 'data' }];
    p.spec.containers[0].volumeMounts = [{ name: 'missing', mountPath: '/d' }];
    p.spec.tolerations = [{ key: 'k', operator: 'Exists', value: 'v' }];
    p.spec.topologySpreadConstraints = [{ maxSkew: 0, topologyKey: '', whenUnsatisfiable: 'DoNotSchedule' }];
    const fields = validationErrors(p).map((c) => `${c.field}: ${c.message.split(':')[0]}`);
    expect(fields).toEqual([
      'spec.volumes[0]: Required value',
      'spec.containers[0].volumeMounts[0].name: Not found',
      'spec.containers[1].name: Duplicate value',
      'spec.containers[1].ports[0].containerPort: Invalid value',
      'spec.containers[1].ports[0].protocol: Unsupported value',
      'spec.containers[1].resources.requests: Invalid value',
      'spec.containers[1].resources.limits[memory]: Invalid value',
      'spec.tolerations[0].operator: Invalid value',
      'spec.topologySpreadConstraints[0].maxSkew: Invalid value',
      'spec.topologySpreadConstraints[0].topologyKey: Required value',
    ]);
    expect(() => assertValid(p)).toThrow(InvalidError);
  });

  it('checks status: phases, condition shapes and IPs', () => {
    const p = pod();
    applyDefaults(p);
    p.status = {
      phase: 'Sleeping' as 'Running',
      conditions: [{ type: 'Ready', status: 'Maybe' as 'True' }],
      podIP: '10.0.0.300',
      podIPs: [{ ip: '10.0.0.300' }],
    };
    expect(validationErrors(p).map((c) => `${c.field}: ${c.message}`)).toEqual([
      'status.phase: Unsupported value: "Sleeping": supported values: "Failed", "Pending", "Running", "Succeeded", "Unknown"',
      'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
      'status.podIP: Invalid value: "10.0.0.300": must be a valid IP address',
      'status.podIPs[0].ip: Invalid value: "10.0.0.300": must be a valid IP address',
    ]);
    p.status = { phase: 'Running', podIP: '10.0.0.3', podIPs: [{ ip: '10.0.0.3' }, { ip: 'fd00::3' }], conditions: [{ type: 'Ready', status: 'True' }] };
    expect(validationErrors(p)).toEqual([]);
  });

  it('defaults imagePullPolicy from the tag', () => {
    expect(defaultPullPolicy('nginx')).toBe('Always');
    expect(defaultPullPolicy('nginx:latest')).toBe('Always');
    expect(defaultPullPolicy('nginx:1.25')).toBe('IfNotPresent');
    expect(defaultPullPolicy('registry:5000/nginx')).toBe('Always');
    expect(defaultPullPolicy('nginx@sha256:abc')).toBe('IfNotPresent');
  });

  it('pod updates may change images but not the rest of the spec', () => {
    const a = pod();
    const b = structuredClone(a);
    b.spec.containers[0].image = 'nginx:1.26';
    expect(updateErrors(b, a)).toEqual([]);
    b.spec.nodeName = 'n1';
    expect(updateErrors(b, a).map((c) => c.field)).toEqual(['spec']);
  });

  it('a PVC may get its volumeName once, then keep it', () => {
    const a: PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    const bound = structuredClone(a);
    bound.spec.volumeName = 'pv-1';
    expect(updateErrors(bound, a)).toEqual([]);
    const same = structuredClone(bound);
    same.metadata.labels = { x: 'y' };
    expect(updateErrors(same, bound)).toEqual([]);
    const moved = structuredClone(bound);
    moved.spec.volumeName = 'pv-2';
    expect(updateErrors(moved, bound).map((c) => c.type)).toEqual(['FieldValueForbidden']);
    const grown = structuredClone(bound);
    grown.spec.resources!.requests!.storage = '2Gi';
    expect(updateErrors(grown, bound)).toEqual([]);
  });
});
