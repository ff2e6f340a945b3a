#!/usr/bin/env node
import { Command, Option } from 'commander';
import {
  addCommonOptions,
  connect,
  fail,
  logError,
  ms,
  openStore,
  parseCount,
  parseDuration,
  runSidecar,
  waitForDriverName,
} from './cli-common.js';
import { ExternalResizer } from './resizer.js';

const BIN = 'kemu-external-resizer';

const program = addCommonOptions(
  new Command()
    .name(BIN)
    .description('CSI external-resizer: ControllerExpandVolume for grown PersistentVolumeClaims'),
  {
    timeout: '10s',
    leaseNote: 'Lease external-resizer-<driver>',
  },
)
  .addOption(new Option('--workers <n>', 'claims processed at once').default(10).argParser(parseCount))
  .addOption(
    new Option('--retry-interval-start <duration>', 'first retry delay after a failure')
      .default('1s')
      .argParser(parseDuration),
  )
  .addOption(
    new Option('--retry-interval-max <duration>', 'longest retry delay')
      .default('5m')
      .argParser(parseDuration),
  );

async function main(): Promise<void> {
  program.parse();
  const o = program.opts();
  let store: Awaited<ReturnType<typeof openStore>>;
  let conn: ReturnType<typeof connect>;
  try {
    store = await openStore(o.store);
    conn = connect(o.csiAddress, o.grpcClient);
  } catch (e) {
    fail(BIN, (e as Error).message);
  }
  const rs = new ExternalResizer({
    store,
    csi: conn,
    driverName: o.driverName,
    workers: o.workers,
    timeoutMs: ms(o.timeout),
    retryIntervalStartMs: ms(o.retryIntervalStart),
    retryIntervalMaxMs: ms(o.retryIntervalMax),
    onError: logError(BIN, o.verbose),
  });
  const driverName = await waitForDriverName(BIN, conn, o.driverName, () => rs.info.driverName());
  rs.opts.driverName = driverName;
  const leaseName = `external-resizer-${driverName}`;
  runSidecar(BIN, o, { store, conn, leaseName }, rs, `resizing for ${driverName}`);
}

void main().catch((e) => fail(BIN, (e as Error).message));
