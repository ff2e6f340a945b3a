// The composed cluster a describe block of these tests runs against: started (in a fresh state directory)
// before its tests, stopped and its state removed after them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cluster, type ClusterOptions } from 'kemu';
import { afterAll, beforeAll } from 'vitest';

export function composedCluster(prefix: string, options: Omit<ClusterOptions, 'stateDir'>, started: (c: Cluster) => void): void {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    cluster = await Cluster.start({ ...options, stateDir });
    started(cluster);
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });
}
