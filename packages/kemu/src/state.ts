// Where a cluster keeps its files: the API socket, the pid of a detached `kemu up`, its log, the store.
import os from 'node:os';
import path from 'node:path';

export function defaultStateDir(): string {
  return process.env.KEMU_STATE_DIR || path.join(os.homedir(), '.kemu');
}

export function paths(stateDir: string) {
  return {
    socket: path.join(stateDir, 'kemu.sock'),
    pid: path.join(stateDir, 'kemu.pid'),
    log: path.join(stateDir, 'kemu.log'),
    config: path.join(stateDir, 'cluster.json'),
    /** The admin kubeconfig `kemu up` writes for kubectl and the official clients. */
    kubeconfig: path.join(stateDir, 'kubeconfig'),
  };
}
