/**
 * A suggestion as text for review: the policies as multi-document YAML, each after a comment
 * saying what it is for, under a header that says what the suggestion was made from, what it
 * generalised and whether the reference evaluator found it exact. Plain YAML that `kubectl apply`
 * takes as it is.
 */
import { Document, isCollection, isMap, isScalar, isSeq, visit } from 'yaml';
import type { SuggestedPolicy, Suggestion } from './types.ts';

/** The header: provenance, generalisations, verification — as YAML comments. */
export function suggestionSummary(s: Suggestion, source: string): string[] {
  const v = s.verification;
  const lines = [
    `Suggested by palisade suggest from ${s.observations} observed connection${s.observations === 1 ? '' : 's'} (${s.connections} new connection${s.connections === 1 ? '' : 's'}) in ${source}.`,
    v.exact
      ? `Verified with the reference evaluator: in place of the input's policies, these let through exactly the connections seen ${s.scoped ? `to and from the pods of ${s.namespaces.join(', ')}` : `between the ${v.endpoints} pods`} (by workload), DNS, and nothing else.`
      : `NOT exact: the reference evaluator finds ${v.mismatches.length}${v.mismatches.length >= 50 ? '+' : ''} pod pair${v.mismatches.length === 1 ? '' : 's'} that differ${v.violated.length ? ` and ${v.violated.length} expected-denied connection${v.violated.length === 1 ? '' : 's'} allowed` : ''}:`,
    ...v.mismatches.map(
      (m) =>
        `  ${m.from} → ${m.to}:${m.extra ? ` also allows ${m.extra}` : ''}${m.missing ? ` misses ${m.missing}` : ''}`,
    ),
    ...v.violated.map((text) => `  ${text}`),
  ];
  if (s.generalised.length) lines.push('Generalised:', ...s.generalised.map((g) => `  ${g.text}`));
  return lines;
}

/** Short collections on one line, as the examples are written: `policyTypes: [Ingress, Egress]`, `- {protocol: TCP, port: 80}`. */
const FLOW_KEYS = new Set(['policyTypes', 'matchLabels', 'ipBlock']);

function policyYaml(p: SuggestedPolicy): string {
  const doc = new Document(p.object);
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && FLOW_KEYS.has(String(pair.key.value)) && isCollection(pair.value))
        pair.value.flow = true;
      if (isScalar(pair.key) && pair.key.value === 'ports' && isSeq(pair.value))
        for (const item of pair.value.items) if (isMap(item)) item.flow = true;
    },
  });
  return `# ${p.comment}\n${doc.toString({ lineWidth: 0, flowCollectionPadding: false })}`;
}

/** The policies (all, or one namespace's) as YAML, after the summary as comments. */
export function suggestionYaml(s: Suggestion, source: string, policies = s.policies): string {
  const header = suggestionSummary(s, source)
    .map((l) => `# ${l}`.trimEnd())
    .join('\n');
  return `${header}\n${policies.map(policyYaml).join('---\n')}`;
}
