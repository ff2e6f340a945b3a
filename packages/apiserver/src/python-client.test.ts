// The official Python client (Debian's python3-kubernetes, run by /usr/bin/python3) against the API server
// over HTTPS with the kubeconfig's client certificate.
import path from 'node:path';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient, startTestApiServer, type TestApiServer } from './testing.js';

const ok = requirePeers('the Python client tests', [peers.pythonKubernetes]);

describe.runIf(ok)('the official Python client', () => {
  let t: TestApiServer;
  beforeAll(async () => {
    t = await startTestApiServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists, creates without apiVersion/kind, patches and watches ADDED/MODIFIED/DELETED', async () => {
    const script = path.join(import.meta.dirname, 'testdata', 'python-client.py');
    const r = await runClient('/usr/bin/python3', [script, t.kubeconfig], { kubeconfig: t.kubeconfig, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const steps = Object.fromEntries(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { step: string; value: unknown })
        .map((s) => [s.step, s.value]),
    );
    expect(steps.namespaces).toEqual(['default', 'kube-node-lease', 'kube-public', 'kube-system']);
    expect(steps.created).toEqual(['v1', 'ConfigMap', 'py', 'default']);
    expect(steps.patched).toEqual({ k: '2' });
    expect(steps.events).toEqual([
      ['ADDED', 'py', '1'],
      ['MODIFIED', 'py', '2'],
      ['DELETED', 'py', '2'],
    ]);
    expect(steps['after-delete']).toEqual([404, 'NotFound']);
  });
});
