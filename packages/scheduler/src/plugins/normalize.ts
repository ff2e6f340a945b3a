import { MAX_NODE_SCORE } from '../framework.js';

/** Scale scores so the highest becomes 100 (reverse: lowest becomes 100), integer like the reference. */
export function defaultNormalizeScore(scores: number[], reverse: boolean): void {
  let max = 0;
  for (const s of scores) if (s > max) max = s;
  if (max === 0) {
    if (reverse) scores.fill(MAX_NODE_SCORE);
    return;
  }
  for (let i = 0; i < scores.length; i++) {
    let s = Math.trunc((MAX_NODE_SCORE * scores[i]) / max);
    if (reverse) s = MAX_NODE_SCORE - s;
    scores[i] = s;
  }
}
