/**
 * A worker thread of the reflector's encode pool: parses list pages and encodes their items
 * (decode and validate as a file's object, reduce, serialize, digest) off the main thread, which
 * keeps only the writer's bookkeeping and the HTTP and etcd traffic. See encode-pool.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { KubeApiError } from '../kube/index.ts';
import type { ServedResource } from '../kube/types.ts';
import { KeyLayout } from '../reflected/index.ts';
import { encodePage } from './page-encoder.ts';

const { root, served } = workerData as { root: string; served: ServedResource[] };
const layout = new KeyLayout(root);

parentPort!.on('message', ({ id, text, path }: { id: number; text: string; path: string }) => {
  try {
    parentPort!.postMessage({ id, page: encodePage(text, path, layout, served) });
  } catch (error) {
    const failure =
      error instanceof KubeApiError
        ? { kind: error.kind, message: error.message, status: error.status }
        : { kind: 'server', message: error instanceof Error ? error.message : String(error) };
    parentPort!.postMessage({ id, error: failure });
  }
});
