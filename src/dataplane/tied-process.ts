/**
 * A long-running watcher process (`nft monitor`, `ip monitor route`) whose lines this process
 * reads, which never outlives it: a shell beside the watcher kills it when its standard input (a
 * pipe from here) closes — which the kernel does when this process dies, however it dies — and
 * the shell ends when the watcher does, with its code. `onStopped` says the watcher ended or
 * wrote to its standard error (events may have been missed); the caller decides whether to
 * start another.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface TiedProcess {
  close(): void;
}

interface TiedProcessOptions {
  /** The watcher's command line (words, no shell syntax). */
  readonly argv: readonly string[];
  /** Run inside this named network namespace (`ip netns exec`). */
  readonly netns?: string;
  readonly onLine: (line: string) => void;
  readonly onStopped: (why: string) => void;
}

/** Quotes a word for sh. */
const quote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The watcher, killed when standard input closes. (A background job's standard input is
 * /dev/null unless redirected: the pipe goes through fd 3.)
 */
const tied = (argv: readonly string[]): string =>
  `exec 3<&0; ${argv.map(quote).join(' ')} </dev/null & m=$!; (cat <&3 >/dev/null; kill $m 2>/dev/null) & wait $m`;

export function startTiedProcess(options: TiedProcessOptions): TiedProcess {
  const argv = [
    ...(options.netns ? ['ip', 'netns', 'exec', options.netns] : []),
    'sh',
    '-c',
    tied(options.argv),
  ];
  let child: ChildProcess | undefined = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  let closed = false;
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (line) => options.onLine(line));
  let stderr = '';
  const what = options.argv.join(' ');
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
    // A watcher may keep running after an error (nft's ENOBUFS when events overflow): events were lost.
    if (!closed) options.onStopped(`${what}: ${stderr.trim().split('\n').at(-1) ?? ''}`);
  });
  const ended = (why: string): void => {
    if (closed) return;
    closed = true;
    child?.stdin?.end();
    child = undefined;
    options.onStopped(why);
  };
  child.on('error', (error) => ended(`${what} could not run: ${error.message}`));
  child.on('exit', (code, signal) =>
    ended(
      `${what} exited (${signal ?? `code ${code}`})${stderr ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`,
    ),
  );
  return {
    close(): void {
      closed = true;
      lines.close();
      // The shell beside the watcher kills it and ends.
      child?.stdin?.end();
      child = undefined;
    },
  };
}

/**
 * Keeps a watcher running until closed: started again a second after it stops (at most once a
 * second, whatever keeps stopping it), `onStopped` told why each time — events may have been
 * missed, which the caller makes up for (the agent verifies).
 */
export function keepRunning(
  start: (stopped: (why: string) => void) => TiedProcess,
  onStopped: (why: string) => void,
): TiedProcess {
  let current: TiedProcess | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const run = (): void => {
    current = start((why) => {
      if (closed) return;
      onStopped(why);
      current?.close();
      current = undefined;
      timer = setTimeout(run, 1000);
    });
  };
  run();
  return {
    close(): void {
      closed = true;
      if (timer) clearTimeout(timer);
      current?.close();
    },
  };
}
