const SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
};

/**
 * Parse a byte size written as a Kubernetes quantity ("100Gi", "512Mi", "1G", "1048576").
 * Throws with a message naming the accepted forms.
 */
export function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$/.exec(text.trim());
  if (!m)
    throw new Error(`invalid size "${text}": use a number of bytes or a quantity like 512Mi, 100Gi, 1T`);
  const bytes = Math.ceil(Number(m[1]) * SUFFIX[m[2] ?? '']!);
  if (!Number.isSafeInteger(bytes))
    throw new Error(`invalid size "${text}": larger than ${Number.MAX_SAFE_INTEGER} bytes`);
  return bytes;
}

/** Render bytes as the largest exact binary quantity ("10Gi"), for messages. */
export function formatSize(bytes: number): string {
  for (const s of ['Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
    const f = SUFFIX[s]!;
    if (bytes >= f && bytes % f === 0) return `${bytes / f}${s}`;
  }
  return String(bytes);
}
