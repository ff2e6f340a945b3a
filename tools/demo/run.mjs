#!/usr/bin/env node
// `npm run demo`. Runs the composed-cluster demo from the kemu CLI when it is built; until then, serves
// the generated CRI and CSI services on unix sockets and calls them the way crictl and a CSI sidecar would.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(repo, 'packages', 'kemu', 'dist', 'cli.js');
if (fs.existsSync(cli)) {
  const r = spawnSync(process.execPath, [cli, 'demo', ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const { cri, csi, grpc, implementService, serveUnix, shutdownServer, unaryCall } = await import(
  path.join(repo, 'packages', 'proto', 'dist', 'index.js')
);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-demo-'));
const criSock = path.join(dir, 'cri.sock');
const csiSock = path.join(dir, 'csi.sock');

const server = new grpc.Server();
server.addService(
  cri.RuntimeServiceService,
  implementService(cri.RuntimeServiceService, {
    Version: () => ({ version: '0.1.0', runtimeName: 'kemu-demo', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' }),
  }),
);
const csiServer = new grpc.Server();
csiServer.addService(
  csi.IdentityService,
  implementService(csi.IdentityService, {
    GetPluginInfo: () => ({ name: 'kemu.csi.k8s.io', vendorVersion: '0.1.0' }),
    Probe: () => ({ ready: { value: true } }),
  }),
);
await serveUnix(server, criSock);
await serveUnix(csiServer, csiSock);

const criClient = new cri.RuntimeServiceClient(`unix://${criSock}`, grpc.credentials.createInsecure());
const csiClient = new csi.IdentityClient(`unix://${csiSock}`, grpc.credentials.createInsecure());
console.log('CRI Version           ', await unaryCall(criClient, 'Version', { version: 'v1' }));
console.log('CSI GetPluginInfo     ', await unaryCall(csiClient, 'GetPluginInfo', {}));
console.log('CSI Probe             ', await unaryCall(csiClient, 'Probe', {}));
const unimplemented = await unaryCall(criClient, 'RunPodSandbox', {}).catch((e) => e);
console.log('CRI RunPodSandbox     ', `${grpc.status[unimplemented.code]}: ${unimplemented.details}`);
const bytes = cri.RuntimeServiceService.Version.requestSerialize({ version: 'v1' });
console.log('VersionRequest bytes  ', Buffer.from(bytes).toString('hex'));
criClient.close();
csiClient.close();
await Promise.all([shutdownServer(server), shutdownServer(csiServer)]);
fs.rmSync(dir, { recursive: true, force: true });
