import { MAX_NODE_SCORE, type PluginFactory, type PreScorePlugin, type ScorePlugin } from '../framework.js';
import { normalizedImageName } from '../node-info.js';
import { ImageLocality } from './names.js';

const MB = 1024 * 1024;
const MIN_THRESHOLD = 23 * MB;
const MAX_CONTAINER_THRESHOLD = 1000 * MB;

/**
 * Favours nodes that already hold the pod's images, weighting each image by how widely it is spread
 * so one node holding a rare image does not attract every pod.
 */
const KEY = `${ImageLocality}/images`;

export const newImageLocality: PluginFactory = (_args, handle): PreScorePlugin & ScorePlugin => ({
  name: ImageLocality,
  preScore(state, pi) {
    const containers = [...(pi.pod.spec.initContainers ?? []), ...pi.pod.spec.containers];
    const images: string[] = [];
    for (const c of containers) if (c.image) images.push(normalizedImageName(c.image));
    state.write(KEY, { images, containers: containers.length, total: handle.snapshot.numNodes() });
    return null;
  },
  score(state, _pi, n) {
    const st = state.read<{ images: string[]; containers: number; total: number }>(KEY)!;
    let sum = 0;
    if (n.images.size > 0) {
      for (const img of st.images) {
        const size = n.images.get(img);
        if (size === undefined) continue;
        sum += Math.trunc(size * (handle.snapshot.imageNumNodes(img) / st.total));
      }
    }
    const max = MAX_CONTAINER_THRESHOLD * st.containers;
    if (sum < MIN_THRESHOLD) sum = MIN_THRESHOLD;
    else if (sum > max) sum = max;
    return Math.trunc((MAX_NODE_SCORE * (sum - MIN_THRESHOLD)) / (max - MIN_THRESHOLD));
  },
  eventsToRegister: () => [{ resource: 'Node', action: '*' }],
});
