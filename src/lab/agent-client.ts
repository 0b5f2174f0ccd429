/**
 * The lab's side of a pod agent's control socket: requests with ids, answers matched by id,
 * so many requests can be in flight on one connection.
 */
import { connect, type Socket } from 'node:net';
import type { AgentRequest, ProbeOutcome, ProbeTarget, Transport } from './agent-protocol.ts';

export class AgentClient {
  private socket: Socket | undefined;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private nextId = 1;
  private buffer = '';

  constructor(readonly path: string) {}

  /** Connects, retrying while the agent is still starting. */
  async connect(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        this.socket = await new Promise<Socket>((resolve, reject) => {
          const socket = connect(this.path);
          socket.once('connect', () => resolve(socket));
          socket.once('error', reject);
        });
        break;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`pod agent at ${this.path} did not answer: ${String(error)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk.toString('utf8')));
    this.socket.on('error', (error) => this.failAll(error));
    this.socket.on('close', () => this.failAll(new Error(`pod agent at ${this.path} closed the connection`)));
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  listen(ports: readonly { port: number; protocol: Transport }[]): Promise<unknown> {
    return this.request({ op: 'listen', ports });
  }

  async probe(targets: readonly ProbeTarget[], timeoutMs: number): Promise<ProbeOutcome[]> {
    const answer = (await this.request({ op: 'probe', targets, timeoutMs })) as { outcomes: ProbeOutcome[] };
    return answer.outcomes;
  }

  async open(target: ProbeTarget, timeoutMs: number): Promise<number | undefined> {
    const answer = (await this.request({ op: 'open', target, timeoutMs })) as { stream?: number };
    return answer.stream;
  }

  ping(stream: number, timeoutMs: number): Promise<ProbeOutcome> {
    return this.request({ op: 'ping', stream, timeoutMs }) as Promise<ProbeOutcome>;
  }

  closeStream(stream: number): Promise<unknown> {
    return this.request({ op: 'close', stream });
  }

  private request(request: AgentRequest): Promise<unknown> {
    const socket = this.socket;
    if (!socket) return Promise.reject(new Error(`not connected to ${this.path}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      socket.write(JSON.stringify({ id, request }) + '\n');
    });
  }

  private receive(text: string): void {
    this.buffer += text;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const answer = JSON.parse(this.buffer.slice(0, newline)) as {
        id: number;
        result?: unknown;
        error?: string;
      };
      this.buffer = this.buffer.slice(newline + 1);
      const waiter = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (answer.error !== undefined) waiter?.reject(new Error(answer.error));
      else waiter?.resolve(answer.result);
    }
  }

  private failAll(error: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}
