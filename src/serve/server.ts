/**
 * Starting and stopping the web server: the input read and watched, the bundle loaded, hono's
 * app on Node's HTTP server bound to the address asked for (loopback by default).
 */
import { serve as listen, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import { loadWebAssets } from './assets.ts';
import { LiveInput } from './live-input.ts';
import type { Snapshot } from './snapshot.ts';
import { warmFirstView } from './summary.ts';
import { allowedHostNames } from './security.ts';
import type { ServeOptions } from './types.ts';

export interface RunningServer {
  /** The page's address, e.g. http://127.0.0.1:7780/. */
  readonly url: string;
  readonly live: LiveInput;
  close(): Promise<void>;
}

/**
 * Listens, then reads the input: `onListening` hears the address as soon as requests can be
 * made, so a browser opens the page and loads its bundle while the input is first read (the API
 * answers once it has been). Resolves when the input has been read; if that fails, the server is
 * closed and the promise rejects.
 */
export async function startServer(
  options: ServeOptions,
  onListening?: (url: string) => void,
): Promise<RunningServer> {
  const live = new LiveInput(options);
  const assets = await loadWebAssets();
  const app = createApp(live, assets, allowedHostNames(options.address, options.allowedHosts));
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = listen({ fetch: app.fetch, hostname: options.address, port: options.port }, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.address.includes(':') ? `[${options.address}]` : options.address;
  const shown = host === '0.0.0.0' || host === '[::]' ? 'localhost' : host;
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      live.close();
      // Event streams stay open until their clients go: end them with the server.
      (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      server.close(() => resolve());
    });
  const url = `http://${shown}:${port}/`;
  onListening?.(url);
  try {
    await live.start();
  } catch (error) {
    await close();
    throw error;
  }
  // The page's first view, computed while the browser is still loading the page (each new
  // snapshot too: the page reloads its view when told of one).
  const warm = (snapshot: Snapshot): void => {
    setImmediate(() => {
      try {
        warmFirstView(snapshot);
      } catch {
        // The page's own request reports what fails.
      }
    });
  };
  warm(live.snapshot);
  live.onChange(warm);
  return { url, live, close };
}
