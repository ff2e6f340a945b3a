import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubectlServer, startKubectlServer } from '../openapi/testing-kubectl.js';
import { decodeEnvelope, decodeObjectBytes, encodeEnvelope, encodeObject, PROTOBUF_CONTENT_TYPE } from './index.js';
import { WIRE_BYTES, WIRE_VARINT, Writer } from './wire.js';

const testdata = path.join(path.dirname(fileURLToPath(import.meta.url)), 'testdata');
const fixture = (name: string) => fs.readFileSync(path.join(testdata, name));

const pod: KubeObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web',
    namespace: 'default',
    uid: '0b7e5c1e-0000-4000-8000-000000000001',
    creationTimestamp: '2026-11-26T09:00:00Z',
    labels: { app: 'web' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u1', controller: true }],
  },
  spec: {
    automountServiceAccountToken: false,
    securityContext: { runAsUser: 0, fsGroup: 2000 },
    terminationGracePeriodSeconds: 0,
    volumes: [{ name: 'cfg', configMap: { name: 'app-config', defaultMode: 420 } }],
    containers: [
      {
        name: 'app',
        image: 'nginx:1.27',
        ports: [{ containerPort: 80, protocol: 'TCP' }],
        resources: { requests: { cpu: '100m', memory: '64Mi' } },
        readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 },
        livenessProbe: { tcpSocket: { port: 80 } },
        volumeMounts: [{ name: 'cfg', mountPath: '/etc/app', readOnly: true }],
      },
    ],
    tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
  },
  status: {
    phase: 'Running',
    podIP: '10.0.0.7',
    containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: 'nginx:1.27', imageID: '', state: { running: { startedAt: '2026-11-26T09:00:01Z' } } }],
  },
};

describe('protobuf bodies', () => {
  it('decodes the ConfigMap real kubectl 1.32 sends for `create configmap`', () => {
    const b = fixture('create-configmap.kubectl-1.32.pb');
    expect(decodeEnvelope(b)).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', contentEncoding: '', contentType: '' });
    // kubectl writes every non-pointer field, empty ones too; JSON leaves them out as upstream does.
    expect(decodeObjectBytes(b)).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'app-config', namespace: 'default' },
      data: { empty: '', greeting: 'hello' },
    });
    expect(decodeObjectBytes(fixture('create-namespace.kubectl-1.32.pb'))).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a' },
      spec: {},
      status: {},
    });
  });

  it('decodes what kubectl 1.32 sends for create deployment, service and serviceaccount', () => {
    // --replicas=0 survives: replicas is a pointer upstream, so a zero is kept rather than dropped.
    expect(decodeObjectBytes(fixture('create-deployment.kubectl-1.32.pb'))).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 80 }], resources: {} }] } },
        strategy: {},
      },
      status: {},
    });
    expect(decodeObjectBytes(fixture('create-service.kubectl-1.32.pb')).spec).toEqual({
      ports: [{ name: '80-8080', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      selector: { app: 'web' },
      type: 'NodePort',
    });
    expect(decodeObjectBytes(fixture('create-serviceaccount.kubectl-1.32.pb'))).toEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'builder', namespace: 'default' },
    });
  });

  it('round-trips a Pod through every format: quantities, int-or-string, times, inline sources, pointer zeros', () => {
    const bytes = encodeObject(pod);
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from('k8s\0', 'latin1'));
    expect(decodeObjectBytes(bytes)).toEqual(pod);
  });

  it('keeps zero int-or-string bounds that are pointers upstream (maxUnavailable: 0, minAvailable: 0)', () => {
    const d = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } } } };
    expect(decodeObjectBytes(encodeObject(d))).toEqual(d);
    const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'p' }, spec: { minAvailable: 0 } };
    expect(decodeObjectBytes(encodeObject(pdb))).toEqual(pdb);
  });

  it('keeps a zero grace period in DeleteOptions (a pointer upstream)', () => {
    const opts = { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, propagationPolicy: 'Foreground' };
    expect(decodeObjectBytes(encodeObject(opts))).toEqual(opts);
  });

  it('round-trips a Lease (MicroTime) and a CSINode', () => {
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'node-1', namespace: 'kube-node-lease' },
      spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40, renewTime: '2026-11-26T09:00:00.123456Z' },
    };
    expect(decodeObjectBytes(encodeObject(lease))).toEqual(lease);
    const csinode = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: 'node-1' },
      spec: { drivers: [{ name: 'hostpath.csi.kemu.io', nodeID: 'node-1', topologyKeys: ['zone'], allocatable: { count: 0 } }] },
    };
    expect(decodeObjectBytes(encodeObject(csinode))).toEqual(csinode);
  });

  it('refuses bad bodies with a BadRequest, never a crash', () => {
    const good = fixture('create-configmap.kubectl-1.32.pb');
    expect(() => decodeObjectBytes(Buffer.from('{"kind":"ConfigMap"}'))).toThrow(/does not start with the "k8s\\x00" prefix/);
    for (let n = 5; n < good.length; n += 7) {
      let err: unknown;
      try {
        decodeObjectBytes(good.subarray(0, n));
      } catch (e) {
        err = e;
      }
      if (err) expect((err as { code?: number }).code, `truncated at ${n}`).toBe(400);
    }
    const wrongKind = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    const patched = Buffer.from(wrongKind.toString('latin1').replace('ConfigMap', 'NoSuchMap'), 'latin1');
    expect(() => decodeObjectBytes(patched)).toThrow('no kind "NoSuchMap" is registered for version "v1"');
    expect(() => encodeObject({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: {} })).toThrow(expect.objectContaining({ code: 415 }));
  });
});

describe('protobuf decoding of mutated bodies', () => {
  it('answers every corrupted body with a value or a 400, never another error', () => {
    // A small deterministic generator, so a failure names its seed and replays.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const bases: Buffer[] = ['create-deployment.kubectl-1.32.pb', 'create-service.kubectl-1.32.pb', 'create-configmap.kubectl-1.32.pb'].map(fixture);
    bases.push(encodeObject(pod));
    // A creationTimestamp far beyond year 9999 is refused, not a RangeError.
    const ts = new Writer().tag(1, WIRE_VARINT).varint(2n ** 50n).finish();
    const meta = new Writer().tag(1, WIRE_BYTES).string('x').tag(8, WIRE_BYTES).bytes(ts).finish();
    const far = encodeEnvelope('v1', 'ConfigMap', new Writer().tag(1, WIRE_BYTES).bytes(meta).finish());
    expect(() => decodeObjectBytes(far)).toThrow(/out of range/);
    for (let i = 0; i < 3000; i++) {
      const b = Buffer.from(bases[i % bases.length]);
      const flips = 1 + rand(4);
      for (let j = 0; j < flips; j++) b[4 + rand(b.length - 4)] = rand(256);
      try {
        decodeObjectBytes(b);
      } catch (e) {
        expect({ i, code: (e as { code?: number }).code, message: (e as Error).message }).toMatchObject({ code: 400 });
      }
    }
  });
});

describe.runIf(requirePeers('kubectl create with protobuf bodies', [peers.kubectl]))('kubectl create configmap', () => {
  let srv: KubectlServer;
  let received: KubeObject | undefined;
  beforeAll(async () => {
    srv = await startKubectlServer((req, body, res) => {
      if (req.method !== 'POST') return false;
      received = decodeObjectBytes(body);
      const created = { ...received, metadata: { ...received.metadata, namespace: 'default', uid: 'c0ffee00-0000-4000-8000-000000000002', resourceVersion: '42', creationTimestamp: '2026-11-26T09:30:00Z' } };
      // Answer in protobuf too: kubectl decoding it with upstream's own decoder proves the encoder.
      res.writeHead(201, { 'Content-Type': PROTOBUF_CONTENT_TYPE });
      res.end(encodeObject(created));
      return true;
    });
  });
  afterAll(() => srv?.close());

  it('sends protobuf, which decodes, and reads our protobuf answer back', async () => {
    const r = await srv.kubectl(['create', 'configmap', 'app-config', '--from-literal=greeting=hello', '--from-literal=n=1', '-o', 'json']);
    expect(r.stderr).toBe('');
    expect(srv.requests.find((q) => q.startsWith('POST'))).toMatch(/^POST \/api\/v1\/namespaces\/default\/configmaps\?.* application\/vnd\.kubernetes\.protobuf$/);
    expect(received).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { greeting: 'hello', n: '1' } });
    expect(JSON.parse(r.stdout)).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'app-config', namespace: 'default', uid: 'c0ffee00-0000-4000-8000-000000000002', resourceVersion: '42', creationTimestamp: '2026-11-26T09:30:00Z' },
      data: { greeting: 'hello', n: '1' },
    });
  });
});
