#!/usr/bin/env node
import { Command, Option } from 'commander';
import { ExternalAttacher } from './attacher.js';
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

const BIN = 'kemu-external-attacher';

const program = addCommonOptions(
  new Command()
    .name(BIN)
    .description('CSI external-attacher: ControllerPublish/UnpublishVolume for VolumeAttachments'),
  {
    timeout: '15s',
    leaseNote: 'Lease external-attacher-leader-<driver>',
  },
)
  .addOption(
    new Option('--worker-threads <n>', 'attachments processed at once').default(10).argParser(parseCount),
  )
  .addOption(
    new Option('--retry-interval-start <duration>', 'first retry delay after a failure')
      .default('1s')
      .argParser(parseDuration),
  )
  .addOption(
    new Option('--retry-interval-max <duration>', 'longest retry delay')
      .default('5m')
      .argParser(parseDuration),
  )
  .addOption(
    new Option('--resync <duration>', 'periodic re-check of every attachment')
      .default('10m')
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
  const att = new ExternalAttacher({
    store,
    csi: conn,
    driverName: o.driverName,
    workers: o.workerThreads,
    timeoutMs: ms(o.timeout),
    retryIntervalStartMs: ms(o.retryIntervalStart),
    retryIntervalMaxMs: ms(o.retryIntervalMax),
    resyncPeriodMs: ms(o.resync),
    onError: logError(BIN, o.verbose),
  });
  const driverName = await waitForDriverName(BIN, conn, o.driverName, () => att.info.driverName());
  att.opts.driverName = driverName;
  const leaseName = `external-attacher-leader-${driverName}`;
  runSidecar(BIN, o, { store, conn, leaseName }, att, `attaching for ${driverName}`);
}

void main().catch((e) => fail(BIN, (e as Error).message));
