// The kind schemas through the real server, as kubectl uses them: protobuf bodies of create subcommands,
// explain from /openapi/v3 (v1.32) and the protobuf /openapi/v2 (v1.20), and the Table columns.
import fs from 'node:fs';
import path from 'node:path';
import { KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient, startTestApiServer, type TestApiServer } from '../testing.js';

describe.runIf(requirePeers('kubectl against the kind schemas', [peers.kubectl]))('kubectl and the kind schemas', () => {
  let t: TestApiServer;
  const kubectl = (args: string[]) => runClient('kubectl', args, { kubeconfig: t.kubeconfig });
  beforeAll(async () => {
    t = await startTestApiServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('create serviceaccount and create deployment send protobuf that decodes, zero replicas kept', async () => {
    const sa = await kubectl(['create', 'serviceaccount', 'builder']);
    expect(sa.code, sa.stderr).toBe(0);
    expect(sa.stdout.trim()).toBe('serviceaccount/builder created');
    const d = await kubectl(['create', 'deployment', 'web', '--image=nginx:1.27', '--replicas=0']);
    expect(d.code, d.stderr).toBe(0);
    const got = await kubectl(['get', 'deployment', 'web', '-o', 'jsonpath={.spec.replicas} {.spec.template.spec.containers[0].name}']);
    expect(got.stdout).toBe('0 nginx');
  });

  it('get deployments shows kubectl\'s columns, and -o wide the template', async () => {
    const r = await kubectl(['get', 'deployments', '-o', 'wide']);
    expect(r.code, r.stderr).toBe(0);
    const [head, row] = r.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/));
    expect(head).toEqual(['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
    expect([row[0], row[1], row[5], row[6], row[7]]).toEqual(['web', '0/0', 'nginx', 'nginx:1.27', 'app=web']);
  });

  it('explains a workload field from /openapi/v3', async () => {
    const r = await kubectl(['explain', 'deployment.spec.replicas']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/GROUP:\s+apps/);
    expect(r.stdout).toContain('Desired number of pods (default 1).');
  });

  const deployment = (name: string, image: string, sidecar?: string) =>
    [
      'apiVersion: apps/v1',
      'kind: Deployment',
      `metadata: {name: ${name}}`,
      'spec:',
      `  selector: {matchLabels: {app: ${name}}}`,
      '  template:',
      `    metadata: {labels: {app: ${name}}}`,
      '    spec:',
      '      containers:',
      `      - {name: app, image: "${image}", env: [{name: MODE, value: prod}]}`,
      ...(sidecar ? [`      - {name: log, image: "${sidecar}"}`] : []),
    ].join('\n');

  it('a second client-side apply merges containers by name (strategic merge from the schemas)', async () => {
    const file = path.join(t.dir, 'deploy.yaml');
    fs.writeFileSync(file, deployment('api', 'nginx:1.27', 'busybox:1.36'));
    expect((await kubectl(['apply', '-f', file])).code).toBe(0);
    // A field set by someone else inside a container survives the next apply, which only changes the image.
    const p = await kubectl(['patch', 'deployment', 'api', '--type=strategic', '-p', '{"spec":{"template":{"spec":{"containers":[{"name":"app","workingDir":"/srv"}]}}}}']);
    expect(p.code, p.stderr).toBe(0);
    fs.writeFileSync(file, deployment('api', 'nginx:1.28', 'busybox:1.36'));
    const a = await kubectl(['apply', '-f', file]);
    expect(a.code, a.stderr).toBe(0);
    const got = await kubectl(['get', 'deployment', 'api', '-o', 'jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}:{.workingDir};{end}']);
    expect(got.stdout).toBe('app=nginx:1.28:/srv;log=busybox:1.36:;');
  });

  it.runIf(requirePeers('kubectl v1.20 apply', [peers.kubectlOld]))('kubectl v1.20 applies twice, computing its patch from the protobuf /openapi/v2', async () => {
    const old = (args: string[]) => runClient(KUBECTL_OLD, args, { kubeconfig: t.kubeconfig });
    const file = path.join(t.dir, 'deploy-old.yaml');
    fs.writeFileSync(file, deployment('old', 'nginx:1.27', 'busybox:1.36'));
    const a1 = await old(['apply', '-f', file]);
    expect(a1.code, a1.stderr).toBe(0);
    // Dropping the sidecar from the manifest removes it: the patch deletes it by its merge key.
    fs.writeFileSync(file, deployment('old', 'nginx:1.28'));
    const a2 = await old(['apply', '-f', file]);
    expect(a2.code, a2.stderr).toBe(0);
    const got = await kubectl(['get', 'deployment', 'old', '-o', 'jsonpath={range .spec.template.spec.containers[*]}{.name}={.image};{end}']);
    expect(got.stdout).toBe('app=nginx:1.28;');
  });

  it.runIf(requirePeers('kubectl v1.20 explain', [peers.kubectlOld]))('kubectl v1.20 explains from the protobuf /openapi/v2', async () => {
    const r = await runClient(KUBECTL_OLD, ['explain', 'pod.spec.containers.ports'], { kubeconfig: t.kubeconfig });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('RESOURCE: ports <[]Object>');
    expect(r.stdout).toMatch(/containerPort\s+<integer> -required-/);
  });
});
