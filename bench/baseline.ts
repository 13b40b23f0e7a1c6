// No regression (issue #20): each figure of this run, the median of its rounds, against the
// previous release's committed figure (bench/baseline.json). A figure is a MISS when it is below
// the baseline by more than the run-to-run noise this run measured for it: the spread of its
// rounds, (max - min) / median. With a single round there is no noise to judge by: "n/a".
// Ratios (app against its reference, measured side by side) travel between machines and loads
// better than absolute rates, so the batch rates are judged per 1,000 req/s of the same round's
// reference GET (scripts/bench.ts regressions()): the machine's speed moves between days.
import fs from 'node:fs';
import path from 'node:path';

interface Baseline {
  release: string;
  source: string;
  figures: Record<string, number>;
}

const FILE = path.resolve(import.meta.dirname, 'baseline.json');

export function loadBaseline(): Baseline {
  return JSON.parse(fs.readFileSync(FILE, 'utf8')) as Baseline;
}

const median = (values: number[]): number => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Rows: figure, baseline, measured (median of rounds), noise, result. */
export function regressionRows(measured: Map<string, number[]>): string[][] {
  const { figures } = loadBaseline();
  const rows: string[][] = [];
  const show = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(3));
  for (const [name, values] of measured) {
    if (!values.length) continue;
    const m = median(values);
    const base = figures[name];
    const noise = values.length > 1 ? (Math.max(...values) - Math.min(...values)) / m : null;
    const noiseText = noise === null ? 'n/a (1 round)' : `±${(noise * 100).toFixed(0)}%`;
    let result: string;
    if (base === undefined) result = 'new: no baseline';
    else if (noise === null) result = m >= base ? 'ok' : 'n/a: below, noise unknown';
    else result = m < base * (1 - noise) ? 'MISS' : 'ok';
    rows.push([name, base === undefined ? '' : show(base), show(m), noiseText, result]);
  }
  return rows;
}
