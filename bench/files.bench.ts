/**
 * `npm run bench -- files [--scale 0.1,1] [--runs N]`: what a user runs —
 * `palisade generate --shape a` then `palisade compile -f DIR` — end to end as a process (wall
 * time, peak RSS), and the same work in this process phase by phase: loading the files
 * (read, parse and validate), the store (indexes and address groups), the tables (every pod's
 * ingress and egress).
 */
import { loadCluster } from '../src/ingest/index.ts';
import { Configurator } from '../src/configurator/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';
import { runCli, scratchDirectory } from './child.ts';

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function filesBenchmark(args: string[]): Promise<void> {
  const scales = (option(args, 'scale') ?? '0.1').split(',').map(Number);
  const runs = Number(option(args, 'runs') ?? 3);
  for (const scale of scales) {
    const dir = scratchDirectory(`files-${scale}`);
    try {
      const generated = await runCli(['generate', '--shape', 'a', '--scale', String(scale), '-o', dir.path]);
      if (generated.code !== 0) throw new Error(`generate failed: ${generated.stderr}`);
      const whole: number[] = [];
      const peaks: number[] = [];
      // The process's CPU time: on a shared machine its wall time measures the neighbours too.
      const wholeCpu: number[] = [];
      for (let run = 0; run < runs; run++) {
        const compiled = await runCli(['compile', '-f', dir.path, '--stats']);
        if (compiled.code !== 0) throw new Error(`compile failed: ${compiled.stderr}`);
        whole.push(compiled.millis);
        peaks.push(compiled.peakMiB);
        wholeCpu.push(compiled.cpuMillis);
      }
      const phases = { load: [] as number[], store: [] as number[], tables: [] as number[] };
      // CPU time of each phase (every thread of this process): under load, wall time measures
      // the neighbours as much as the phase.
      const cpu = { load: [] as number[], store: [] as number[], tables: [] as number[] };
      const cpuSince = (start: NodeJS.CpuUsage): number => {
        const used = process.cpuUsage(start);
        return (used.user + used.system) / 1000;
      };
      for (let run = 0; run < runs; run++) {
        globalThis.gc?.();
        let t = performance.now();
        let c = process.cpuUsage();
        const { cluster } = await loadCluster([dir.path], { keepRawObjects: false });
        phases.load.push(performance.now() - t);
        cpu.load.push(cpuSince(c));
        globalThis.gc?.();
        t = performance.now();
        c = process.cpuUsage();
        const state = new ClusterState();
        state.resync(cluster);
        phases.store.push(performance.now() - t);
        cpu.store.push(cpuSince(c));
        t = performance.now();
        c = process.cpuUsage();
        const configurator = new Configurator(state);
        for (const pod of state.allPods()) configurator.compile(pod);
        phases.tables.push(performance.now() - t);
        cpu.tables.push(cpuSince(c));
      }
      const seconds = (values: number[]): number[] => values.map((v) => v / 1000);
      const full = scale === 1;
      reportFigure({
        name: `compile -f DIR, shape a ×${scale} (generate's files; the whole process)`,
        value: median(whole) / 1000,
        unit: 's',
        runs: seconds(whole),
        ...(full ? { target: '≤ 7 s' } : {}),
      });
      reportFigure({
        name: `compile -f DIR ×${scale}: peak RSS`,
        value: median(peaks),
        unit: 'MiB',
        runs: peaks,
        ...(full ? { target: '≤ 1.5 GB' } : {}),
      });
      reportFigure({
        name: `compile -f DIR ×${scale}: CPU time of the process (user + system)`,
        value: median(wholeCpu) / 1000,
        unit: 's',
        runs: seconds(wholeCpu),
      });
      for (const [phase, values] of Object.entries(phases))
        reportFigure({
          name: `compile -f DIR ×${scale}: ${phase}`,
          value: median(values) / 1000,
          unit: 's',
          runs: seconds(values),
        });
      process.stdout.write(
        `shape a ×${scale} from files: compile -f ${median(whole).toFixed(0)} ms (runs ${whole.map((w) => w.toFixed(0)).join(', ')}; ` +
          `CPU ${wholeCpu.map((c) => c.toFixed(0)).join(', ')} ms), ` +
          `peak RSS ${median(peaks).toFixed(0)} MiB; in process: load ${median(phases.load).toFixed(0)} ms, ` +
          `store ${median(phases.store).toFixed(0)} ms, tables ${median(phases.tables).toFixed(0)} ms; ` +
          `CPU load ${median(cpu.load).toFixed(0)} ms, store ${median(cpu.store).toFixed(0)} ms, tables ${median(cpu.tables).toFixed(0)} ms\n`,
      );
    } finally {
      dir.remove();
    }
  }
}
