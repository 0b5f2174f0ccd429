/**
 * A fault of ours while parsing a file or decoding an object (a throw where the parser and the
 * decoders report problems as diagnostics) is said as such — PROCESSING_FAILED, the file named —
 * not as an unreadable file, and the other files and objects are still read. Reading errors stay
 * FILE_UNREADABLE.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadFromObjects, loadFromTexts } from '../../src/ingest/load.ts';
import { visitInputs } from '../../src/ingest/read-inputs.ts';
import type { InputFile } from '../../src/ingest/types.ts';

const NAMESPACE = '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}';

/** A file whose text cannot be had: parsing it throws, as a fault in the parser would. */
function faultyFile(name: string): InputFile {
  return {
    name,
    get text(): string {
      throw new Error('injected parser fault');
    },
  };
}

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), `palisade-processing-failed-${process.pid}-`));
  writeFileSync(join(dir, 'a.yaml'), NAMESPACE);
  writeFileSync(join(dir, 'b.yaml'), NAMESPACE.replace('shop', 'web'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('a fault while parsing or decoding', () => {
  it('names the file as PROCESSING_FAILED, not FILE_UNREADABLE, and reads the other files', () => {
    const loaded = loadFromTexts([faultyFile('broken.yaml'), { name: 'good.yaml', text: NAMESPACE }]);
    const codes = loaded.diagnostics.map((d) => `${d.code} ${d.file}`);
    assert.deepEqual(codes, ['PROCESSING_FAILED broken.yaml']);
    const [failed] = loaded.diagnostics;
    assert.equal(failed?.severity, 'error');
    assert.match(failed?.message ?? '', /cannot parse broken\.yaml: injected parser fault/);
    assert.deepEqual([...loaded.cluster.namespaces.keys()], ['shop']);
  });

  it('skips only the object a decoder fails on', () => {
    const faulty = {
      apiVersion: 'v1',
      kind: 'Namespace',
      get metadata(): never {
        throw new Error('injected decoder fault');
      },
    };
    const good = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'web' } };
    const loaded = loadFromObjects([faulty, good], 'objects.json');
    assert.deepEqual(
      loaded.diagnostics.map((d) => `${d.code} ${d.file}`),
      ['PROCESSING_FAILED objects.json'],
    );
    assert.match(loaded.diagnostics[0]?.message ?? '', /cannot decode this object: injected decoder fault/);
    assert.deepEqual([...loaded.cluster.namespaces.keys()], ['web']);
  });

  it('is not reported by the reader as an unreadable file', async () => {
    // The reader reports only what reading does; what its visitor throws is the visitor's.
    const visited: string[] = [];
    await assert.rejects(
      visitInputs([dir], {}, (file) => {
        visited.push(file.name);
        throw new Error('visitor fault');
      }),
      /visitor fault/,
    );
    assert.deepEqual(visited, [join(dir, 'a.yaml')]);
  });

  it('keeps FILE_UNREADABLE for a file whose read fails', async () => {
    // stat succeeds (a regular file of size 0), reading it fails with EIO: the read's own error.
    const { diagnostics } = await visitInputs(['/proc/self/mem'], {}, () => {
      throw new Error('never visited');
    });
    assert.deepEqual(
      diagnostics.map((d) => d.code),
      ['FILE_UNREADABLE'],
    );
  });
});
