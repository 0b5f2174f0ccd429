/**
 * `check --port`, `matrix --port` and `assert`'s `port:` read ports alike: the same forms work
 * in all three, and a bad one gets the same message (naming the field as each spells it), exit 2.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const INPUT = ['-f', 'examples/shop'];
const CHECK = ['check', ...INPUT, '--from', 'shop/api', '--to', 'kube-system/coredns'];

async function assertWith(
  dir: string,
  entry: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(dir, 'expect.yaml');
  await writeFile(file, `- {from: shop/api, to: kube-system/coredns, ${entry}, allowed: true}\n`);
  return cli(['assert', ...INPUT, '--expect', file]);
}

describe('port queries', () => {
  it('takes 53/UDP, 53/udp, a number and a name in check, matrix and assert', async (t) => {
    const dir = await tempDir(t, 'palisade-ports-');
    for (const port of ['53/UDP', '53/udp', 'dns/UDP']) {
      const check = await cli([...CHECK, '--port', port, '-o', 'json']);
      assert.equal(check.code, 0, check.stderr);
      assert.equal((JSON.parse(check.stdout) as { protocol: string }).protocol, 'UDP');
      const matrix = await cli(['matrix', ...INPUT, '--port', port, '-o', 'json']);
      assert.equal(matrix.code, 0, matrix.stderr);
      const expectation = await assertWith(dir, `port: ${port}`);
      assert.equal(expectation.code, 0, expectation.stderr);
    }
    assert.equal((await cli([...CHECK, '--port', 'dns', '--protocol', 'udp'])).code, 0);
    assert.equal((await assertWith(dir, 'port: 53, protocol: udp')).code, 0);
  });

  it('says the same about a bad port in all three', async (t) => {
    const dir = await tempDir(t, 'palisade-ports-');
    const cases: [string, string][] = [
      ['70000', '--port 70000 is not between 1 and 65535'],
      ['HTTP', '--port "HTTP" is neither a port number nor a port name (port names are lower case: "http")'],
      ['80/ICMP', '--port 80/ICMP: "ICMP" is not TCP, UDP or SCTP'],
    ];
    for (const [port, message] of cases) {
      const check = await cli([...CHECK, '--port', port]);
      const matrix = await cli(['matrix', ...INPUT, '--port', port]);
      const expectation = await assertWith(dir, `port: ${port}`);
      for (const [name, result] of [
        ['check', check],
        ['matrix', matrix],
        ['assert', expectation],
      ] as const) {
        assert.equal(result.code, 2, `${name} ${port}`);
        const expected = name === 'assert' ? message.replace('--port', 'port') : message;
        assert.ok(result.stderr.includes(expected), `${name} ${port}: ${result.stderr}`);
      }
    }
  });

  it('refuses a protocol that contradicts the port, where it is given for that port', async (t) => {
    const check = await cli([...CHECK, '--port', '53/UDP', '--protocol', 'TCP']);
    assert.match(check.stderr, /--port 53\/UDP says UDP but --protocol says TCP/);
    // The two matrices below share their ports and their first --protocol.
    const matrixOf53And80 = ['matrix', ...INPUT, '--port', '53/UDP', '--port', '80', '--protocol', 'TCP'];
    // One --protocol per --port belongs to that port…
    const matrix = await cli([...matrixOf53And80, '--protocol', 'TCP']);
    assert.equal(matrix.code, 2);
    assert.match(matrix.stderr, /--port 53\/UDP says UDP but --protocol says TCP/);
    // …one for several ports is their default, which a port naming its own overrides.
    const columns = await cli([...matrixOf53And80, '-o', 'csv']);
    assert.equal(columns.code, 0, columns.stderr);
    assert.match(columns.stdout, /,53,UDP,/);
    assert.match(columns.stdout, /,80,TCP,/);
    // In a file, the contradicting protocol field is pointed at.
    const file = await assertWith(await tempDir(t, 'palisade-ports-'), 'port: 53/UDP, protocol: TCP');
    assert.equal(file.code, 2);
    assert.match(file.stderr, /expect\.yaml:1:69: port 53\/UDP says UDP but protocol says TCP/);
  });

  it('check and assert say alike that the destination has no such port, and on which protocol it has one', async (t) => {
    const check = await cli([...CHECK, '--port', 'dns']);
    assert.equal(check.code, 2);
    const said = 'kube-system/coredns has no TCP container port named "dns" (it has one on UDP: ';
    assert.equal(check.stderr.trim(), `palisade: --port: ${said}--port dns/UDP)`);
    const file = await assertWith(await tempDir(t, 'palisade-ports-'), 'port: dns');
    assert.equal(file.code, 3);
    assert.ok(file.stdout.includes(`${said}port: dns/UDP)`), file.stdout);
  });

  it('the protocol hint, followed, is accepted — also when a protocol was given apart', async (t) => {
    const dir = await tempDir(t, 'palisade-ports-');
    const hinted = (text: string): string => /one on UDP: (.*)\)$/m.exec(text)?.[1] ?? '';
    // check: `--port dns --protocol TCP` → `--port dns --protocol UDP` (dns/UDP would contradict TCP).
    for (const given of [
      ['--port', 'dns'],
      ['--port', 'dns', '--protocol', 'TCP'],
    ]) {
      const refused = await cli([...CHECK, ...given]);
      assert.equal(refused.code, 2);
      const hint = hinted(refused.stderr);
      const followed = await cli([...CHECK, ...hint.split(' ')]);
      assert.equal(followed.code, 0, `${hint}: ${followed.stderr}`);
    }
    // matrix: one --protocol per --port belongs to it; one for many ports is a default.
    for (const given of [
      ['--port', 'dns', '--protocol', 'TCP'],
      ['--port', 'dns', '--port', '80', '--protocol', 'TCP'],
    ]) {
      const refused = await cli(['matrix', ...INPUT, ...given]);
      assert.equal(refused.code, 2);
      const hint = hinted(refused.stderr).split(' ');
      const rest = given
        .slice(2)
        .filter((word, i, all) => word !== '--protocol' && all[i - 1] !== '--protocol');
      const protocols = hint.includes('--protocol') ? [] : given.slice(given.indexOf('--protocol'));
      const followed = await cli(['matrix', ...INPUT, ...hint, ...rest, ...protocols, '-o', 'json']);
      assert.equal(followed.code, 0, `${hint.join(' ')}: ${followed.stderr}`);
    }
    // assert: `port: dns, protocol: TCP` → `port: dns, protocol: UDP`.
    for (const given of ['port: dns', 'port: dns, protocol: TCP']) {
      const refused = await assertWith(dir, given);
      assert.equal(refused.code, 3);
      const hint = hinted(refused.stdout);
      const followed = await assertWith(dir, hint);
      assert.equal(followed.code, 0, `${hint}: ${followed.stdout}${followed.stderr}`);
    }
  });

  it('matrix points at the protocol a port name has, as check does', async () => {
    const matrix = await cli(['matrix', ...INPUT, '--port', 'dns']);
    assert.equal(matrix.code, 2);
    assert.match(
      matrix.stderr,
      /no pod in the matrix has a TCP container port named "dns" \(some have one on UDP: --port dns\/UDP\)/,
    );
  });
});
