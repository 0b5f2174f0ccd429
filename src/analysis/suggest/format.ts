/**
 * A suggestion as text for review: the policies as multi-document YAML, each after a comment
 * saying what it is for, under a header that says what the suggestion was made from, what it
 * generalised and whether the reference evaluator found it exact. Plain YAML that `kubectl apply`
 * takes as it is.
 */
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
  if (s.clusterPoliciesLeftOut > 0)
    lines.push(
      `The input's ${s.clusterPoliciesLeftOut} cluster-wide or other engines' polic${s.clusterPoliciesLeftOut === 1 ? 'y' : 'ies'} (AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy, Calico's, Cilium's) ${s.clusterPoliciesLeftOut === 1 ? 'was' : 'were'} left out of the check: where they decide, NetworkPolicy does not.`,
    );
  if (s.generalised.length) lines.push('Generalised:', ...s.generalised.map((g) => `  ${g.text}`));
  return lines;
}

/** Short collections on one line, as the examples are written: `policyTypes: [Ingress, Egress]`, `- {protocol: TCP, port: 80}`. */
const FLOW_KEYS = new Set(['policyTypes', 'matchLabels', 'ipBlock']);
/** Scalars YAML 1.1 (kubectl's reader) or 1.2 would read as something other than a string. */
const SPECIAL = /^(?:y|yes|n|no|true|false|on|off|null|~)$/i;
/** Names, label keys and values, IPv4 CIDRs (a `/` keeps them from being numbers); an IPv6 address is quoted. */
const PLAIN = /^[A-Za-z_][-A-Za-z0-9_./]*$|^[0-9.]+\/[0-9]+$/;

/*
 * A writer for the one shape printed here (maps, lists, strings, numbers), instead of the yaml
 * library's document model: that took 2.5 s for 7,500 policies. A string is written plain only
 * when no YAML reader could take it for anything else; otherwise double-quoted (JSON's quoting
 * is YAML's). Tests read the text back and compare it with the objects.
 */
function scalar(value: unknown): string {
  if (typeof value === 'number') return String(value);
  const text = String(value);
  return PLAIN.test(text) && !SPECIAL.test(text) ? text : JSON.stringify(text);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function flow(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(flow).join(', ')}]`;
  if (isRecord(value))
    return `{${Object.entries(value)
      .map(([k, v]) => `${scalar(k)}: ${flow(v)}`)
      .join(', ')}}`;
  return scalar(value);
}

/** Whether a map's value under `key` goes on one line. */
function inline(key: string, value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0 || FLOW_KEYS.has(key);
  if (isRecord(value)) return Object.keys(value).length === 0 || FLOW_KEYS.has(key);
  return true;
}

function mapLines(map: Record<string, unknown>, indent: number, out: string[], first = ''): void {
  let lead = first;
  for (const [key, value] of Object.entries(map)) {
    const head = `${lead || ' '.repeat(indent)}${scalar(key)}:`;
    lead = '';
    if (inline(key, value)) out.push(`${head} ${flow(value)}`);
    else if (Array.isArray(value)) {
      out.push(head);
      for (const item of value) {
        const dash = `${' '.repeat(indent + 2)}- `;
        // A port is one line; other list items are maps written in block form.
        if (key === 'ports' || !isRecord(item)) out.push(`${dash}${flow(item)}`);
        else mapLines(item, indent + 4, out, dash);
      }
    } else {
      out.push(head);
      mapLines(value as Record<string, unknown>, indent + 2, out);
    }
  }
}

function policyYaml(p: SuggestedPolicy): string {
  const out = [`# ${p.comment}`];
  mapLines(p.object, 0, out);
  return `${out.join('\n')}\n`;
}

/** The policies (all, or one namespace's) as YAML, after the summary as comments. */
export function suggestionYaml(s: Suggestion, source: string, policies = s.policies): string {
  const header = suggestionSummary(s, source)
    .map((l) => `# ${l}`.trimEnd())
    .join('\n');
  return `${header}\n${policies.map(policyYaml).join('---\n')}`;
}
