/**
 * The reflector's file source with watching: a change made while the files are being loaded is
 * not lost (the watch starts before the first load).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { watchFiles } from '../../src/reflector/file-source.ts';
import type { SourceSink } from '../../src/reflector/types.ts';
import type { RawApiObject } from '../../src/kube/types.ts';
import { tempDir } from '../fake-apiserver/fixtures.ts';

const namespaces = (...names: string[]): string =>
  names.map((name) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`).join('---\n');

/** A sink that keeps the namespaces of the last complete list. */
function namespaceSink(): { sink: SourceSink; names: () => string[] } {
  let listing: string[] = [];
  let last: string[] = [];
  const sink: SourceSink = {
    listStart: (stream) => {
      if (stream.kind === 'Namespace') listing = [];
    },
    listObjects: (stream, objects: readonly RawApiObject[]) => {
      if (stream.kind !== 'Namespace') return;
      for (const o of objects) listing.push(String((o.metadata as { name: string }).name));
    },
    listDone: (stream) => {
      if (stream.kind === 'Namespace') last = [...listing].sort();
    },
    listAbort: () => undefined,
    upsert: () => undefined,
    remove: () => undefined,
    progress: () => undefined,
  };
  return { sink, names: () => last };
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

describe('file source', () => {
  it('a file replaced while the first load runs is loaded again afterwards', async () => {
    const temp = tempDir('file-source');
    const file = join(temp.dir, 'cluster.yaml');
    writeFileSync(file, namespaces('a'));
    const { sink, names } = namespaceSink();
    let loads = 0;
    const stop = await watchFiles([file], sink, {
      debounceMs: 20,
      onDiagnostics: () => undefined,
      // Inside the first load (its files already read): an editor saves by renaming over the file.
      onLoaded: () => {
        if (loads++ > 0) return;
        writeFileSync(`${file}.tmp`, namespaces('a', 'b'));
        renameSync(`${file}.tmp`, file);
      },
    });
    try {
      assert.deepEqual(names(), ['a'], 'the first load read the file as it was');
      assert.ok(
        await until(() => names().length === 2, 5_000),
        `the change made during the first load was never loaded (namespaces: ${names().join(', ')})`,
      );
      assert.deepEqual(names(), ['a', 'b']);
    } finally {
      stop();
      temp.cleanup();
    }
  });

  it('a file that does not exist yet is reported, then loaded once it appears', async () => {
    const temp = tempDir('file-source-missing');
    const file = join(temp.dir, 'cluster.yaml');
    const { sink, names } = namespaceSink();
    const reported: string[] = [];
    const stop = await watchFiles([file], sink, {
      debounceMs: 20,
      onDiagnostics: (diagnostics) => reported.push(...diagnostics.map((d) => `${d.code} ${d.file}`)),
    });
    try {
      assert.ok(
        reported.some((line) => line.endsWith(file)),
        `the missing file is named: ${reported.join('; ')}`,
      );
      writeFileSync(file, namespaces('c'));
      assert.ok(await until(() => names().join() === 'c', 5_000), 'the file was loaded when it appeared');
    } finally {
      stop();
      temp.cleanup();
    }
  });
});
