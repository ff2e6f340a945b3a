// Completion indexes of Indexed Jobs as upstream writes them in status: sorted intervals `0-2,4,6-7`.

export function formatIndexes(set: Iterable<number>): string {
  const xs = [...new Set(set)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) j++;
    parts.push(i === j ? String(xs[i]) : `${xs[i]}-${xs[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export function parseIndexes(s: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (s ?? '').split(',')) {
    if (!part) continue;
    const [a, b] = part.split('-').map(Number);
    for (let i = a; i <= (b ?? a); i++) out.add(i);
  }
  return out;
}
