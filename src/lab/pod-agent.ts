/**
 * The process that stands for one pod in the lab. It runs inside the pod's network namespace,
 * listens on the pod's ports (TCP and UDP echo servers), and answers the lab's requests on a
 * unix socket — a filesystem path, which every network namespace can reach: open listeners,
 * probe other pods, and hold long-lived connections open to test what happens to established
 * flows. Only Node's own modules: it starts fast, once per pod.
 *
 * It starts as root (entering a network namespace needs it) and drops to `nobody` as soon as its
 * control socket exists: the lab sets `net.ipv4.ip_unprivileged_port_start=0` in pod namespaces,
 * so binding any port needs no privilege. The socket is created 0600 whatever the umask.
 *
 * Usage: node pod-agent.js <control-socket-path>
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { chmodSync, rmSync } from 'node:fs';

import type { AgentRequest, ProbeOutcome, ProbeTarget, Transport } from './agent-protocol.ts';

const listeners = new Map<string, Server | UdpSocket>();
const streams = new Map<number, Socket>();
let nextStream = 1;

function listen(port: number, protocol: Transport): Promise<void> {
  const key = `${protocol}/${port}`;
  if (listeners.has(key)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (protocol === 'TCP') {
      const server = createServer((socket) => {
        socket.on('error', () => socket.destroy());
        socket.pipe(socket); // echo
      });
      server.once('error', reject);
      server.listen({ port, host: '::', ipv6Only: false }, () => {
        listeners.set(key, server);
        resolve();
      });
    } else {
      const socket = createSocket({ type: 'udp6', ipv6Only: false });
      socket.on('message', (message, remote) => socket.send(message, remote.port, remote.address));
      socket.once('error', reject);
      socket.bind(port, '::', () => {
        listeners.set(key, socket);
        resolve();
      });
    }
  });
}

/** TCP: connect and get an echo back. UDP: a datagram echoed back (re-sent while waiting). */
function probe(target: ProbeTarget, timeoutMs: number): Promise<ProbeOutcome> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (connected: boolean, detail: string, cleanup: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cleanup();
      resolve({ connected, detail, startedAt, endedAt: Date.now() });
    };
    let cleanup: () => void = () => undefined;
    const timer = setTimeout(() => finish(false, 'timeout', cleanup), timeoutMs);
    if (target.protocol === 'TCP') {
      const socket = connect({ host: target.ip, port: target.port });
      cleanup = () => socket.destroy();
      socket.on('connect', () => socket.write('palisade-probe'));
      socket.on('data', () => finish(true, 'echo', cleanup));
      socket.on('error', (error: NodeJS.ErrnoException) => finish(false, error.code ?? 'error', cleanup));
    } else {
      const socket = createSocket(target.ip.includes(':') ? 'udp6' : 'udp4');
      const send = (): void => socket.send('palisade-probe', target.port, target.ip);
      const resend = setInterval(send, 150);
      cleanup = () => {
        clearInterval(resend);
        socket.close();
      };
      socket.on('message', () => finish(true, 'echo', cleanup));
      socket.on('error', (error: NodeJS.ErrnoException) => finish(false, error.code ?? 'error', cleanup));
      send();
    }
  });
}

/** Opens a connection and keeps it, for tests of established flows across policy updates. */
async function open(target: ProbeTarget, timeoutMs: number): Promise<{ stream?: number; detail: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: target.ip, port: target.port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ detail: 'timeout' });
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      const stream = nextStream++;
      streams.set(stream, socket);
      socket.on('error', () => undefined);
      resolve({ stream, detail: 'open' });
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ detail: error.code ?? 'error' });
    });
  });
}

/** Sends a message on a held connection and waits for its echo. */
function ping(stream: number, timeoutMs: number): Promise<ProbeOutcome> {
  const startedAt = Date.now();
  const socket = streams.get(stream);
  if (!socket || socket.destroyed)
    return Promise.resolve({ connected: false, detail: 'closed', startedAt, endedAt: startedAt });
  return new Promise((resolve) => {
    const onData = (): void => done(true, 'echo');
    const done = (connected: boolean, detail: string): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      resolve({ connected, detail, startedAt, endedAt: Date.now() });
    };
    const timer = setTimeout(() => done(false, 'timeout'), timeoutMs);
    socket.on('data', onData);
    socket.write('palisade-ping');
  });
}

async function handle(request: AgentRequest): Promise<unknown> {
  switch (request.op) {
    case 'listen':
      for (const { port, protocol } of request.ports) await listen(port, protocol);
      return { listening: [...listeners.keys()] };
    case 'probe':
      return { outcomes: await Promise.all(request.targets.map((t) => probe(t, request.timeoutMs))) };
    case 'open':
      return open(request.target, request.timeoutMs);
    case 'ping':
      return ping(request.stream, request.timeoutMs);
    case 'close':
      streams.get(request.stream)?.destroy();
      streams.delete(request.stream);
      return { closed: true };
  }
}

/** The unprivileged user agents run as once their socket exists. */
const NOBODY = 65534;

function dropPrivileges(): void {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return;
  process.setgroups?.([]);
  process.setgid?.(NOBODY);
  process.setuid?.(NOBODY);
}

function serveControl(path: string): void {
  rmSync(path, { force: true });
  process.umask(0o077);
  const control = createServer((client) => {
    let buffer = '';
    client.on('error', () => undefined);
    client.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const { id, request } = JSON.parse(line) as { id: number; request: AgentRequest };
        handle(request).then(
          (result) => client.write(JSON.stringify({ id, result }) + '\n'),
          (error: unknown) => client.write(JSON.stringify({ id, error: String(error) }) + '\n'),
        );
      }
    });
  });
  control.listen(path, () => {
    chmodSync(path, 0o600);
    dropPrivileges();
  });
}

const controlPath = process.argv[2];
if (controlPath === undefined) {
  process.stderr.write('usage: pod-agent <control-socket-path>\n');
  process.exit(2);
}
serveControl(controlPath);
