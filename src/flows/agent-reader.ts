/**
 * Reading an agent's `/flows` (NDJSON, `agent/flow-feed.ts`): one request, its records handed
 * over one by one as they arrive. Shared by `palisade flows` (print them) and `palisade serve`
 * (keep them, live), so both speak to agents alike: `http://host:port` or `unix:/path`.
 */
import { request, type IncomingMessage } from 'node:http';
import { flowFilterParameters } from './filter.ts';
import type { FlowFilter, FlowRecord } from './types.ts';

/** An agent's endpoint: `http://host:port` or `unix:/path`, with the name messages give it. */
export interface FlowAgent {
  readonly label: string;
  readonly url: string;
}

/** Why `url` is not an agent's endpoint, or undefined when it is one. */
export function agentUrlProblem(url: string): string | undefined {
  return /^(https?:\/\/[^/]+\/?$|unix:\/)/.test(url)
    ? undefined
    : `${url}: expected http://host:port or unix:/path`;
}

export interface ReadAgentOptions {
  /** Keep the stream open: every record as the agent updates it. */
  readonly follow: boolean;
  /** Ends the reading (resolving, not rejecting). */
  readonly signal?: AbortSignal;
  /** Called when the agent has answered (before its first record, if any). */
  readonly onConnected?: () => void;
}

/**
 * Streams one agent's `/flows` answer, record by record, until it ends (or, following, until
 * `signal` aborts). Rejects with a one-line reason when the agent cannot be reached or refuses.
 */
export function readAgentFlows(
  agent: FlowAgent,
  filter: FlowFilter,
  options: ReadAgentOptions,
  onRecord: (record: FlowRecord) => void,
): Promise<void> {
  const params = flowFilterParameters(filter);
  if (options.follow) params.set('follow', '1');
  const path = `/flows${params.size > 0 ? `?${params.toString()}` : ''}`;
  const target = agent.url.startsWith('unix:')
    ? { socketPath: agent.url.slice('unix:'.length), path }
    : (() => {
        const url = new URL(agent.url);
        return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), path };
      })();
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      resolve();
      return;
    }
    let stopped = false;
    const req = request(
      { ...target, method: 'GET', timeout: options.follow ? 0 : 10_000 },
      (response: IncomingMessage) => {
        if (response.statusCode !== 200) {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () =>
            reject(
              new Error(
                response.statusCode === 404
                  ? 'the agent reports no flows (start it with --flow-log)'
                  : `HTTP ${response.statusCode}: ${body.trim()}`,
              ),
            ),
          );
          return;
        }
        options.onConnected?.();
        let rest = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          const lines = (rest + chunk).split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines) {
            if (line.trim() === '') continue;
            let record: FlowRecord;
            try {
              record = JSON.parse(line) as FlowRecord;
            } catch {
              req.destroy(new Error(`the agent sent a line that is not JSON: ${line.slice(0, 80)}`));
              return;
            }
            onRecord(record);
          }
        });
        response.on('end', () => resolve());
        response.on('error', (error) => (stopped ? resolve() : reject(error)));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (error: NodeJS.ErrnoException) =>
      stopped ? resolve() : reject(new Error(reachError(error))),
    );
    options.signal?.addEventListener(
      'abort',
      () => {
        stopped = true;
        req.destroy();
        resolve();
      },
      { once: true },
    );
    req.end();
  });
}

function reachError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED')
    return `cannot reach the agent (${error.code})`;
  return error.message;
}
