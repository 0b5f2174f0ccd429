/**
 * `npm run bench -- agent-direct [--scale 1] [--runs 3] [--datapath nftables|classifier]`: the node
 * agent in direct mode (`palisade agent --source kube`) against the fake API server (its own
 * process) loaded with generated shape (a): from the agent's spawn to its first snapshot realized
 * (API → informers → in-process store → pipeline → kernel; nftables in a network namespace of
 * its own when root, else the classifier), and the load it puts on the API server — the requests
 * it made by verb (lists are pages of 500), counted by the server. The agent is the built CLI
 * (dist/bin/palisade.js: `npm run build` first). Every figure with the one-minute load average.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot, run } from '../src/dataplane/index.ts';
import { kubeconfigYaml } from '../test/fake-apiserver/fixtures.ts';
import { startFake } from './reflect.bench.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

const ROOT = join(new URL('.', import.meta.url).pathname, '..', '..');
const clock = (): number => performance.timeOrigin + performance.now();
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const say = (line: string): boolean => process.stdout.write(`${line}\n`);

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
}

export async function agentDirectBenchmark(args: string[]): Promise<void> {
  const scale = Number(option(args, 'scale', '1'));
  const runs = Number(option(args, 'runs', '3'));
  const datapath = option(args, 'datapath', isRoot() ? 'nftables' : 'classifier');
  const dir = mkdtempSync(join(tmpdir(), 'palisade-bench-direct-'));
  const started = clock();
  const fake = await startFake('a', scale);
  try {
    say(
      `shape (a) ×${scale} served by the fake API server (${fake.pods.toLocaleString('en-US')} pods, ${fake.objects.toLocaleString('en-US')} objects, loaded in ${((clock() - started) / 1000).toFixed(1)} s); load ${load()}`,
    );
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml({ server: fake.url }));
    const seconds: number[] = [];
    const requests: number[] = [];
    let lastCounts: Record<string, number> = {};
    for (let r = 0; r < runs; r++) {
      const ns = `pal-direct-${process.pid}-${r}`;
      if (datapath === 'nftables') await run('ip', ['netns', 'add', ns]);
      await fake.request({ type: 'requests' }, 'requests'); // forget what came before
      const spawned = clock();
      const agent = spawn(
        process.execPath,
        [
          join(ROOT, 'dist', 'bin', 'palisade.js'),
          'agent',
          '--source',
          'kube',
          '--kubeconfig',
          kubeconfig,
          '--node',
          'node-0',
          '--datapath',
          datapath,
          '--pod-cidr',
          '10.0.0.0/8',
          '--listen',
          'off',
          '--run-dir',
          join(dir, `run-${r}`),
          ...(datapath === 'nftables' ? ['--netns', ns] : []),
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      try {
        const at = await new Promise<number>((resolve, reject) => {
          let text = '';
          agent.stdout.on('data', (chunk: Buffer) => {
            text += chunk.toString();
            if (text.includes('first snapshot realized')) resolve(clock());
          });
          agent.once('exit', (code) =>
            reject(new Error(`the agent exited (${code}):\n${text.slice(-2000)}`)),
          );
        });
        // The watches open right after the lists: give them a moment to be counted.
        await new Promise((resolve) => setTimeout(resolve, 2000));
        const { counts } = await fake.request<{ counts: Record<string, number> }>(
          { type: 'requests' },
          'requests',
        );
        lastCounts = counts;
        const total = Object.values(counts).reduce((a, b) => a + b, 0);
        seconds.push((at - spawned) / 1000);
        requests.push(total);
        say(
          `run ${r + 1}: spawn → first snapshot realized ${((at - spawned) / 1000).toFixed(2)} s; API requests ${total} (${Object.entries(
            counts,
          )
            .map(([verb, n]) => `${verb} ${n}`)
            .join(', ')}); load ${load()}`,
        );
      } finally {
        const exited = new Promise((resolve) => agent.once('exit', resolve));
        agent.kill('SIGTERM');
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
        if (datapath === 'nftables') await run('ip', ['netns', 'delete', ns]);
      }
    }
    say(
      `direct-mode agent (${datapath}), shape (a) ×${scale}: spawn → first snapshot realized median ${median(seconds).toFixed(2)} s (${seconds.map((s) => s.toFixed(2)).join(', ')}); API requests per agent start ${median(requests)} (${JSON.stringify(lastCounts)})`,
    );
    reportFigure({ name: `agent direct start ×${scale}`, value: median(seconds), unit: 's', runs: seconds });
    reportFigure({
      name: `agent direct start ×${scale} API requests`,
      value: median(requests),
      unit: 'requests',
      runs: requests,
    });
  } finally {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
