/**
 * A one-line progress bar on stderr, for TTYs only (callers decide). With `escapes: false`
 * (NO_COLOR) it clears its line with spaces instead of an erase-line escape sequence.
 */
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
