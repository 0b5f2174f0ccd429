/**
 * Starting and stopping the web server: the input read and watched, the bundle loaded, hono's
 * app on Node's HTTP server bound to the address asked for (loopback by default).
 */
import { getRequestListener } from '@hono/node-server';
import { createApp } from './app.ts';
import { loadWebAssets } from './assets.ts';
import { LiveFlows } from './live-flows.ts';
import { LiveInput } from './live-input.ts';
import { listen, type Listener } from './socket/index.ts';
import type { Snapshot } from './snapshot.ts';
import { warmFirstView } from './summary.ts';
import { allowedHostNames } from './security.ts';
import type { ServeOptions } from './types.ts';

export interface RunningServer {
  /** The page's address, e.g. http://127.0.0.1:7780/. */
  readonly url: string;
  readonly live: LiveInput;
  /** The observed flows, when serve was given a source of them. */
  readonly flows?: LiveFlows;
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
  const listener = await listen(options.address, options.port);
  onListening?.(listener.url);
  return serveOn(listener, options);
}

/**
 * Serves on a socket already bound (`palisade serve` binds it before loading this layer): the
 * app answers the requests that waited, then the input is read. As startServer otherwise.
 */
export async function serveOn(listener: Listener, options: ServeOptions): Promise<RunningServer> {
  const live = new LiveInput(options);
  const flows = options.flows ? new LiveFlows(options.flows) : undefined;
  const close = async (): Promise<void> => {
    live.close();
    flows?.close();
    await listener.close();
  };
  try {
    const assets = await loadWebAssets();
    const app = createApp(live, assets, allowedHostNames(options.address, options.allowedHosts), flows);
    listener.handle(getRequestListener(app.fetch, { hostname: options.address }));
    await Promise.all([live.start(), flows?.start()]);
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
  return { url: listener.url, live, ...(flows ? { flows } : {}), close };
}
