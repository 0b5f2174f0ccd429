/**
 * The server's socket, bound before anything else of `serve` is loaded. Starting the web
 * framework, the analysis layers and the input's reader takes longer than Node itself; bound
 * first, the address is printed at once and the browser opens its tab meanwhile. A request that
 * arrives before the app is ready waits for it (as the API waits for the first reading).
 * Only node:http here: this module (a folder of its own, so the CLI may import it without the
 * rest of the layer) is what `palisade serve` loads before it listens.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type RequestHandler = (request: IncomingMessage, response: ServerResponse) => unknown;

/** A bound socket whose requests go to a handler set later. */
export interface Listener {
  /** The page's address, e.g. http://127.0.0.1:7780/. */
  readonly url: string;
  /** Gives the requests, those that waited first, to `handler`. */
  handle(handler: RequestHandler): void;
  /** Ends every connection (event streams included) and stops listening. */
  close(): Promise<void>;
}

/** Binds `address:port` (0: any free port); rejects with the socket's error (EADDRINUSE…). */
export async function listen(address: string, port: number): Promise<Listener> {
  let handler: RequestHandler | undefined;
  const waiting: [IncomingMessage, ServerResponse][] = [];
  const server: Server = createServer((request, response) => {
    if (handler) void handler(request, response);
    else waiting.push([request, response]);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const host = address.includes(':') ? `[${address}]` : address;
  const shown = host === '0.0.0.0' || host === '[::]' ? 'localhost' : host;
  return {
    url: `http://${shown}:${bound}/`,
    handle(next) {
      handler = next;
      for (const [request, response] of waiting.splice(0)) void next(request, response);
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Event streams stay open until their clients go: end them with the server.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
