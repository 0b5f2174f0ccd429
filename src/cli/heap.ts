/**
 * Heap growth for the phases that build what lives to the end of a command (the model read from
 * the input, the store, the compiled tables, the indexes of an analysis).
 */
import { setFlagsFromString } from 'node:v8';

/**
 * While the input is loaded and compiled, the heap grows fivefold between full collections
 * instead of by V8's own factor: nearly everything those phases allocate stays alive to the end
 * (the model, the store, the tables), so a full collection there marks hundreds of megabytes to
 * free little. Shape (a) x1 from files: 1.3 s less CPU (the collector's threads 4.5 -> 3.3 s), no
 * full collection after the store's (the default made one of 750 MB, 0.85 s of pause), peak RSS
 * 0.9 -> 1.07 GB. Read by V8 at each full collection, so it can be set here; the report, made
 * after (or a failure), goes back to V8's own factor. `diff` (two inputs of 100,000 pods) and the
 * large analyses use it for the same reason.
 */
export async function withHeapGrowingFreely<T>(work: () => Promise<T>): Promise<T> {
  setFlagsFromString('--heap-growing-percent=400');
  try {
    return await work();
  } finally {
    setFlagsFromString('--heap-growing-percent=0');
  }
}
