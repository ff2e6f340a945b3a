// Child process for the crash test: applies a deterministic sequence of writes to a FileStore and prints
// the index of every acknowledged one. The parent SIGKILLs it at random moments.
import { FileStore } from '../store-file.js';
import { crashOp } from './crash-ops.js';

const [dir, startArg] = process.argv.slice(2);
const store = await FileStore.open({ dir, snapshotEvery: 20 });
process.stdout.write('ready\n');
for (let i = Number(startArg); ; i++) {
  const op = crashOp(i, async (key) => {
    try {
      const cm = await store.get('ConfigMap', 'default', key);
      return cm.data?.v;
    } catch {
      return undefined;
    }
  });
  const { action, key, value } = await op;
  if (action === 'create') {
    await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: key, namespace: 'default' }, data: { v: value } });
  } else if (action === 'update') {
    const cur = await store.get('ConfigMap', 'default', key);
    await store.update({ ...cur, data: { v: value } });
  } else {
    await store.delete('ConfigMap', 'default', key);
  }
  // Pipes are synchronous on Linux: once written, the parent sees it even if we die next.
  process.stdout.write(`${i}\n`);
}
