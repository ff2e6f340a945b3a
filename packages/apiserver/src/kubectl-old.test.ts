// Debian's kubectl v1.20 (kubernetes-client) as the old client: it reads legacy discovery, the v1beta1-era
// Table negotiation and protobuf bodies, and must work unchanged against a server that reports v1.32.
import fs from 'node:fs';
import path from 'node:path';
import { KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient, startTestApiServer, type TestApiServer } from './testing.js';

const ok = requirePeers('the kubectl v1.20 end-to-end tests', [peers.kubectlOld]);

describe.runIf(ok)('kubectl v1.20 against the API server', () => {
  let t: TestApiServer;
  const kubectl = (args: string[]) => runClient(KUBECTL_OLD, args, { kubeconfig: t.kubeconfig });
  beforeAll(async () => {
    t = await startTestApiServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reports versions, applies, gets with columns, creates, patches, applies server-side and deletes', async () => {
    const v = await kubectl(['version', '--short']);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toContain('Client Version: v1.20.2');
    expect(v.stdout).toContain('Server Version: v1.32.0-kemu');
    const file = path.join(t.dir, 'pod.yaml');
    fs.writeFileSync(file, 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: old\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n');
    const a = await kubectl(['apply', '-f', file]);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout.trim()).toBe('pod/old created');
    const g = await kubectl(['get', 'pods']);
    expect(g.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nold\s+0\/1\s+Pending\s+0\s+\d+s\n$/);
    const c = await kubectl(['create', 'configmap', 'legacy', '--from-literal=a=b']);
    expect(c.code, c.stderr).toBe(0);
    expect((await kubectl(['patch', 'cm', 'legacy', '-p', '{"data":{"a":"c"}}'])).stdout.trim()).toBe('configmap/legacy patched');
    expect((await kubectl(['get', 'cm', 'legacy', '-o', 'jsonpath={.data.a}'])).stdout).toBe('c');
    const ssa = await kubectl(['apply', '--server-side', '-f', file]);
    expect(ssa.code, ssa.stderr).toBe(0);
    expect((await kubectl(['delete', 'pod', 'old'])).stdout.trim()).toBe('pod "old" deleted');
    const ns = await kubectl(['get', 'namespaces', '--no-headers']);
    expect(ns.stdout).toMatch(/^default\s+Active\s+\d+s$/m);
  });
});
