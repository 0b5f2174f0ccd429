/**
 * `palisade lint` end to end: formats, exit codes, code selection, and SARIF that is valid
 * against the SARIF 2.1.0 JSON schema (as code hosts require to annotate pull requests).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type AjvModule from 'ajv-draft-04';
import { cli } from '../helpers/cli.ts';

const require = createRequire(import.meta.url);
// A CommonJS package: its class is the `default` property of what require returns.
const { default: Ajv } = require('ajv-draft-04') as typeof AjvModule;
const schema = JSON.parse(
  readFileSync(require.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8'),
) as object;
// The published schema has one pattern that is not valid in unicode mode; formats are checked loosely.
const validateSarif = new Ajv({
  allErrors: true,
  strict: false,
  unicodeRegExp: false,
  formats: { uri: true, 'uri-reference': true, 'date-time': true },
}).compile(schema);

interface SarifLog {
  runs: {
    tool: { driver: { rules: { id: string }[] } };
    results: {
      ruleId: string;
      ruleIndex: number;
      level: string;
      locations: {
        physicalLocation?: { artifactLocation: { uri: string }; region?: { startLine: number } };
      }[];
    }[];
  }[];
}

describe('palisade lint', () => {
  it('prints located findings with fixes and exits 1 on an error finding', async () => {
    const result = await cli(['lint', '-f', 'examples/lint']);
    assert.equal(result.code, 1);
    assert.match(result.stdout, /^examples\/lint\/mistakes\.yaml:90:11: error NAMED_PORT_WRONG_PROTOCOL: /m);
    assert.match(result.stdout, /^ {4}fix: /m);
    assert.match(result.stdout, /1 error, 4 warnings, 1 info\n$/);
  });

  it('prints names, keys and values from the input with their control characters escaped', async () => {
    // A manifest must not drive the terminal (colours, clearing the screen, a forged line).
    const escape = String.fromCharCode(0x1b);
    const manifest =
      'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: a}\n' +
      'spec:\n  podSelector: {matchLabels: {"k\\e[2J": v}}\n  "\\e]0;title\\a": 1\n';
    const result = await cli(['lint', '-f', '-'], { stdin: manifest });
    assert.equal(result.code, 1);
    assert.ok(!result.stdout.includes(escape), result.stdout);
    assert.match(result.stdout, /error LABEL_KEY_INVALID: label key "k\\x1b\[2J"/);
    assert.match(result.stdout, /error SCHEMA_UNKNOWN_FIELD: unknown field "spec\.\\x1b\]0;title\\x07"/);
  });

  it('--fail-on chooses the severity that fails; none never fails', async () => {
    const warningsOnly = ['lint', '-f', 'examples/lint', '--skip', 'NAMED_PORT_WRONG_PROTOCOL'];
    assert.equal((await cli(warningsOnly)).code, 0);
    assert.equal((await cli([...warningsOnly, '--fail-on', 'warning'])).code, 1);
    const infoOnly = ['lint', '-f', 'examples/lint', '--only', 'WORKLOAD_NOT_ISOLATED'];
    assert.equal((await cli([...infoOnly, '--fail-on', 'warning'])).code, 0);
    assert.equal((await cli([...infoOnly, '--fail-on', 'info'])).code, 1);
    const broken = await cli(['lint', '-f', 'test/fixtures/broken.yaml']);
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, /error CIDR_INVALID/);
    assert.equal((await cli(['lint', '-f', 'test/fixtures/broken.yaml', '--fail-on', 'none'])).code, 0);
  });

  it('selects codes with --only and --skip, and refuses unknown ones', async () => {
    const only = await cli([
      'lint',
      '-f',
      'examples/lint',
      '-o',
      'json',
      '--only',
      'POLICY_REDUNDANT,PEERS_SPLIT_SELECTORS',
    ]);
    const codes = (JSON.parse(only.stdout) as { findings: { code: string }[] }).findings.map((f) => f.code);
    assert.deepEqual(codes.sort(), ['PEERS_SPLIT_SELECTORS', 'POLICY_REDUNDANT']);
    const skip = await cli(['lint', '-f', 'examples/lint', '-o', 'json', '--skip', 'POLICY_REDUNDANT']);
    assert.ok(!skip.stdout.includes('POLICY_REDUNDANT'));
    const unknown = await cli(['lint', '-f', 'examples/lint', '--only', 'POLICY_REDUNDENT']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /did you mean POLICY_REDUNDANT/);
  });

  it('JSON: findings with code, severity, location, message, hint, related; a summary', async () => {
    const result = await cli(['lint', '-f', 'examples/lint', '-o', 'json']);
    const report = JSON.parse(result.stdout) as {
      findings: Record<string, unknown>[];
      summary: Record<string, number>;
      skipped: unknown[];
    };
    assert.deepEqual(report.summary, { error: 1, warning: 4, info: 1 });
    const redundant = report.findings.find((f) => f.code === 'POLICY_REDUNDANT');
    assert.deepEqual(Object.keys(redundant ?? {}).sort(), [
      'code',
      'column',
      'file',
      'hint',
      'line',
      'message',
      'object',
      'related',
      'severity',
    ]);
    assert.equal(redundant?.object, 'NetworkPolicy shop/web-to-api');
  });

  it('SARIF is valid SARIF 2.1.0, with a rule per code and results at file, line and column', async () => {
    const result = await cli(['lint', '-f', 'examples/lint', 'test/fixtures/broken.yaml', '-o', 'sarif']);
    const log = JSON.parse(result.stdout) as SarifLog;
    assert.ok(validateSarif(log), JSON.stringify(validateSarif.errors?.slice(0, 3)));
    const run = log.runs[0];
    assert.ok(run);
    assert.equal(run.results.length, 7);
    for (const r of run.results) {
      assert.equal(run.tool.driver.rules[r.ruleIndex]?.id, r.ruleId);
      assert.ok((r.locations[0]?.physicalLocation?.region?.startLine ?? 0) > 0, r.ruleId);
    }
    const cidr = run.results.find((r) => r.ruleId === 'CIDR_INVALID');
    assert.equal(cidr?.level, 'error');
    assert.equal(cidr?.locations[0]?.physicalLocation?.artifactLocation.uri, 'test/fixtures/broken.yaml');
  });

  it('the schema check is real: a log without a tool name is rejected', () => {
    assert.equal(validateSarif({ version: '2.1.0', runs: [{ tool: { driver: {} }, results: [] }] }), false);
  });
});
