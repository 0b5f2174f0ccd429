/**
 * Wall time and this process's CPU time (every thread: the main one and the garbage
 * collector's) of each run. On the shared 2-core machine wall time under load measures the
 * neighbours as much as the code; CPU time is what the run itself cost.
 */
export function timeRunsWithCpu<T>(
  runs: number,
  work: () => T,
): { millis: number[]; cpuMillis: number[]; result: T } {
  const millis: number[] = [];
  const cpuMillis: number[] = [];
  let result: T | undefined;
  for (let i = 0; i < runs; i++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    result = work();
    millis.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    cpuMillis.push((used.user + used.system) / 1000);
  }
  return { millis, cpuMillis, result: result as T };
}
