/**
 * Issue 19 §1.3, `check` on dual-stack pods: an address given as an IP fixes the family (a
 * packet has one); a pair named by name is judged per family and a pair allowed over IPv4 only
 * is not called "denied"; every explanation block says its family; `--expect` needs every family.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';

const INPUT = ['-f', 'test/fixtures/dual-stack.yaml'];
const check = (from: string, to: string, ...extra: string[]) =>
  cli(['check', ...INPUT, '--from', from, '--to', to, '--port', '80', ...extra]);

describe('check on dual-stack pods', () => {
  it('an IPv4 address judges the IPv4 connection only, and says so', async () => {
    const r = await check('10.1.0.1', '10.1.0.2', '--expect', 'allow');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'ds/a → ds/b TCP/80: ALLOWED over IPv4');
    assert.doesNotMatch(r.stdout, /IPv6/);
    const one = await check('10.1.0.1', 'ds/b', '-o', 'json');
    const json = JSON.parse(one.stdout) as {
      family: number;
      verdict: { allowed: boolean; otherFamilies: unknown[] };
    };
    assert.equal(json.family, 4);
    assert.equal(json.verdict.allowed, true);
    assert.deepEqual(json.verdict.otherFamilies, []);
  });

  it('an IPv6 address judges the IPv6 connection only', async () => {
    const r = await check('fd00::1', 'fd00::2', '--expect', 'deny');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'ds/a → ds/b TCP/80: DENIED over IPv6');
  });

  it('addresses of two families are a usage error, not an answer', async () => {
    const r = await check('10.1.0.1', 'fd00::2');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /one address family/);
  });

  it('by name: each family has its verdict and its labelled explanation', async () => {
    const r = await check('ds/a', 'ds/b');
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'ds/a → ds/b TCP/80: ALLOWED over IPv4, DENIED over IPv6');
    const v4 = lines.indexOf('  over IPv4: allowed');
    const v6 = lines.indexOf('  over IPv6: denied');
    assert.ok(v4 > 0 && v6 > v4, r.stdout);
    assert.match(lines.slice(v4, v6).join('\n'), /ingress allow {2}allowed by ds\/b-from-ipv4 ingress\[0\]/);
    assert.match(
      lines.slice(v6).join('\n'),
      /ingress deny {3}ds\/b is isolated for ingress by ds\/b-from-ipv4/,
    );
    // Every side line sits under a family label.
    for (const line of lines.filter((l) => /^\s+(egress|ingress) /.test(l))) assert.match(line, /^ {4}/);
  });

  it('--expect needs every family, and says which one failed', async () => {
    for (const expect of ['allow', 'deny']) {
      const r = await check('ds/a', 'ds/b', '--expect', expect);
      assert.equal(r.code, 3, expect);
      assert.match(r.stderr, /the connection is allowed over IPv4 and denied over IPv6/);
    }
  });

  it('families that agree share one block, labelled with both', async () => {
    const r = await check('ds/a', 'ds/c', '--expect', 'allow');
    assert.equal(r.code, 0);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'ds/a → ds/c TCP/80: ALLOWED');
    assert.equal(lines[1], '  over IPv4 and IPv6: allowed');
    assert.equal(lines.filter((l) => l.startsWith('  over ')).length, 1);
  });

  it('-o json keeps allowed false when a family is denied, with every family verdict', async () => {
    const r = await check('ds/a', 'ds/b', '-o', 'json');
    const json = JSON.parse(r.stdout) as {
      verdict: { allowed: boolean; family: number; otherFamilies: { family: number; allowed: boolean }[] };
    };
    assert.equal(json.verdict.allowed, false);
    assert.equal(json.verdict.family, 6);
    assert.deepEqual(
      json.verdict.otherFamilies.map((f) => [f.family, f.allowed]),
      [[4, true]],
    );
  });
});
