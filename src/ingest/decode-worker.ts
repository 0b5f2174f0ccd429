/**
 * The worker thread of decode-offload.ts: reads one file's documents and decodes them as the main
 * thread would, and answers with the pods in their compact form — or with `fallback` when the
 * file holds anything else (another kind, a diagnostic, an object our decoder fails on), which
 * the main thread then decodes itself, so every diagnostic is made where it always was.
 */
import { parentPort } from 'node:worker_threads';
import { CompactPodWriter } from './compact-pods.ts';
import { decodeObject } from './decode-object.ts';
import { readDocuments } from './parse-documents.ts';
import type { OffloadReply, OffloadRequest } from './decode-offload.ts';

parentPort!.on('message', (request: OffloadRequest) => {
  parentPort!.postMessage(decodeFile(request));
});

/** Thrown out of the reader to stop at the first object the compact form cannot carry. */
const GIVE_BACK = new Error('not a file of clean pods');

function decodeFile({ id, file, options }: OffloadRequest): OffloadReply {
  try {
    let writer = new CompactPodWriter();
    let clean = true;
    const diagnostics = readDocuments(file, {
      object: (raw) => {
        const outcome = decodeObject(raw, options);
        if (outcome.diagnostics.length > 0 || !outcome.object || outcome.identity === undefined)
          clean = false;
        else clean = writer.add(outcome.identity, outcome.object);
        // The main thread reads this file itself: stop now rather than parse the rest for nothing.
        if (!clean) throw GIVE_BACK;
      },
      // The file is read again another way (see readDocuments): what was written of it goes.
      discard: () => {
        writer = new CompactPodWriter();
        clean = true;
      },
    });
    if (!clean || diagnostics.length > 0) return { id, fallback: true };
    const pods = writer.finish();
    return { id, pods };
  } catch {
    // An object the compact form cannot carry (GIVE_BACK), or a fault of ours: the main thread
    // decodes the file and reports whatever there is to report where it always does.
    return { id, fallback: true };
  }
}
