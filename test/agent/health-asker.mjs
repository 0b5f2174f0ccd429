// Asks each agent's /healthz in turn, every 50 ms, each ask with 5 s to answer — a process of its
// own, as a kubelet's probe is: asked from the test process, an answer waited whenever the test
// computed a fresh render there, and a 5 s deadline ran out on the test, not on the agent.
//
// Usage: node health-asker.mjs PORT…. Asks until stdin closes, then prints one line of JSON,
// {"latencies": [ms…], "unanswered": n}, and exits.
import { get } from 'node:http';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

const ports = process.argv.slice(2).map(Number);
const latencies = [];
let unanswered = 0;
let asking = true;

/** Resolves with the answer's status code, or 0 when none came within 5 s. */
function ask(port) {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/healthz', timeout: 5000 }, (answer) => {
      answer.resume();
      answer.on('end', () => resolve(answer.statusCode ?? 0));
      answer.on('error', () => resolve(0));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(0));
  });
}

const loop = (async () => {
  while (asking) {
    for (const port of ports) {
      const started = performance.now();
      if ((await ask(port)) !== 200) unanswered++;
      latencies.push(performance.now() - started);
    }
    await sleep(50);
  }
})();

createInterface({ input: process.stdin }).on('close', async () => {
  asking = false;
  await loop;
  process.stdout.write(`${JSON.stringify({ latencies, unanswered })}\n`);
  process.exit(0);
});
