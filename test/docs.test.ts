/**
 * The diagnostic catalogue in docs/DIAGNOSTICS.md lists every code with its severity.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { DIAGNOSTIC_CATALOGUE } from '../src/model/diagnostics.ts';

it('docs/DIAGNOSTICS.md documents every diagnostic code', () => {
  const doc = readFileSync(new URL('../docs/DIAGNOSTICS.md', import.meta.url), 'utf8');
  for (const [code, { severity }] of Object.entries(DIAGNOSTIC_CATALOGUE)) {
    assert.match(doc, new RegExp(`\\| \`${code}\` +\\| ${severity} +\\|`), code);
  }
});
