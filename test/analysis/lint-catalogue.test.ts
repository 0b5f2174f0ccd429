/**
 * The lint catalogue in docs/LINT.md lists every code with its severity, and lint codes never
 * collide with diagnostic codes (a finding's code names one or the other).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { LINT_CATALOGUE } from '../../src/analysis/lint/catalogue.ts';
import { DIAGNOSTIC_CATALOGUE } from '../../src/model/diagnostics.ts';

it('docs/LINT.md documents every lint code with its severity', () => {
  const doc = readFileSync(new URL('../../docs/LINT.md', import.meta.url), 'utf8');
  for (const [code, { severity }] of Object.entries(LINT_CATALOGUE)) {
    assert.match(doc, new RegExp(`\\| \`${code}\` +\\| ${severity} +\\|`), code);
  }
});

it('lint codes and diagnostic codes are distinct', () => {
  for (const code of Object.keys(LINT_CATALOGUE)) assert.ok(!(code in DIAGNOSTIC_CATALOGUE), code);
});
