/**
 * A file named on the command line is read as named — its problems reported — even when a named
 * directory holds it too, whichever of the two comes first; a file found only by walking a
 * directory is skipped quietly when it is not Kubernetes manifests.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadCluster } from '../../src/ingest/load.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { palisadeArgv } from '../helpers/executable.ts';

async function directory(t: Parameters<typeof tempDir>[0]): Promise<string> {
  const dir = await tempDir(t, 'palisade-named-');
  await writeFile(join(dir, 'ns.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n');
  await writeFile(join(dir, 'settings.yaml'), 'foo: bar\n'); // YAML, but no kind
  await writeFile(join(dir, 'empty.yaml'), '');
  await writeFile(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: chart\nversion: 1.0.0\n');
  return dir;
}

/** `file: severity CODE` of each diagnostic about `names`, sorted; the namespace read once. */
async function problems(paths: string[], dir: string, names: string[]): Promise<string[]> {
  const { cluster, diagnostics } = await loadCluster(paths);
  assert.deepEqual([...cluster.namespaces.keys()], ['a'], 'ns.yaml is read, and once');
  return diagnostics
    .filter((d) => names.some((n) => d.file === join(dir, n)))
    .map((d) => `${d.file.slice(dir.length + 1)}: ${d.severity} ${d.code}`)
    .sort();
}

describe('a file named both alone and inside a named directory', () => {
  it('is skipped quietly when found only by walking the directory', async (t) => {
    const dir = await directory(t);
    assert.deepEqual(await problems([dir], dir, ['settings.yaml', 'empty.yaml', 'Chart.yaml']), [
      'Chart.yaml: info NOT_KUBERNETES',
      'settings.yaml: info NOT_KUBERNETES',
    ]);
  });

  for (const [name, expected] of [
    ['settings.yaml', ['settings.yaml: error SCHEMA_REQUIRED', 'settings.yaml: error SCHEMA_REQUIRED']],
    ['empty.yaml', ['empty.yaml: warning FILE_EMPTY']],
    ['Chart.yaml', ['Chart.yaml: error SCHEMA_REQUIRED']],
  ] as const) {
    it(`${name}: is read as named, whichever comes first`, async (t) => {
      const dir = await directory(t);
      const file = join(dir, name);
      assert.deepEqual(await problems([dir, file], dir, [name]), expected, 'directory first');
      assert.deepEqual(await problems([file, dir], dir, [name]), expected, 'file first');
    });
  }

  it('is recognised through a link to it', async (t) => {
    const dir = await directory(t);
    const outside = await tempDir(t, 'palisade-link-');
    const link = join(outside, 'link.yaml');
    await symlink(join(dir, 'settings.yaml'), link);
    const { diagnostics } = await loadCluster([dir, link]);
    // Read once, where the directory walk met it, and as named.
    assert.deepEqual(
      diagnostics.filter((d) => d.file === join(dir, 'settings.yaml')).map((d) => d.code),
      ['SCHEMA_REQUIRED', 'SCHEMA_REQUIRED'],
    );
  });
});

describe('directories', () => {
  it('walks a directory once, even through a link to itself', async (t) => {
    const dir = await tempDir(t, 'palisade-loop-');
    await writeFile(join(dir, 'ns.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n');
    await symlink('.', join(dir, 'loop.yaml'));
    await symlink('.', join(dir, 'again'));
    const { cluster, diagnostics } = await loadCluster([dir, join(dir, 'again')]);
    assert.deepEqual(diagnostics, []);
    assert.deepEqual([...cluster.namespaces.keys()], ['a']);
  });
});

describe('paths', () => {
  it('says an empty path is empty, not a file that is missing', async () => {
    const { diagnostics } = await loadCluster(['']);
    assert.deepEqual(
      diagnostics.map((d) => [d.code, d.message]),
      [['FILE_NOT_FOUND', 'an empty path names no file (was a shell variable after -f unset?)']],
    );
  });
});

describe('files that are not regular files', () => {
  it(
    'skips a named pipe found in a directory instead of waiting for a writer',
    { timeout: 10_000 },
    async (t) => {
      const dir = await directory(t);
      const pipe = join(dir, 'pipe.yaml');
      assert.equal(spawnSync('mkfifo', [pipe]).status, 0);
      // Should a reader wait on the pipe anyway, open it for writing and close it: the reader
      // then sees its end and the test process can exit.
      t.after(() => {
        try {
          closeSync(openSync(pipe, constants.O_WRONLY | constants.O_NONBLOCK));
        } catch {
          // ENXIO: nobody is reading it.
        }
      });
      const { diagnostics } = await loadCluster([dir]);
      assert.deepEqual(
        diagnostics.filter((d) => d.file === pipe).map((d) => [d.severity, d.code]),
        [['info', 'NOT_KUBERNETES']],
      );
    },
  );

  it(
    'reads a device or a pipe named on the command line up to --max-file-size, no further',
    { timeout: 10_000 },
    async () => {
      const { diagnostics } = await loadCluster(['/dev/zero'], { maxFileBytes: 64 * 1024 });
      assert.deepEqual(
        diagnostics.map((d) => [d.file, d.code]),
        [['/dev/zero', 'FILE_TOO_LARGE']],
      );
    },
  );
});

describe('standard input', () => {
  it('is read up to --max-file-size, no further: an endless one is refused, not held', () => {
    const endless = openSync('/dev/zero', 'r');
    try {
      const run = spawnSync(
        process.execPath,
        [...palisadeArgv(), 'validate', '-f', '-', '--max-file-size', '1'],
        {
          stdio: [endless, 'pipe', 'pipe'],
          timeout: 30_000,
          encoding: 'utf8',
        },
      );
      assert.equal(run.signal, null, 'it ended on its own');
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stdout, /^<stdin>: error FILE_TOO_LARGE: /m);
      assert.equal(run.stderr, '');
    } finally {
      closeSync(endless);
    }
  });
});
