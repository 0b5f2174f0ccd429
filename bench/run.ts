/**
 * Benchmarks: programs that print figures (`npm run bench -- NAME`). Each runs its workload
 * several times and reports the median, so one slow run does not mislead.
 */
import { cpus } from 'node:os';
import { compileBenchmark } from './compile.bench.ts';
import { incrementalBenchmark } from './incremental.bench.ts';
import { matrixBenchmark } from './matrix.bench.ts';
import { nftablesBenchmark } from './nftables.bench.ts';
import { datapathBenchmark } from './datapath.bench.ts';
import { renderersBenchmark } from './renderers.bench.ts';
import { classifierBenchmark } from './classifier.bench.ts';
import { tiersBenchmark } from './tiers.bench.ts';
import { enginesBenchmark } from './engines.bench.ts';
import { suiteBenchmark } from './suite.ts';
import { startupBenchmark } from './startup.bench.ts';
import { filesBenchmark } from './files.bench.ts';
import { matrixFilesBenchmark } from './matrix-files.bench.ts';
import { reflectBenchmark } from './reflect.bench.ts';
import { explanationsBenchmark } from './explanations.bench.ts';
import { lintBenchmark } from './lint.bench.ts';
import { diffBenchmark } from './diff.bench.ts';
import { serveBenchmark } from './serve.bench.ts';
import { ebpfBenchmark } from './ebpf.bench.ts';
import { agentBenchmark } from './agent.bench.ts';
import { agentHealthBenchmark } from './agent-health.bench.ts';
import { scaleBenchmark } from './scale.bench.ts';
import { agentDirectBenchmark } from './agent-direct.bench.ts';
import { suggestBenchmark } from './suggest.bench.ts';
import { neutronBenchmark } from './neutron.bench.ts';
import { flowsBenchmark } from './flows.bench.ts';

const BENCHMARKS: Record<string, (args: string[]) => Promise<void> | void> = {
  matrix: matrixBenchmark,
  compile: compileBenchmark,
  incremental: incrementalBenchmark,
  nftables: nftablesBenchmark,
  datapath: datapathBenchmark,
  renderers: renderersBenchmark,
  classifier: classifierBenchmark,
  tiers: tiersBenchmark,
  engines: enginesBenchmark,
  files: filesBenchmark,
  'matrix-files': matrixFilesBenchmark,
  startup: startupBenchmark,
  all: suiteBenchmark,
  reflect: reflectBenchmark,
  explanations: explanationsBenchmark,
  lint: lintBenchmark,
  diff: diffBenchmark,
  serve: serveBenchmark,
  ebpf: ebpfBenchmark,
  agent: agentBenchmark,
  'agent-health': agentHealthBenchmark,
  scale: scaleBenchmark,
  'agent-direct': agentDirectBenchmark,
  suggest: suggestBenchmark,
  neutron: neutronBenchmark,
  flows: flowsBenchmark,
};

const [name, ...args] = process.argv.slice(2);
const bench = name ? BENCHMARKS[name] : undefined;
if (!bench) {
  process.stderr.write(`usage: npm run bench -- <${Object.keys(BENCHMARKS).join('|')}> [options]\n`);
  process.exitCode = 2;
} else {
  process.stdout.write(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}\n`);
  await bench(args);
}
