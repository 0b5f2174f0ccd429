/**
 * The agent's HTTP endpoints, on loopback by default: `/healthz` (the process answers),
 * `/readyz` (200 once the first snapshot is realized, the last realization succeeded and every
 * key could be read; 503 with the reason otherwise, a standby controller's included), `/metrics` (Prometheus text) and, with the
 * flow log on, `/flows` (NDJSON, flow-feed.ts). They are
 * served from the agent's event loop, which its realizer's work does not hold (worker-realizer.ts).
 */
import { createServer, type Server } from 'node:http';
import { rmSync } from 'node:fs';
import type { AgentState } from './types.ts';
import type { FlowTable } from '../flows/index.ts';
import { serveFlows } from './flow-feed.ts';
import { NodeFactError } from './node-facts.ts';

interface HealthSource {
  readonly state: AgentState;
  exposeMetrics?(): Promise<{ text: string; contentType: string }>;
  /** The flow table `/flows` serves (absent: no flow log, 404). */
  readonly flows?: FlowTable;
  /** A standby controller: who leads (leadership.ts); /readyz says so with 503. */
  readonly standingBy?: string | undefined;
}

export interface HealthServer {
  /** `http://host:port` */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Listens on `host:port` (port 0: any free port), or on a Unix socket when `host` is an absolute
 * path (reachable from any network namespace: the lab's agents each run in their node's).
 */
export async function serveHealth(source: HealthSource, host: string, port: number): Promise<HealthServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      response.writeHead(status, { 'content-type': type });
      response.end(body);
    };
    if (request.method !== 'GET') return send(405, 'GET only\n');
    if (path === '/healthz') return send(200, 'ok\n');
    if (path === '/readyz') {
      if (source.standingBy !== undefined)
        return send(
          503,
          `not ready: standing by (${source.standingBy} leads; this controller writes nothing)\n`,
        );
      const { phase, stale, realizedRevision, lastError, unreadable, unreadableCount } = source.state;
      if (phase === 'ready')
        return send(200, `ready: revision ${realizedRevision}${stale ? ' (stale)' : ''}\n`);
      const why =
        phase === 'starting'
          ? 'the first snapshot is not realized yet'
          : phase === 'failing'
            ? `the last realization failed: ${lastError?.message.split('\n')[0] ?? ''}`
            : phase === 'degraded'
              ? `degraded: ${unreadableCount} key${unreadableCount === 1 ? '' : 's'} cannot be read (${unreadable[0]?.key ?? ''}: ${unreadable[0]?.reason ?? ''}); revision ${realizedRevision} is realized with their last good versions`
              : 'stopping';
      return send(503, `not ready: ${why}\n`);
    }
    if (path === '/flows' && source.flows) return serveFlows(source.flows, request, response);
    if (path === '/metrics' && source.exposeMetrics) {
      source
        .exposeMetrics()
        .then(({ text, contentType }) => send(200, text, contentType))
        .catch((error: unknown) => send(500, `${String(error)}\n`));
      return;
    }
    send(404, `not found: /healthz, /readyz, /metrics${source.flows ? ', /flows' : ''}\n`);
  });
  const socketPath = host.startsWith('/') ? host : undefined;
  // A socket file an earlier agent left behind (killed) would refuse the listen.
  if (socketPath) rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    // Where the agent cannot listen is a fact about the node, said in one line (no stack).
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = socketPath ?? `${host.includes(':') ? `[${host}]` : host}:${port}`;
      const why =
        error.code === 'EADDRINUSE'
          ? 'the address is in use (another agent on this node, or another service?)'
          : error.code === 'EACCES'
            ? 'permission denied'
            : error.message;
      reject(new NodeFactError(`cannot serve /healthz on --listen ${where}: ${why}`));
    });
    if (socketPath) server.listen(socketPath, () => resolve());
    else server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: socketPath ? `unix:${socketPath}` : `http://${shown}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
