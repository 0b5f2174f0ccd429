/**
 * serve's live input: an edit made while the files are read for the first time is not lost
 * (the files are watched before that reading).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCluster } from '../../src/ingest/index.ts';
import { LiveInput } from '../../src/serve/live-input.ts';
import { tempDir } from '../fake-apiserver/fixtures.ts';

const namespaces = (...names: string[]): string =>
  names.map((name) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`).join('---\n');

describe('serve: live input', () => {
  it('a file replaced while it is first read is read again right after', async () => {
    const temp = tempDir('live-input');
    const file = join(temp.dir, 'cluster.yaml');
    writeFileSync(file, namespaces('a'));
    let readings = 0;
    const live = new LiveInput({
      read: async () => {
        const loaded = await loadCluster([file]);
        // Inside the first reading, once the file has been read: an editor saves (rename over).
        if (readings++ === 0) {
          writeFileSync(`${file}.tmp`, namespaces('a', 'b'));
          renameSync(`${file}.tmp`, file);
        }
        return loaded;
      },
      watch: [file],
      semantics: 'v1',
      address: '127.0.0.1',
      port: 0,
      debounceMillis: 20,
    });
    const names = (): string[] => [...live.snapshot.input.cluster.namespaces.keys()].sort();
    try {
      await live.start();
      const deadline = Date.now() + 5_000;
      while (names().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(names(), ['a', 'b'], 'the edit made during the first reading was read');
    } finally {
      live.close();
      temp.cleanup();
    }
  });
});
