/**
 * Timing helpers for benchmarks.
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function timeRuns<T>(runs: number, work: () => T): { millis: number[]; result: T } {
  const millis: number[] = [];
  let result: T | undefined;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    result = work();
    millis.push(performance.now() - started);
  }
  return { millis, result: result as T };
}

export const ms = (value: number): string => `${value.toFixed(0)} ms`;
