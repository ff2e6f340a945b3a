#!/usr/bin/env node
import http from 'node:http';
import { Command, Option } from 'commander';
import { connect, fail, grpcClientOption, parseDuration } from './cli-common.js';
import { NodeDriverRegistrar } from './registrar.js';

const BIN = 'kemu-node-driver-registrar';

const program = new Command()
  .name(BIN)
  .description('CSI node-driver-registrar: registers a CSI driver with the kubelet plugin watcher')
  .option('--csi-address <path>', 'address of the CSI driver socket', '/run/csi/socket')
  .addOption(grpcClientOption())
  .option('--kubelet-registration-path <path>', 'the CSI socket path as the kubelet sees it (required)')
  .option('--plugin-registration-path <dir>', 'the kubelet plugin registry directory', '/registration')
  .addOption(
    new Option('--timeout <duration>', 'timeout of GetPluginInfo').default('1s').argParser(parseDuration),
  )
  .option('--http-endpoint <host:port>', 'serve /healthz (registration socket present) here');

async function main(): Promise<void> {
  program.parse();
  const o = program.opts();
  if (!o.kubeletRegistrationPath)
    fail(BIN, '--kubelet-registration-path is required (the driver socket path on the host)');
  let reg: NodeDriverRegistrar;
  let conn: ReturnType<typeof connect>;
  try {
    conn = connect(o.csiAddress, o.grpcClient);
    reg = new NodeDriverRegistrar({
      csi: conn,
      kubeletRegistrationPath: o.kubeletRegistrationPath,
      pluginRegistrationDir: o.pluginRegistrationPath,
      timeoutMs: typeof o.timeout === 'number' ? o.timeout : parseDuration(o.timeout),
      onStatus: (s) => {
        if (!s.registered)
          fail(
            BIN,
            `registration process failed with error: ${s.error}; exiting so the registration is retried`,
          );
        process.stderr.write(`${BIN}: the kubelet registered the driver\n`);
      },
    });
  } catch (e) {
    fail(BIN, (e as Error).message);
  }
  await reg.start();
  process.stderr.write(`${BIN}: registering ${reg.driverName} at ${reg.socketPath}\n`);
  let server: http.Server | undefined;
  if (o.httpEndpoint) {
    const m = /^(.*):(\d+)$/.exec(o.httpEndpoint);
    if (!m) fail(BIN, `--http-endpoint "${o.httpEndpoint}": use host:port, e.g. :9809`);
    server = http.createServer(async (req, res) => {
      if (req.url !== '/healthz') {
        res.writeHead(404).end();
        return;
      }
      const ok = await reg.healthy();
      res.writeHead(ok ? 200 : 500).end(ok ? 'ok' : `registration socket ${reg.socketPath} is missing`);
    });
    server.listen(Number(m[2]), m[1] || undefined);
  }
  const stop = async () => {
    server?.close();
    await reg.stop();
    conn.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main().catch((e) => fail(BIN, (e as Error).message));
