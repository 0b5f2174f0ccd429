/**
 * `palisade compile` and `palisade generate` as users run them, with golden outputs (compile
 * output is deterministic). Regenerate the golden files with UPDATE_GOLDEN=1 after an intended
 * change, and review the diff.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const GOLDEN = new URL('../golden/', import.meta.url);
const SHOP = ['-f', 'examples/shop', '-f', 'examples/shop-running'];

async function golden(name: string, actual: string): Promise<void> {
  const file = new URL(name, GOLDEN);
  if (process.env.UPDATE_GOLDEN === '1') await writeFile(file, actual);
  assert.equal(
    actual,
    await readFile(file, 'utf8'),
    `golden ${name} differs (UPDATE_GOLDEN=1 regenerates it)`,
  );
}

/** Timing varies run to run; everything else must not. */
const withoutTime = (text: string): string =>
  text.replace(/, [0-9.]+ ms$/m, ', <time> ms').replace(/"millis": [0-9.]+/, '"millis": 0');

describe('palisade compile', () => {
  it('compiles the running shop for one node (golden)', async () => {
    const r = await cli(['compile', ...SHOP, '--node', 'node-2', '--stats']);
    assert.equal(r.code, 0, r.stderr);
    await golden('compile-shop-node-2.txt', withoutTime(r.stdout));
  });
  it('compiles the Kubernetes documentation example (golden), with ipBlock except split into prefixes', async () => {
    const r = await cli(['compile', '-f', 'test/fixtures/docs-example.yaml', '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    await golden('compile-docs-example.json', withoutTime(r.stdout));
    const json = JSON.parse(r.stdout) as { tables: { rules: { src: string }[] }[] };
    const sources = json.tables.flatMap((t) => t.rules.map((rule) => rule.src));
    for (const prefix of ['172.17.0.0/24', '172.17.2.0/23', '172.17.4.0/22', '172.17.128.0/17'])
      assert.ok(sources.includes(prefix), prefix);
    assert.ok(!sources.includes('172.17.1.0/24'));
  });
  it('compiles the proposal examples after convert (golden)', async () => {
    const converted = await cli(['convert', '-f', 'test/fixtures/legacy.yaml', '--to', 'v1']);
    const r = await cli(['compile', '-f', '-'], { stdin: converted.stdout });
    assert.equal(r.code, 0, r.stderr);
    await golden('compile-proposal-examples.txt', r.stdout);
  });
  it('is deterministic', async () => {
    const a = await cli(['compile', ...SHOP, '-o', 'json']);
    const b = await cli(['compile', ...SHOP, '-o', 'json']);
    assert.equal(withoutTime(a.stdout), withoutTime(b.stdout));
  });
  it('refuses proposal semantics and unknown nodes with a usage error', async () => {
    assert.equal((await cli(['compile', ...SHOP, '--semantics', 'v1beta1-proposal'])).code, 2);
    const r = await cli(['compile', ...SHOP, '--node', 'node-9']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no pod in the input runs on node "node-9"/);
  });
});

describe('palisade generate', () => {
  it('writes a deterministic shape that compiles', async (t) => {
    const dir = await tempDir(t, 'palisade-gen-');
    const r = await cli(['generate', '--shape', 'a', '--scale', '0.0004', '--seed', '7', '-o', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /10 namespaces, 40 pods, 30 policies/);
    const again = await tempDir(t, 'palisade-gen-');
    await cli(['generate', '--shape', 'a', '--scale', '0.0004', '--seed', '7', '-o', again]);
    assert.equal(
      await readFile(join(dir, 'policies.yaml'), 'utf8'),
      await readFile(join(again, 'policies.yaml'), 'utf8'),
    );
    // kubectl reads a file starting with `{` as one JSON stream, which stops at the first `---`:
    // the files start with `---`, so it reads them as YAML documents.
    for (const file of ['namespaces.yaml', 'pods.yaml', 'policies.yaml'])
      assert.match(await readFile(join(dir, file), 'utf8'), /^---\n\{/, file);
    const compiled = await cli(['compile', '-f', dir, '--stats', '-o', 'json']);
    assert.equal(compiled.code, 0, compiled.stderr);
    const stats = (JSON.parse(compiled.stdout) as { stats: { pods: number; tables: number } }).stats;
    assert.equal(stats.pods, 40);
    assert.ok(stats.tables > 0);
  });
  it("writes Calico's and Cilium's policies beside shape a's, read without a warning", async (t) => {
    const dir = await tempDir(t, 'palisade-gen-');
    const r = await cli([
      'generate',
      '--shape',
      'a',
      '--scale',
      '0.0004',
      '--calico',
      '12',
      '--cilium',
      '9',
      '-o',
      dir,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /30 policies, 12 Calico policies, 9 Cilium policies\n$/);
    // One engine at a time: both in one input is a warning (a cluster enforces one of them).
    for (const engine of ['calico', 'cilium']) {
      const files = ['namespaces', 'pods', `${engine}-policies`].flatMap((f) => [
        '-f',
        join(dir, `${f}.yaml`),
      ]);
      const validated = await cli(['validate', ...files]);
      assert.equal(validated.code, 0, validated.stdout + validated.stderr);
      assert.match(validated.stdout + validated.stderr, /^0 errors, 0 warnings/m);
    }
    const calico = await readFile(join(dir, 'calico-policies.yaml'), 'utf8');
    assert.equal(calico.match(/"kind":"NetworkPolicy"/g)?.length, 12);
    assert.match(calico, /projectcalico\.org\/v3/);
    const usage = await cli(['generate', '--shape', 'c', '--cilium', '3', '-o', dir]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--cilium writes policies over shape a: give --shape a/);
  });
  it('says, without a stack trace, when it cannot write', async () => {
    const r = await cli(['generate', '--shape', 'c', '--scale', '0.001', '-o', '/etc/passwd/x']);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^palisade: cannot write to \/etc\/passwd\/x: a part of the path is a file, not a directory \(ENOTDIR\)\n$/,
    );
  });
  it('validates its options', async () => {
    assert.equal((await cli(['generate', '--shape', 'z', '-o', '/tmp/x'])).code, 2);
    assert.equal((await cli(['generate', '--shape', 'a', '--scale', '-1', '-o', '/tmp/x'])).code, 2);
  });
});
