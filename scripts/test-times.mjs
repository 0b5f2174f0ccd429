// Loaded into every test process by `PALISADE_TEST_TIMES=1 npm test` (node --import): when a test
// file's process exits, it appends one line to $PALISADE_TEST_TIMES_FILE — the file, the wall
// time and the CPU seconds of the process and of the children it waited for (etcd, agents, the
// lab's pods, nft, tsx's esbuild), read from /proc/self/stat (Linux). scripts/test.mjs prints the
// table at the end. CPU seconds, unlike wall time, do not depend on what else the machine runs.
import { appendFileSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { performance } from 'node:perf_hooks';

const output = process.env.PALISADE_TEST_TIMES_FILE;
// Only the test files' processes: node --test marks them; the runner itself is left out.
if (output && process.env.NODE_TEST_CONTEXT) {
  const started = performance.now();
  process.on('exit', () => {
    let cpu = { self: NaN, children: NaN };
    try {
      // Fields after the command's closing parenthesis: utime is the 12th, cutime the 14th.
      const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
      const ticks = (i) => Number(fields[i]) / 100; // USER_HZ is 100 on Linux
      cpu = { self: ticks(11) + ticks(12), children: ticks(13) + ticks(14) };
    } catch {
      // not Linux: the line says NaN
    }
    const line = { file: process.argv[1], wall: (performance.now() - started) / 1000, ...cpu };
    appendFileSync(output, `${JSON.stringify(line)}\n`);
  });
}
