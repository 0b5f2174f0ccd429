/**
 * Progress on stderr, for terminals only: a one-line bar (`progressBar`), and phases of a long
 * command — reading a file, building the cluster, computing, writing — each shown as its label,
 * with a bar once it says how far it is (`phases`). Silent where stderr is not a terminal
 * (callers get undefined and report nothing); with NO_COLOR set, the line is rewritten and
 * cleared with spaces instead of erase-line escape sequences.
 */
import { formatSize } from '../analysis/index.ts';
import { writeStreaming, type CliIo } from './io.ts';

export function progressBar(
  stream: { write(chunk: string): unknown },
  label: string,
  options: { readonly escapes: boolean } = { escapes: true },
): { update: (done: number, total: number) => void; finish: () => void } {
  let lastPercent = -1;
  let shown = false;
  return {
    update(done, total) {
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      if (percent === lastPercent) return;
      lastPercent = percent;
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      stream.write(`\r${label} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${percent}%`);
      shown = true;
    },
    finish() {
      if (!shown) return;
      stream.write(options.escapes ? '\r\u001b[2K' : `\r${' '.repeat(label.length + 38)}\r`);
    },
  };
}

/** The phases of one command, one line at a time. */
export interface Progress {
  /** A new phase: its label, at once (a bar follows when it reports how far it is). */
  phase(label: string): void;
  /** How far the current phase is. */
  update(done: number, total: number): void;
  /** Clears the line: before the output, or a message on stderr. */
  finish(): void;
}

/** Phases on stderr when it is a terminal; otherwise undefined. */
export function phases(io: Pick<CliIo, 'stderr' | 'stderrIsTty' | 'env'>): Progress | undefined {
  if (!io.stderrIsTty) return undefined;
  const escapes = io.env.NO_COLOR === undefined;
  const stream = io.stderr;
  let label = '';
  let lastPercent = -1;
  let shown = false;
  /** Characters on the line now (cleared with as many spaces without escapes). */
  let width = 0;
  const started = Date.now();
  const clear = (): string => (escapes ? '\r\u001b[2K' : `\r${' '.repeat(width)}\r`);
  const draw = (text: string): void => {
    stream.write(`${clear()}${text}`);
    width = text.length;
    shown = true;
  };
  return {
    phase(next) {
      label = next;
      lastPercent = -1;
      draw(`${label}…`);
    },
    update(done, total) {
      const percent = total <= 0 ? 100 : Math.min(100, Math.floor((done / total) * 100));
      if (percent === lastPercent) return;
      lastPercent = percent;
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      const seconds = Math.round((Date.now() - started) / 1000);
      draw(`${label} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${percent}%  ${seconds} s`);
    },
    finish() {
      if (shown) stream.write(clear());
      shown = false;
      width = 0;
    },
  };
}

/**
 * Writes an output a piece at a time (io.ts's writeStreaming), with a `writing` phase when it is
 * large and goes to a file or a pipe (on the terminal itself the output is the progress).
 */
export async function writeWithProgress(
  io: Pick<CliIo, 'stdout' | 'stdoutIsTty'>,
  pieces: Iterable<string>,
  expectedBytes: number,
  progress: Progress | undefined,
): Promise<void> {
  if (!progress || io.stdoutIsTty || !(expectedBytes > 1_000_000)) return writeStreaming(io.stdout, pieces);
  progress.phase(`writing about ${formatSize(expectedBytes)}`);
  let written = 0;
  function* counted(): Iterable<string> {
    for (const piece of pieces) {
      written += piece.length;
      progress?.update(Math.min(written, expectedBytes), expectedBytes);
      yield piece;
    }
  }
  try {
    await writeStreaming(io.stdout, counted());
  } finally {
    progress.finish();
  }
}
