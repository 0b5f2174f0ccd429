// One job of `npm test` or `npm run test:quick`: commands run one after another, their output
// streamed or kept until the job ends, and its exit code and time (scripts/test.mjs,
// scripts/test-quick.mjs).
import process from 'node:process';
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

/**
 * Runs commands one after another; resolves with the first failing exit code (or 0), the time and
 * the output kept (empty when streamed).
 * `niceness` lowers their CPU priority: the type check and the lint only need to finish, while
 * many tests time what they wait for (agents converging, a lease kept alive), and on two cores a
 * lint at equal priority (5 minutes of CPU) starved them into timeouts.
 */
export function runJob(cwd, name, commands, { stream = false, niceness = 0 } = {}) {
  const started = Date.now();
  let output = '';
  const runNext = async (index) => {
    if (index >= commands.length) return 0;
    const [command, ...args] = commands[index];
    const code = await new Promise((done) => {
      const child = spawn(command, args, {
        cwd,
        stdio: ['ignore', stream ? 'inherit' : 'pipe', stream ? 'inherit' : 'pipe'],
      });
      if (niceness !== 0 && child.pid !== undefined) {
        try {
          setPriority(child.pid, niceness);
        } catch {
          // Not permitted (or already gone): it runs at the tests' priority.
        }
      }
      child.stdout?.on('data', (chunk) => (output += chunk));
      child.stderr?.on('data', (chunk) => (output += chunk));
      child.on('close', (status, signal) => done(status ?? (signal ? 1 : 0)));
    });
    return code === 0 ? runNext(index + 1) : code;
  };
  return runNext(0).then((code) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    if (!stream || output)
      process.stdout.write(
        `\n── ${name} (${seconds} s): ${code === 0 ? 'ok' : `failed (${code})`}\n${output}`,
      );
    return { name, code, seconds, output };
  });
}
