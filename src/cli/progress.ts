/**
 * A one-line progress bar on stderr, for TTYs only (callers decide).
 */
export function progressBar(
  stream: { write(chunk: string): unknown },
  label: string,
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
      if (shown) stream.write('\r\u001b[2K');
    },
  };
}
