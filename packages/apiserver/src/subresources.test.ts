// Subresources through the HTTP API: pods/eviction honouring a PodDisruptionBudget (429 while it allows no
// disruption), scale of a Deployment and of a custom resource (GET, PUT, PATCH, and kubectl scale),
// pods/ephemeralcontainers (and kubectl debug), pods/binding, nodes/proxy, and pods/log and exec answering
// as kube-apiserver does when the node serves nothing.
import http from 'node:http';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient, startTestApiServer, type TestApiServer } from './testing.js';

let t: TestApiServer;
beforeAll(async () => {
  t = await startTestApiServer();
});
afterAll(async () => {
  await t?.close();
});

function call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ code: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: t.api.socketPath, path, method, headers: { 'content-type': contentType } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const NS = '/api/v1/namespaces/default';
const pod = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
});

describe('subresources', () => {
  it('eviction is refused with 429 while the budget allows no disruption, and deletes the pod once it does', async () => {
    expect((await call('POST', `${NS}/pods`, pod('guarded', { app: 'db' }))).code).toBe(201);
    const pdb = await call('POST', '/apis/policy/v1/namespaces/default/poddisruptionbudgets', {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'db' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
    });
    expect(pdb.code, JSON.stringify(pdb.json)).toBe(201);
    const setAllowed = async (n: number) => {
      const r = await call('PATCH', '/apis/policy/v1/namespaces/default/poddisruptionbudgets/db/status', { status: { disruptionsAllowed: n, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 } }, 'application/merge-patch+json');
      expect(r.code, JSON.stringify(r.json)).toBe(200);
    };
    await setAllowed(0);
    const eviction = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'guarded', namespace: 'default' } };
    const refused = await call('POST', `${NS}/pods/guarded/eviction`, eviction);
    expect(refused.code).toBe(429);
    expect(refused.json).toMatchObject({ reason: 'TooManyRequests', message: "Cannot evict pod as it would violate the pod's disruption budget." });
    expect((await call('GET', `${NS}/pods/guarded`)).code).toBe(200);
    await setAllowed(1);
    const done = await call('POST', `${NS}/pods/guarded/eviction`, eviction);
    expect(done.code).toBe(201);
    expect(done.json).toMatchObject({ kind: 'Status', status: 'Success' });
    const after = await call('GET', `${NS}/pods/guarded`);
    expect(after.code === 404 || Boolean(after.json.metadata.deletionTimestamp)).toBe(true);
  });

  it('scale of a Deployment reads and writes spec.replicas as autoscaling/v1 Scale', async () => {
    const dep = await call('POST', '/apis/apps/v1/namespaces/default/deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
    });
    expect(dep.code, JSON.stringify(dep.json)).toBe(201);
    const s = await call('GET', '/apis/apps/v1/namespaces/default/deployments/web/scale');
    expect(s.json).toMatchObject({ kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 2 }, status: { selector: 'app=web' } });
    const put = await call('PUT', '/apis/apps/v1/namespaces/default/deployments/web/scale', { ...s.json, spec: { replicas: 4 } });
    expect(put.json.spec.replicas).toBe(4);
    const patched = await call('PATCH', '/apis/apps/v1/namespaces/default/deployments/web/scale', { spec: { replicas: 5 } }, 'application/merge-patch+json');
    expect(patched.json.spec.replicas).toBe(5);
    expect((await call('GET', '/apis/apps/v1/namespaces/default/deployments/web')).json.spec.replicas).toBe(5);
    const bad = await call('PATCH', '/apis/apps/v1/namespaces/default/deployments/web/scale', { spec: { replicas: -1 } }, 'application/merge-patch+json');
    expect(bad.code).toBe(422);
  });

  it.runIf(requirePeers('kubectl scale', [peers.kubectl]))('kubectl scale goes through the scale subresource', async () => {
    const r = await runClient('kubectl', ['scale', 'deployment/web', '--replicas=3'], { kubeconfig: t.kubeconfig });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('deployment.apps/web scaled');
    expect((await call('GET', '/apis/apps/v1/namespaces/default/deployments/web')).json.spec.replicas).toBe(3);
  });

  it('ephemeralcontainers reads the Pod, and its writes change only spec.ephemeralContainers', async () => {
    expect((await call('POST', `${NS}/pods`, pod('dbg'))).code).toBe(201);
    const got = await call('GET', `${NS}/pods/dbg/ephemeralcontainers`);
    expect(got).toMatchObject({ code: 200, json: { kind: 'Pod', metadata: { name: 'dbg' } } });
    const debug = { name: 'debugger', image: 'busybox:1.36', targetContainerName: 'c' };
    const patched = await call(
      'PATCH',
      `${NS}/pods/dbg/ephemeralcontainers`,
      { metadata: { labels: { sneaky: 'yes' } }, spec: { ephemeralContainers: [debug] } },
      'application/strategic-merge-patch+json',
    );
    expect(patched.code, JSON.stringify(patched.json)).toBe(200);
    expect(patched.json.spec.ephemeralContainers).toMatchObject([debug]);
    const stored = (await call('GET', `${NS}/pods/dbg`)).json;
    expect(stored.spec.ephemeralContainers).toMatchObject([debug]);
    expect(stored.metadata.labels?.sneaky).toBeUndefined();
    // A PUT adds a second one; changing an existing one is refused as upstream refuses it, and nothing changes.
    const second = { name: 'second', image: 'busybox:1.36' };
    const put = await call('PUT', `${NS}/pods/dbg/ephemeralcontainers`, { ...stored, spec: { ...stored.spec, ephemeralContainers: [...stored.spec.ephemeralContainers, second] } });
    expect(put.code, JSON.stringify(put.json)).toBe(200);
    expect(put.json.spec.ephemeralContainers.map((c: { name: string }) => c.name)).toEqual(['debugger', 'second']);
    const changed = await call(
      'PATCH',
      `${NS}/pods/dbg/ephemeralcontainers`,
      [{ op: 'replace', path: '/spec/ephemeralContainers/0/image', value: 'alpine' }],
      'application/json-patch+json',
    );
    expect(changed.code, JSON.stringify(changed.json)).toBe(422);
    expect(changed.json.reason).toBe('Invalid');
    expect((await call('GET', `${NS}/pods/dbg`)).json.spec.ephemeralContainers[0].image).toBe('busybox:1.36');
    // Logs may name an ephemeral container (this server has no node to serve them: 503, not a 400).
    expect((await call('GET', `${NS}/pods/dbg/log?container=debugger`)).code).toBe(503);
    expect((await call('GET', `${NS}/pods/dbg/log?container=nope`)).json.message).toBe('container nope is not valid for pod dbg');
    // Server-side apply through the subresource, too, changes only the ephemeral containers.
    const applied = await call(
      'PATCH',
      `${NS}/pods/dbg/ephemeralcontainers?fieldManager=debugger&force=true`,
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'dbg', labels: { applied: 'yes' } }, spec: { ephemeralContainers: [debug, second, { name: 'third', image: 'busybox:1.36' }] } },
      'application/apply-patch+yaml',
    );
    expect(applied.code, JSON.stringify(applied.json)).toBe(200);
    const afterApply = (await call('GET', `${NS}/pods/dbg`)).json;
    expect(afterApply.spec.ephemeralContainers.map((c: { name: string }) => c.name)).toEqual(['debugger', 'second', 'third']);
    expect(afterApply.metadata.labels?.applied).toBeUndefined();
    const missing = await call('PATCH', `${NS}/pods/nope/ephemeralcontainers?fieldManager=debugger`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'nope' }, spec: { ephemeralContainers: [debug] } }, 'application/apply-patch+yaml');
    expect(missing.code).toBe(404);
    expect((await call('GET', `${NS}/pods/nope`)).code).toBe(404);
    const post = await call('POST', `${NS}/pods/dbg/ephemeralcontainers`, {});
    expect(post.code).toBe(405);
    const disco = await call('GET', '/api/v1');
    const sub = disco.json.resources.find((r: { name: string }) => r.name === 'pods/ephemeralcontainers');
    expect(sub).toMatchObject({ kind: 'Pod', namespaced: true });
    expect([...sub.verbs].sort()).toEqual(['get', 'patch', 'update']);
  });

  it.runIf(requirePeers('kubectl debug', [peers.kubectl]))('kubectl debug adds an ephemeral container targeting a container of the pod', async () => {
    expect((await call('POST', `${NS}/pods`, pod('debugme'))).code).toBe(201);
    const r = await runClient('kubectl', ['debug', 'debugme', '--image=busybox:1.36', '--target=c', '--container=dbg', '--profile=general'], { kubeconfig: t.kubeconfig });
    expect(r.code, r.stderr).toBe(0);
    const p = (await call('GET', `${NS}/pods/debugme`)).json;
    expect(p.spec.ephemeralContainers).toMatchObject([{ name: 'dbg', image: 'busybox:1.36', targetContainerName: 'c' }]);
    // A second debug container gets added next to the first, under kubectl's generated name.
    const again = await runClient('kubectl', ['debug', 'debugme', '--image=busybox:1.36', '--target=c'], { kubeconfig: t.kubeconfig });
    expect(again.code, again.stderr).toBe(0);
    const names = (await call('GET', `${NS}/pods/debugme`)).json.spec.ephemeralContainers.map((c: { name: string }) => c.name);
    expect(names).toHaveLength(2);
    expect(names[1]).toMatch(/^debugger-/);
  });

  it('the scale subresource of a custom resource reads and writes the paths its CRD names, and is listed in discovery', async () => {
    const version = (name: string, scale: boolean) => ({
      name,
      served: true,
      storage: true,
      subresources: { status: {}, ...(scale ? { scale: { specReplicasPath: '.spec.size', statusReplicasPath: '.status.ready', labelSelectorPath: '.status.selector' } } : {}) },
      schema: {
        openAPIV3Schema: {
          type: 'object',
          properties: {
            spec: { type: 'object', properties: { size: { type: 'integer' } } },
            status: { type: 'object', properties: { ready: { type: 'integer' }, selector: { type: 'string' } } },
          },
        },
      },
    });
    const crd = (plural: string, kind: string, scale: boolean) => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.scale.example.com` },
      spec: { group: 'scale.example.com', scope: 'Namespaced', names: { plural, singular: kind.toLowerCase(), kind }, versions: [version('v1', scale)] },
    });
    for (const [plural, kind, withScale] of [['widgets', 'Widget', true], ['gadgets', 'Gadget', false]] as const) {
      const r = await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd(plural, kind, withScale));
      expect(r.code, JSON.stringify(r.json)).toBe(201);
    }
    const base = '/apis/scale.example.com/v1/namespaces/default';
    expect((await call('POST', `${base}/widgets`, { apiVersion: 'scale.example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 2 } })).code).toBe(201);
    expect((await call('POST', `${base}/gadgets`, { apiVersion: 'scale.example.com/v1', kind: 'Gadget', metadata: { name: 'g' }, spec: { size: 2 } })).code).toBe(201);
    const st = await call('PATCH', `${base}/widgets/w/status`, { status: { ready: 1, selector: 'app=w' } }, 'application/merge-patch+json');
    expect(st.code, JSON.stringify(st.json)).toBe(200);
    const s = await call('GET', `${base}/widgets/w/scale`);
    expect(s).toMatchObject({ code: 200, json: { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: { name: 'w' }, spec: { replicas: 2 }, status: { replicas: 1, selector: 'app=w' } } });
    const disco = await call('GET', '/apis/scale.example.com/v1');
    const names = disco.json.resources.map((r: { name: string }) => r.name);
    expect(names).toContain('widgets/scale');
    expect(names).not.toContain('gadgets/scale');
    expect(disco.json.resources.find((r: { name: string }) => r.name === 'widgets/scale')).toMatchObject({ kind: 'Scale', group: 'autoscaling', version: 'v1' });
    const bad = await call('PATCH', `${base}/widgets/w/scale`, { spec: { replicas: -1 } }, 'application/merge-patch+json');
    expect(bad.code).toBe(422);
    expect((await call('GET', `${base}/widgets/w`)).json.spec.size).toBe(2);
    expect((await call('GET', `${base}/gadgets/g/scale`)).code).toBe(404);
  });

  it.runIf(requirePeers('kubectl scale of a custom resource', [peers.kubectl]))('kubectl scale scales a custom resource through its scale subresource', async () => {
    const base = '/apis/scale.example.com/v1/namespaces/default';
    const r = await runClient('kubectl', ['scale', 'widgets/w', '--replicas=4'], { kubeconfig: t.kubeconfig });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('widget.scale.example.com/w scaled');
    const after = (await call('GET', `${base}/widgets/w`)).json;
    expect(after.spec.size).toBe(4);
    expect(after.status).toEqual({ ready: 1, selector: 'app=w' });
    const refused = await runClient('kubectl', ['scale', 'gadgets/g', '--replicas=4'], { kubeconfig: t.kubeconfig });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('the server could not find the requested resource');
  });

  it('nodes/proxy forwards a GET to the kubelet the Node names, and says when there is none', async () => {
    const kubelet = http.createServer((req, res) => {
      res.writeHead(req.url === '/stats/summary?only=node' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url }));
    });
    await new Promise<void>((r) => kubelet.listen(0, '127.0.0.1', r));
    try {
      const port = (kubelet.address() as import('node:net').AddressInfo).port;
      const node = (name: string, annotations: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, annotations } });
      expect((await call('POST', '/api/v1/nodes', node('proxied', { 'kemu.io/kubelet-endpoint': `http://127.0.0.1:${port}` }))).code).toBe(201);
      expect((await call('POST', '/api/v1/nodes', node('bare', {}))).code).toBe(201);
      expect(await call('GET', '/api/v1/nodes/proxied/proxy/stats/summary?only=node')).toEqual({ code: 200, json: { path: '/stats/summary?only=node' } });
      expect((await call('GET', '/api/v1/nodes/proxied/proxy/nope')).code).toBe(404);
      const none = await call('GET', '/api/v1/nodes/bare/proxy/stats/summary');
      expect(none).toMatchObject({ code: 503, json: { reason: 'ServiceUnavailable' } });
      expect((await call('POST', '/api/v1/nodes/proxied/proxy/stats/summary', {})).code).toBe(405);
      expect((await call('GET', '/api/v1/nodes/missing/proxy/stats/summary')).code).toBe(404);
      const disco = await call('GET', '/api/v1');
      expect(disco.json.resources.find((r: { name: string }) => r.name === 'nodes/proxy')).toMatchObject({ kind: 'NodeProxyOptions', verbs: ['get'] });
    } finally {
      kubelet.close();
    }
  });

  it('binding assigns a node once; log and exec say what is missing', async () => {
    await call('POST', `${NS}/pods`, pod('unbound'));
    const b = await call('POST', `${NS}/pods/unbound/binding`, { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'unbound' }, target: { kind: 'Node', name: 'node-a' } });
    expect(b.code).toBe(201);
    expect((await call('GET', `${NS}/pods/unbound`)).json.spec.nodeName).toBe('node-a');
    const again = await call('POST', `${NS}/pods/unbound/binding`, { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'unbound' }, target: { kind: 'Node', name: 'node-b' } });
    expect(again.code).toBe(409);
    const log = await call('GET', `${NS}/pods/unbound/log?container=nope`);
    expect(log).toMatchObject({ code: 400, json: { message: 'container nope is not valid for pod unbound' } });
    const exec = await call('POST', `${NS}/pods/unbound/exec?command=true&stdout=true`);
    expect(exec).toMatchObject({ code: 400, json: { message: 'Upgrade request required' } });
  });
});
