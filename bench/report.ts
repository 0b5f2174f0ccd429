/**
 * Headline figures as data. A benchmark prints its own lines for people, and also reports each
 * headline figure here; when the quick suite (`npm run bench -- all`) runs it, the figures go to
 * the file the suite names in PALISADE_BENCH_FIGURES (one JSON object per line) and end up in
 * its one table; when `node scripts/bench-tables.mjs` runs it, those with an id go into
 * docs/BENCHMARKS.md's tables. Run on its own, a benchmark reports to nobody.
 */
import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';

/** One headline figure. */
export interface Figure {
  /**
   * The figure's stable id where docs/BENCHMARKS.md's tables show it (`classifier.random-pairs`):
   * `node scripts/bench-tables.mjs` writes the value into the row marked `<!-- fig:ID -->`.
   */
  readonly id?: string;
  /** What was measured, e.g. `compile shape a ×0.1`. */
  readonly name: string;
  readonly value: number;
  /** `ms`, `s`, `MiB`, `M/s`, `events/s`… */
  readonly unit: string;
  /** The target, in words (`≤ 8 s`), when the issues set one. */
  readonly target?: string;
  /** Every run's value when the figure is a median. */
  readonly runs?: readonly number[];
  readonly note?: string;
  /** One-minute load average when the figure was taken (the machine is shared). */
  readonly load?: number;
}

const FILE_VARIABLE = 'PALISADE_BENCH_FIGURES';

export function reportFigure(figure: Figure): void {
  const file = process.env[FILE_VARIABLE];
  if (!file) return;
  appendFileSync(file, JSON.stringify({ ...figure, load: figure.load ?? loadavg()[0] }) + '\n');
}

/** The figures a run reported, from the suite's file. */
export function figuresIn(text: string): Figure[] {
  return text
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as Figure);
}

export { FILE_VARIABLE };
