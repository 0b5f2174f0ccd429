/**
 * Starting and stopping the web server: the input read and watched, the bundle loaded, hono's
 * app on Node's HTTP server bound to the address asked for (loopback by default).
 */
import { serve as listen, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import { loadWebAssets } from './assets.ts';
import { LiveInput } from './live-input.ts';
import { allowedHostNames } from './security.ts';
import type { ServeOptions } from './types.ts';

export interface RunningServer {
  /** The page's address, e.g. http://127.0.0.1:7780/. */
  readonly url: string;
  readonly live: LiveInput;
  close(): Promise<void>;
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const live = new LiveInput(options);
  const [assets] = await Promise.all([loadWebAssets(), live.start()]);
  const app = createApp(live, assets, allowedHostNames(options.address, options.allowedHosts));
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = listen({ fetch: app.fetch, hostname: options.address, port: options.port }, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.address.includes(':') ? `[${options.address}]` : options.address;
  const shown = host === '0.0.0.0' || host === '[::]' ? 'localhost' : host;
  return {
    url: `http://${shown}:${port}/`,
    live,
    close: () =>
      new Promise<void>((resolve) => {
        live.close();
        // Event streams stay open until their clients go: end them with the server.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
