/**
 * The fault trials' timing-sensitive helpers, each a process of its own so that it never waits on
 * the test process's work (a fresh render of 6,000 pods takes seconds there on a loaded machine):
 * the relay agents reach etcd through when a trial partitions them (relay-process.mjs), and the
 * asker of the agents' /healthz (health-asker.mjs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';

const RELAY = join(import.meta.dirname, 'relay-process.mjs');
const ASKER = join(import.meta.dirname, 'health-asker.mjs');

/** A TCP relay that can stop moving bytes (a partition: nothing is refused, nothing arrives). */
export class CuttableRelay {
  private constructor(
    private readonly child: ChildProcess,
    private readonly lines: AsyncIterator<string>,
    private readonly reader: Interface,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<CuttableRelay> {
    const child = spawn(process.execPath, [RELAY, String(targetPort)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const reader = createInterface({ input: child.stdout });
    const lines = reader[Symbol.asyncIterator]();
    const first = await lines.next();
    const port = /^listening (\d+)$/.exec(first.done ? '' : first.value)?.[1];
    if (!port) {
      child.kill('SIGKILL');
      throw new Error(`the relay did not start: ${first.done ? 'it exited' : first.value}`);
    }
    return new CuttableRelay(child, lines, reader, Number(port));
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Stops every byte both ways (data waits in the kernel's buffers, as behind a lost route). */
  disconnect(): Promise<void> {
    return this.command('cut');
  }

  reconnect(): Promise<void> {
    return this.command('reconnect');
  }

  /** Drops every connection (as a peer's timeout would); new ones go through. */
  reset(): Promise<void> {
    return this.command('reset');
  }

  /** Ends the relay (it exits when its stdin closes) and waits for it to go. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    this.reader.close();
  }

  private async command(name: string): Promise<void> {
    this.child.stdin!.write(`${name}\n`);
    const answer = await this.lines.next();
    if (answer.done || answer.value !== 'ok')
      throw new Error(`the relay refused "${name}": ${answer.done ? 'it exited' : answer.value}`);
  }
}

export interface HealthAsks {
  /** Each ask's time to an answer (or to its 5 s deadline), ms. */
  latencies: number[];
  /** Asks not answered 200 within 5 s. */
  unanswered: number;
}

/** Asks each port's /healthz every 50 ms until the returned function is called; it resolves with what was seen. */
export function askHealth(ports: readonly number[]): () => Promise<HealthAsks> {
  const child = spawn(process.execPath, [ASKER, ...ports.map(String)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    return JSON.parse(output) as HealthAsks;
  };
}
