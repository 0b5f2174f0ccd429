/**
 * The configurator's numbered rules and tables (src/configurator/rule-numbering.ts): one object
 * per distinct rule and per distinct table, and a table's numbered rules found again when a
 * permit side merges its own into it — made only then, not kept for every table.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DENY_REST, RuleNumbering } from '../../src/configurator/rule-numbering.ts';
import { canonicalRules } from '../../src/configurator/table-id.ts';
import { ANY_NET, type NetRef } from '../../src/model/rule.ts';
import type { NumberedRule } from '../../src/configurator/rule-numbering.ts';

const group = (name: string): NetRef => ({ kind: 'group', group: name });

describe('rule numbering', () => {
  it('gives one rule per net and shape, and one table per list of rules', () => {
    const numbering = new RuleNumbering();
    const web = numbering.numberedNet('ingress', group('web'), 'TCP', 80, 80);
    assert.ok(web);
    assert.equal(numbering.numberedNet('ingress', group('web'), 'TCP', 80, 80), web);
    assert.notEqual(numbering.numberedNet('ingress', group('web'), 'TCP', 443, 443), web);
    const rules = canonicalRules([web, DENY_REST]) as NumberedRule[];
    assert.equal(numbering.intern(rules), numbering.intern([...rules]));
  });

  it("finds a table's numbered rules again, a permit of anything apart from the deny at its end", () => {
    const numbering = new RuleNumbering();
    const web = numbering.numberedNet('ingress', group('web'), 'TCP', 80, 80);
    // Its shape is the deny's (any to any, every protocol and port): only the action differs.
    const anything = numbering.numberedNet('ingress', ANY_NET, 'ANY', -1, -1);
    assert.ok(web && anything);
    const rules = canonicalRules([web, anything, DENY_REST]) as NumberedRule[];
    const table = numbering.intern(rules);
    const again = numbering.rulesOf(table);
    assert.ok(again);
    assert.deepEqual(
      again.map((r) => r.serial),
      rules.map((r) => r.serial),
    );
    assert.equal(again.at(-1), DENY_REST);
    assert.equal(numbering.rulesOf(table), again, 'made once');
  });

  it('knows no table of another numbering, nor one made before it was cleared', () => {
    const numbering = new RuleNumbering();
    const web = numbering.numberedNet('egress', group('db'), 'TCP', 5432, 5432);
    assert.ok(web);
    const table = numbering.intern([web, DENY_REST]);
    assert.equal(new RuleNumbering().rulesOf(table), undefined);
    numbering.clear();
    assert.equal(numbering.rulesOf(table), undefined);
  });
});
