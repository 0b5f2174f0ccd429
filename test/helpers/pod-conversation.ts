/**
 * One long-lived conversation from inside a pod's network namespace: a single TCP connection, or
 * a single UDP socket, kept open across the test's other steps (a policy update, rules added to
 * the node), over which numbered messages are sent one at a time and each echo is checked byte
 * for byte. The lab's pod agent can hold a TCP stream too, but it takes any data as the echo and
 * its UDP probe takes a reply from any source; these tests need to know that every message came
 * back, in order, unaltered — and, for UDP, from the very address and port it was sent to (a
 * reply whose source the host failed to translate back is reported as such: a DNS resolver would
 * drop it). A TCP connection can be made from a given source port and ended with a reset, and a
 * UDP socket can send to another address from the same port: how tests reuse a connection's
 * ports for another destination.
 *
 * The client is a small script run by this Node in the namespace (`ip netns exec`), driven over
 * its standard input: `{"exchange": N, "to": …, "timeoutMs": T}` answers with one JSON line.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

/** What one `exchange` of N messages gave. */
export interface ExchangeReport {
  /** Messages whose echo came back intact, counted from the first until one did not. */
  readonly echoed: number;
  /** Why the first missing echo is missing (timeout, a socket error, a wrong echo); absent when all came back. */
  readonly failure?: string;
  /** The longest round trip of a message, ms. */
  readonly slowestMs: number;
}

export interface ConversationTarget {
  readonly protocol: 'TCP' | 'UDP';
  readonly ip: string;
  readonly port: number;
}

/** The client, as a script for `node -e` (plain JavaScript: it runs without this repository's loaders). */
const CLIENT = String.raw`
const net = require('node:net');
const dgram = require('node:dgram');
const readline = require('node:readline');
const [protocol, ip, port, localPort] = process.argv.slice(1);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
let deliver = () => undefined;
let broken;
let send;
let reset = () => undefined;
let sent = 0;
if (protocol === 'TCP') {
  const socket = net.connect({ host: ip, port: Number(port), ...(Number(localPort) ? { localPort: Number(localPort) } : {}) });
  socket.setNoDelay(true);
  let pending = '';
  socket.on('data', (chunk) => {
    pending += chunk.toString('utf8');
    let newline;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      deliver(line);
    }
  });
  let ready = false;
  socket.on('error', (error) => {
    broken = error.code || String(error);
    if (!ready) say({ ready: false, failure: broken });
    deliver(undefined);
  });
  socket.on('close', () => { broken = broken || 'closed'; deliver(undefined); });
  socket.once('connect', () => { ready = true; say({ ready: true, localPort: socket.localPort }); });
  send = (text) => socket.write(text + '\n');
  reset = () => socket.resetAndDestroy();
} else {
  const socket = dgram.createSocket(ip.includes(':') ? 'udp6' : 'udp4');
  socket.on('message', (message, from) =>
    deliver(message.toString('utf8').replace(/\n$/, ''), from.address + ':' + from.port));
  socket.on('error', (error) => { broken = error.code || String(error); deliver(undefined); });
  socket.bind(Number(localPort) || 0, () => say({ ready: true, localPort: socket.address().port }));
  send = (text, to) => socket.send(text + '\n', to.port, to.ip);
}
function once(text, to, timeoutMs) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('timeout after ' + timeoutMs + ' ms'), timeoutMs);
    const expected = to.ip + ':' + to.port;
    deliver = (line, from) => {
      clearTimeout(timer);
      deliver = () => undefined;
      if (line === undefined) resolve(broken);
      else if (line !== text) resolve('echo ' + JSON.stringify(line) + ' for ' + JSON.stringify(text));
      else if (from !== undefined && from !== expected) resolve('the echo came from ' + from + ', not ' + expected);
      else resolve(undefined);
    };
    if (broken) return deliver(undefined);
    send(text, to);
  });
}
async function exchange(count, to, timeoutMs) {
  let slowestMs = 0;
  for (let i = 0; i < count; i++) {
    const text = 'message ' + sent++ + ' ' + 'x'.repeat(64);
    const started = performance.now();
    const failure = await once(text, to, timeoutMs);
    slowestMs = Math.max(slowestMs, performance.now() - started);
    if (failure) return { echoed: i, failure: 'message ' + i + ': ' + failure, slowestMs };
  }
  return { echoed: count, slowestMs };
}
let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  queue = queue.then(async () => {
    if (request.reset) {
      reset();
      return say({ reset: true });
    }
    say(await exchange(request.exchange, request.to || { ip, port: Number(port) }, request.timeoutMs));
  });
}).on('close', () => process.exit(0));
`;

export class PodConversation {
  /** The client's own port: the connection's source port (set once it is open). */
  localPort = 0;
  private errors = '';
  private readonly lines: AsyncIterator<string>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.on('data', (chunk: Buffer) => (this.errors += chunk.toString('utf8')));
    this.lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  /**
   * Opens the connection (TCP) or connects the socket (UDP) from inside `netns`. The caller
   * closes it (also on failure: a client that could not connect is ended here).
   */
  static async open(
    netns: string,
    target: ConversationTarget,
    options: { readonly localPort?: number; readonly timeoutMs?: number } = {},
  ): Promise<PodConversation> {
    const timeoutMs = options.timeoutMs ?? 5000;
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        netns,
        process.execPath,
        '-e',
        CLIENT,
        target.protocol,
        target.ip,
        String(target.port),
        String(options.localPort ?? 0),
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const conversation = new PodConversation(child);
    try {
      const ready = (await conversation.next(timeoutMs, 'the connection to open')) as {
        ready: boolean;
        localPort?: number;
        failure?: string;
      };
      if (!ready.ready || ready.localPort === undefined)
        throw new Error(
          `${target.protocol} to ${target.ip}:${target.port} did not open: ${ready.failure ?? '?'}`,
        );
      conversation.localPort = ready.localPort;
      return conversation;
    } catch (error) {
      await conversation.close();
      throw error;
    }
  }

  /**
   * Sends `count` messages one at a time, each waiting up to `timeoutMs` for its echo. UDP: to
   * `to` when given (the same socket, so the same source port), else to the target.
   */
  async exchange(
    count: number,
    options: {
      readonly to?: { readonly ip: string; readonly port: number };
      readonly timeoutMs?: number;
    } = {},
  ): Promise<ExchangeReport> {
    const timeoutMs = options.timeoutMs ?? 2000;
    this.child.stdin.write(JSON.stringify({ exchange: count, to: options.to, timeoutMs }) + '\n');
    return (await this.next(count * timeoutMs + 5000, `${count} messages`)) as ExchangeReport;
  }

  /** TCP: ends the connection with a reset (no TIME_WAIT left: its port can be bound again at once). */
  async reset(): Promise<void> {
    this.child.stdin.write(JSON.stringify({ reset: true }) + '\n');
    await this.next(5000, 'the reset');
  }

  /** Ends the client (and with it the connection); resolves once it is gone. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const gone = new Promise((resolve) => this.child.once('close', resolve));
    this.child.kill('SIGKILL');
    await gone;
  }

  private async next(timeoutMs: number, what: string): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer from the pod's client within ${timeoutMs} ms for ${what}`)),
        timeoutMs,
      );
    });
    try {
      const line = await Promise.race([this.lines.next(), late]);
      if (line.done) throw new Error(`the pod's client ended: ${this.errors.trim() || 'no output'}`);
      return JSON.parse(line.value) as unknown;
    } finally {
      clearTimeout(timer);
    }
  }
}
