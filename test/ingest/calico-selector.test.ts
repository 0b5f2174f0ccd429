/**
 * Calico's selector language: what each operator matches (docs.tigera.io/calico/latest/reference/
 * resources/networkpolicy, "Selectors"), the precedence of the docs' example, and mistakes
 * reported at their column.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCalicoSelector, selectorDnf } from '../../src/ingest/calico-selector.ts';
import { makeSelector, selectorMatches } from '../../src/model/selector.ts';
import type { Labels } from '../../src/model/types.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';

/** Whether the selector matches the labels, through parse → alternatives → model selectors. */
function matches(text: string, labels: Labels): boolean {
  const parsed = parseCalicoSelector(text);
  if (!parsed.ok) throw new Error(`${text}: ${parsed.message}`);
  const dnf = selectorDnf(parsed.expression);
  assert.ok(dnf);
  return dnf.some((conjunction) => selectorMatches(makeSelector({}, conjunction), labels));
}

describe('Calico selectors: the documented operators', () => {
  const labels = { k: 'v', app: 'web-prod', tier: 'frontend' };
  const cases: [string, boolean, string][] = [
    ["k == 'v'", true, "Matches resources with the label 'k' and value 'v'."],
    ["k == 'w'", false, "Matches resources with the label 'k' and value 'v'."],
    ["k != 'w'", true, "Matches resources without label 'k' or with label 'k' and value not equal to v"],
    [
      "missing != 'v'",
      true,
      "Matches resources without label 'k' or with label 'k' and value not equal to v",
    ],
    ['has(k)', true, "Matches resources with label 'k', independent of value."],
    [
      '!has(k)',
      false,
      'To match pods that do not have label k, combine this operator with ! to form !has(k)',
    ],
    ["k in { 'v', 'w' }", true, "Matches resources with label 'k' and value in the given set"],
    [
      "k not in { 'v', 'w' }",
      false,
      "Matches resources without label 'k' or with label 'k' and value not in the given set",
    ],
    [
      "missing not in { 'v' }",
      true,
      "Matches resources without label 'k' or with label 'k' and value not in the given set",
    ],
    ["app contains 'b-p'", true, "Matches resources with label 'k' and value containing the substring 's'"],
    [
      "app starts with 'web'",
      true,
      "Matches resources with label 'k' and value starting with the substring 's'",
    ],
    [
      "app ends with 'web'",
      false,
      "Matches resources with label 'k' and value ending with the substring 's'",
    ],
    ["!(app ends with 'web')", true, '! <expression>: Matches if and only if <expression> does not match.'],
    ['all()', true, 'Match all in-scope resources.'],
    ['!all()', false, 'To match no resources, combine this operator with ! to form !all().'],
    ['global()', false, 'Match all non-namespaced resources (a pod is namespaced).'],
    ['', true, 'selector: default all()'],
    [
      "k == 'v' && tier == 'backend'",
      false,
      '"And": matches if and only if both <expression 1>, and, <expression 2> matches',
    ],
    [
      "k == 'x' || tier == 'frontend'",
      true,
      '"Or": matches if and only if either <expression 1>, or, <expression 2> matches.',
    ],
    [
      '(has(k) && !has(k)) || has(app)',
      true,
      '( <expression> ): Parentheses are used for grouping expressions.',
    ],
  ];
  for (const [text, expected, sentence] of cases)
    it(`${text || '(empty)'} → ${expected}`, () => assert.equal(matches(text, labels), expected, sentence));

  it('reads the docs’ precedence example as the docs bracket it', () => {
    // "! has(my-label) || my-label starts with 'prod' && role in {'frontend','business'}" is
    // "((!(has(my-label)) || ((my-label starts with 'prod') && (role in {'frontend','business'}))"
    const text = "! has(my-label) || my-label starts with 'prod' && role in {'frontend','business'}";
    assert.equal(matches(text, {}), true, 'Any resource that did not have label "my-label".');
    assert.equal(
      matches(text, { 'my-label': 'production', role: 'business' }),
      true,
      'Has a value for my-label that starts with "prod", and, Has a role label with value either "frontend", or "business".',
    );
    assert.equal(matches(text, { 'my-label': 'production', role: 'db' }), false);
    assert.equal(matches(text, { 'my-label': 'staging', role: 'frontend' }), false);
  });

  it('reports a mistake at its offset', () => {
    const cases: [string, number][] = [
      ["app = 'web'", 4],
      ["app == 'web", 7],
      ['app', 3],
      ["app == 'web' &&", 15],
      ["app == 'web' & tier == 'x'", 13],
      ["app in {'a' 'b'}", 12],
      ["(app == 'web'", 13],
      ["app == 'web')", 12],
    ];
    for (const [text, index] of cases) {
      const parsed = parseCalicoSelector(text);
      assert.equal(parsed.ok, false, text);
      if (!parsed.ok) assert.equal(parsed.index, index, `${text}: ${parsed.message}`);
    }
  });

  it('refuses a selector that multiplies out past 256 alternatives', () => {
    const text = Array.from({ length: 9 }, (_, i) => `(a${i} == 'x' || b${i} == 'y')`).join(' && ');
    const parsed = parseCalicoSelector(text);
    assert.ok(parsed.ok);
    assert.equal(selectorDnf(parsed.expression), undefined);
  });
});

describe('Calico selectors in manifests: located diagnostics', () => {
  it('puts a selector mistake at its line and column, in YAML and in JSON', () => {
    const yaml = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: p}
spec:
  selector: app = 'web'
  ingress:
    - action: Allow
      source:
        selector: "tier == 'a' && (role == 'b'"`;
    const result = loadFromTexts([{ name: 'p.yaml', text: yaml }]);
    const found = result.diagnostics.filter((d) => d.code === 'SELECTOR_SYNTAX');
    assert.deepEqual(
      found.map((d) => [d.line, d.column, d.path]),
      [
        [5, 17, 'spec.selector'],
        [9, 47, 'spec.ingress[0].source.selector'],
      ],
    );
    assert.match(found[0]?.message ?? '', /column 5/);
    const json = JSON.stringify({
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'p' },
      spec: { selector: "app == 'web' &&" },
    });
    const fromJson = loadFromTexts([{ name: 'p.json', text: json }]).diagnostics.find(
      (d) => d.code === 'SELECTOR_SYNTAX',
    );
    assert.equal(fromJson?.column, json.indexOf("app == 'web' &&") + 1 + 15);
  });
});
