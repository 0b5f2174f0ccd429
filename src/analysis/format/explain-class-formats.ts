/**
 * `explain --by class` for people and for scripts: one block per class of endpoints no policy
 * tells apart — named as matrix names classes, with its members — then what it lets in and out,
 * in the lines `explain` prints for one endpoint. JSON is its own versioned shape
 * (`"format": "palisade.explain.classes/v1"`, docs/OUTPUTS.md): each class with every member,
 * so a script can expand it; `explain -o json` without `--by class` keeps its shape.
 */
import type { ClassExplanation, ClassExplanations } from '../explain-classes.ts';
import { endpointIdentity } from '../explain.ts';
import { endpointRow } from '../workload-view.ts';
import { directionLines } from './explain-text.ts';
import type { Style } from './style.ts';

/** The version of the JSON shape; a change that breaks readers gets a new one. */
export const EXPLAIN_CLASSES_JSON_FORMAT = 'palisade.explain.classes/v1';

const MAX_LISTED_MEMBERS = 6;
const count = (n: number): string => n.toLocaleString('en-US');

export function formatExplainClassesText(explained: ClassExplanations, style: Style): string {
  const blocks = explained.classes.map((c) => formatClass(c, style));
  const classes = explained.classes.length;
  const footer = style.dim(
    `${count(explained.endpoints)} endpoints in ${count(classes)} ${classes === 1 ? 'class' : 'classes'} of endpoints no policy tells apart, each class explained once (--by endpoint for every endpoint)`,
  );
  return [...blocks, footer + '\n'].join('\n');
}

function formatClass(c: ClassExplanation, style: Style): string {
  const { members } = c.row;
  const only = members.length === 1 ? members[0] : undefined;
  let about: string;
  if (only) {
    // One member: what explain says of it.
    const e = endpointIdentity(only);
    about = `${e.kind}; ${e.ips.length ? e.ips.join(', ') : 'no IP'}${e.labels ? `; ${e.labels}` : ''}`;
  } else {
    const named = members.slice(0, MAX_LISTED_MEMBERS).map((m) => endpointRow(m).label);
    const more =
      members.length > MAX_LISTED_MEMBERS ? ` and ${count(members.length - MAX_LISTED_MEMBERS)} more` : '';
    const shared = sharedLabelText(c);
    about = `${c.row.id}: ${named.join(', ')}${more}${shared ? `; all ${shared}` : ''}`;
  }
  const lines = [
    `${style.bold(c.row.label)} ${style.dim(`(${about})`)}`,
    ...directionLines('ingress', c.ingress, style),
    ...directionLines('egress', c.egress, style),
  ];
  return lines.join('\n') + '\n';
}

/**
 * About the size of `explain`'s text per endpoint, from the classes': each member's block is its
 * class's lines under its own header (the header's size estimated from the member's name, kind,
 * addresses and labels). Cost: the classes' text and a pass over the members.
 */
export function estimateExplainText(explained: ClassExplanations, style: Style): number {
  let bytes = 0;
  for (const c of explained.classes) {
    const block = formatClass(c, style);
    const body = Buffer.byteLength(block) - Buffer.byteLength(block.slice(0, block.indexOf('\n') + 1));
    bytes += body * c.row.members.length + c.row.members.length; // and the blank line between blocks
    for (const m of c.row.members) {
      const e = endpointIdentity(m);
      bytes += e.endpoint.length + e.kind.length + e.labels.length + e.ips.join(', ').length + 10;
    }
  }
  return bytes;
}

/** The labels every member has alike, `k=v,…`. */
function sharedLabelText(c: ClassExplanation): string {
  const [first, ...rest] = c.row.members;
  if (!first) return '';
  return Object.entries(first.labels)
    .filter(([key, value]) => rest.every((m) => m.labels[key] === value))
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/** The JSON shape: every class with its members, ingress and egress as `explain -o json` gives them. */
export function explainClassesJson(
  explained: ClassExplanations,
  extra: Record<string, unknown> = {},
): string {
  const classes = explained.classes.map((c) => ({
    id: c.row.id,
    label: c.row.label,
    namespace: c.row.namespace,
    size: c.row.members.length,
    members: c.row.members.map((m) => endpointRow(m).label),
    hostNetwork: c.row.members[0]?.hostNetwork ?? false,
    ingress: c.ingress,
    egress: c.egress,
  }));
  return (
    JSON.stringify(
      {
        format: EXPLAIN_CLASSES_JSON_FORMAT,
        classes,
        summary: { classes: classes.length, endpoints: explained.endpoints },
        ...extra,
      },
      null,
      2,
    ) + '\n'
  );
}
