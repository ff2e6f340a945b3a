// Reading a container's CRI log file as the kubelet serves pods/log: whole lines (partial records joined),
// `timestamps` prefixing each line with its RFC 3339 time, `sinceSeconds`/`sinceTime` dropping older lines,
// `tailLines` keeping the last N, `limitBytes` cutting the output, and `follow` streaming new lines until the
// container stops running.
import fs from 'node:fs';
import { parseCriLog } from '@kemu/cri';
import type { PodLogOptions } from '@kemu/apiserver';

interface Line {
  time: string;
  text: string;
}

/** Whole lines of a CRI log's text; `rest` is an incomplete last record (no newline yet) to keep for later. */
function lines(content: string, carry: string): { lines: Line[]; rest: string; carry: string } {
  const end = content.lastIndexOf('\n');
  const complete = end < 0 ? '' : content.slice(0, end + 1);
  const rest = end < 0 ? content : content.slice(end + 1);
  const out: Line[] = [];
  let cur = carry;
  for (const r of parseCriLog(complete)) {
    cur += r.text;
    if (!r.partial) {
      out.push({ time: r.timestamp, text: cur });
      cur = '';
    }
  }
  return { lines: out, rest, carry: cur };
}

function sinceMs(opts: PodLogOptions): number | undefined {
  if (opts.sinceSeconds !== undefined) return Date.now() - opts.sinceSeconds * 1000;
  if (opts.sinceTime) return Date.parse(opts.sinceTime);
  return undefined;
}

function render(ls: Line[], opts: PodLogOptions): string {
  const since = sinceMs(opts);
  const kept = since === undefined ? ls : ls.filter((l) => Date.parse(l.time) >= since);
  return kept.map((l) => (opts.timestamps ? `${l.time} ${l.text}\n` : `${l.text}\n`)).join('');
}

/** The log as text (no follow). */
export function readPodLog(file: string, opts: PodLogOptions): string {
  if (!file || !fs.existsSync(file)) return '';
  let { lines: ls } = lines(fs.readFileSync(file, 'utf8'), '');
  if (opts.tail !== undefined) ls = opts.tail === 0 ? [] : ls.slice(-opts.tail);
  const text = render(ls, opts);
  return opts.limitBytes !== undefined ? Buffer.from(text).subarray(0, opts.limitBytes).toString() : text;
}

/** The log, then new lines as they are written, until `running()` turns false (checked every poll). */
export async function* followPodLog(file: string, opts: PodLogOptions, running: () => Promise<boolean>, pollMs = 200): AsyncGenerator<string> {
  let offset = 0;
  let rest = '';
  let carry = '';
  let first = true;
  let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  for (;;) {
    let chunk = '';
    if (file && fs.existsSync(file)) {
      const fd = fs.openSync(file, 'r');
      try {
        const size = fs.fstatSync(fd).size;
        if (size < offset) offset = 0; // rotated
        if (size > offset) {
          const buf = Buffer.alloc(size - offset);
          fs.readSync(fd, buf, 0, buf.length, offset);
          offset = size;
          chunk = buf.toString('utf8');
        }
      } finally {
        fs.closeSync(fd);
      }
    }
    if (chunk) {
      const parsed = lines(rest + chunk, carry);
      rest = parsed.rest;
      carry = parsed.carry;
      let ls = parsed.lines;
      if (first && opts.tail !== undefined) ls = opts.tail === 0 ? [] : ls.slice(-opts.tail);
      let text = render(ls, opts);
      if (text) {
        if (Buffer.byteLength(text) > budget) text = Buffer.from(text).subarray(0, budget).toString();
        budget -= Buffer.byteLength(text);
        yield text;
        if (budget <= 0) return;
      }
    }
    first = false;
    if (!(await running())) return;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
