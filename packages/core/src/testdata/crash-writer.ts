// Child process for the crash test: several concurrent writers (so writes share fsyncs) each apply a
// deterministic sequence to a FileStore and print `<writer>:<index>` for every acknowledged write. The
// parent SIGKILLs the process at random moments.
import { FileStore } from '../store-file.js';
import { crashOp } from './crash-ops.js';

const [dir, startArg] = process.argv.slice(2);
const starts = startArg.split(',').map(Number);
const store = await FileStore.open({ dir, snapshotEvery: 20 });
process.stdout.write('ready\n');

async function writer(w: number, start: number): Promise<void> {
  for (let i = start; ; i++) {
    const { action, key, value } = await crashOp(w, i, async (k) => {
      try {
        return (await store.get('ConfigMap', 'default', k)).data?.v;
      } catch {
        return undefined;
      }
    });
    if (action === 'create') {
      await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: key, namespace: 'default' }, data: { v: value } });
    } else if (action === 'update') {
      const cur = await store.get('ConfigMap', 'default', key);
      await store.update({ ...cur, data: { v: value } });
    } else {
      await store.delete('ConfigMap', 'default', key);
    }
    // Pipes are synchronous on Linux: once written, the parent sees it even if we die next.
    process.stdout.write(`${w}:${i}\n`);
  }
}

await Promise.all(starts.map((s, w) => writer(w, s)));
