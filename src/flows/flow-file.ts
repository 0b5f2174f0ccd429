/**
 * Reads a flow file: NDJSON, one FlowRecord per line (what `palisade flows -o json` and the
 * agent's `/flows` write). Every problem is a diagnostic with the file, line and column of the
 * field at fault; a bad line is skipped and every other line is still read. A field the record
 * does not have is a warning, not an error: producers may add optional fields (types.ts) and an
 * older reader must still take their files.
 */
import { closest } from '../util/closest.ts';
import { makeDiagnostic, type Diagnostic, type DiagnosticCode } from '../model/diagnostics.ts';
import { PROTOCOLS } from '../model/basics.ts';
import { parseIp } from '../net/ip.ts';
import { locateJson, pathKey, type FieldOffsets } from './json-locate.ts';
import type { DecidingRule, FlowEndpoint, FlowProtocol, FlowRecord, FlowVerdict } from './types.ts';

/** A record and where it was read. */
export interface LocatedFlow {
  readonly record: FlowRecord;
  readonly file: string;
  readonly line: number;
}

export interface FlowFile {
  readonly flows: readonly LocatedFlow[];
  readonly diagnostics: readonly Diagnostic[];
}

const RECORD_FIELDS = [
  'src',
  'dst',
  'protocol',
  'port',
  'verdict',
  'decidedBy',
  'count',
  'sampled',
  'firstSeen',
  'lastSeen',
  'node',
  'staged',
];
const ENDPOINT_FIELDS = ['ip', 'pod', 'labels', 'namespaceLabels'];
const VERDICTS: readonly FlowVerdict[] = ['allowed', 'denied'];
/** `ns/name`: two DNS labels or subdomains (validated loosely; the join with the cluster says more). */
const POD_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

type Path = readonly (string | number)[];

/**
 * Reads every line of `text`. Required in each record: `src` and `dst` (each with `ip`),
 * `protocol`, `port`, `verdict`. The rest of the record is optional when reading (a hand-written
 * file may leave it out): `count` is then 1, `decidedBy` empty, the times empty strings.
 */
export function readFlowFile(file: string, text: string): FlowFile {
  const flows: LocatedFlow[] = [];
  const diagnostics: Diagnostic[] = [];
  let start = 0;
  for (let line = 1; start <= text.length; line++) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const lineText = text.slice(start, end).replace(/\r$/, '');
    start = end + 1;
    if (lineText.trim() === '') continue;
    const read = readLine(file, line, lineText);
    diagnostics.push(...read.diagnostics);
    if (read.record) flows.push({ record: read.record, file, line });
  }
  return { flows, diagnostics };
}

function readLine(
  file: string,
  line: number,
  text: string,
): { record?: FlowRecord; diagnostics: Diagnostic[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const located = locateJson(text);
    const offset = located.ok ? 0 : located.offset;
    const said = located.ok ? (error as Error).message : located.message;
    const at = { file, line, column: offset + 1 };
    return {
      diagnostics: [makeDiagnostic('YAML_SYNTAX', `not a JSON flow record: ${said}; line skipped`, at)],
    };
  }
  const problems: { code: DiagnosticCode; message: string; path: Path; onKey?: boolean }[] = [];
  const record = decodeRecord(value, (code, message, path, onKey) =>
    problems.push({ code, message, path, ...(onKey ? { onKey } : {}) }),
  );
  if (problems.length === 0) return record ? { record, diagnostics: [] } : { diagnostics: [] };
  // Only now find where each field sits.
  const located = locateJson(text);
  const offsets: ReadonlyMap<string, FieldOffsets> = located.ok ? located.offsets : new Map();
  const diagnostics = problems.map((p) => {
    const where = offsets.get(pathKey(p.path));
    const offset = where ? (p.onKey ? where.key : where.value) : 0;
    return makeDiagnostic(p.code, p.message, {
      file,
      line,
      column: offset + 1,
      ...(p.path.length ? { path: pathKey(p.path) } : {}),
    });
  });
  const fatal = problems.some((p) => p.code !== 'FLOW_FIELD_UNKNOWN');
  return fatal ? { diagnostics } : record ? { record, diagnostics } : { diagnostics };
}

type Report = (code: DiagnosticCode, message: string, path: Path, onKey?: boolean) => void;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function unknownFields(
  object: Record<string, unknown>,
  known: readonly string[],
  path: Path,
  report: Report,
): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const near = closest(key, known);
    report(
      'FLOW_FIELD_UNKNOWN',
      `unknown field "${key}" in a flow record${near ? ` (did you mean "${near}"?)` : ''}; ignored`,
      [...path, key],
      true,
    );
  }
}

function decodeRecord(value: unknown, report: Report): FlowRecord | undefined {
  if (!isObject(value)) {
    report(
      'FLOW_FIELD_INVALID',
      'a flow record must be a JSON object ({"src": …, "dst": …, …}); line skipped',
      [],
    );
    return undefined;
  }
  unknownFields(value, RECORD_FIELDS, [], report);
  const src = decodeEndpoint(value.src, ['src'], report);
  const dst = decodeEndpoint(value.dst, ['dst'], report);
  const protocol = value.protocol;
  if (protocol === undefined)
    report('SCHEMA_REQUIRED', 'a flow record needs "protocol" (TCP, UDP or SCTP)', []);
  else if (typeof protocol !== 'string' || !(PROTOCOLS as readonly string[]).includes(protocol))
    report('PROTOCOL_INVALID', `protocol ${JSON.stringify(protocol)} is not TCP, UDP or SCTP`, ['protocol']);
  const port = value.port;
  if (port === undefined) report('SCHEMA_REQUIRED', 'a flow record needs "port" (1-65535)', []);
  else if (typeof port !== 'number')
    report('SCHEMA_TYPE', `port must be a number, not ${JSON.stringify(port)}`, ['port']);
  else if (!Number.isInteger(port)) report('PORT_NOT_INTEGER', `port ${port} is not an integer`, ['port']);
  else if (port < 1 || port > 65535) report('PORT_OUT_OF_RANGE', `port ${port} is outside 1-65535`, ['port']);
  const verdict = value.verdict;
  if (verdict === undefined)
    report('SCHEMA_REQUIRED', 'a flow record needs "verdict" (allowed or denied)', []);
  else if (!VERDICTS.includes(verdict as FlowVerdict))
    report('FLOW_FIELD_INVALID', `verdict ${JSON.stringify(verdict)} is not "allowed" or "denied"`, [
      'verdict',
    ]);
  const count = value.count ?? 1;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0)
    report('FLOW_FIELD_INVALID', `count ${JSON.stringify(count)} is not a whole number of connections`, [
      'count',
    ]);
  const decidedBy = value.decidedBy ?? [];
  if (!Array.isArray(decidedBy))
    report('SCHEMA_TYPE', 'decidedBy must be a list of deciding rules', ['decidedBy']);
  else
    decidedBy.forEach((rule, i) => {
      if (!isObject(rule) || typeof rule.direction !== 'string' || typeof rule.tier !== 'string')
        report('SCHEMA_TYPE', 'a deciding rule is an object with direction, tier and outcome', [
          'decidedBy',
          i,
        ]);
    });
  if (
    value.staged !== undefined &&
    !(isObject(value.staged) && VERDICTS.includes(value.staged.verdict as FlowVerdict))
  )
    report('SCHEMA_TYPE', 'staged must be an object with a verdict (allowed or denied) and decidedBy', [
      'staged',
    ]);
  for (const key of ['firstSeen', 'lastSeen', 'node'] as const) {
    if (value[key] !== undefined && typeof value[key] !== 'string')
      report('SCHEMA_TYPE', `${key} must be a string`, [key]);
  }
  if (value.sampled !== undefined && typeof value.sampled !== 'boolean')
    report('SCHEMA_TYPE', 'sampled must be true or false', ['sampled']);
  if (!src || !dst || typeof port !== 'number') return undefined;
  return {
    src,
    dst,
    protocol: protocol as FlowProtocol,
    port,
    verdict: verdict as FlowVerdict,
    decidedBy: Array.isArray(decidedBy) ? (decidedBy as DecidingRule[]) : [],
    count: typeof count === 'number' ? count : 1,
    ...(value.sampled === true ? { sampled: true } : {}),
    firstSeen: typeof value.firstSeen === 'string' ? value.firstSeen : '',
    lastSeen: typeof value.lastSeen === 'string' ? value.lastSeen : '',
    ...(typeof value.node === 'string' ? { node: value.node } : {}),
    ...(isObject(value.staged)
      ? {
          staged: {
            verdict: value.staged.verdict as FlowVerdict,
            decidedBy: Array.isArray(value.staged.decidedBy)
              ? (value.staged.decidedBy as DecidingRule[])
              : [],
          },
        }
      : {}),
  };
}

function decodeEndpoint(value: unknown, path: Path, report: Report): FlowEndpoint | undefined {
  const side = path[0] as string;
  if (value === undefined) {
    report('SCHEMA_REQUIRED', `a flow record needs "${side}" ({"ip": …, "pod": "ns/name"})`, []);
    return undefined;
  }
  if (!isObject(value)) {
    report('SCHEMA_TYPE', `${side} must be an object ({"ip": …, "pod": "ns/name"})`, path);
    return undefined;
  }
  unknownFields(value, ENDPOINT_FIELDS, path, report);
  let ok = true;
  const ip = value.ip;
  if (ip === undefined) {
    report('SCHEMA_REQUIRED', `${side} needs "ip"`, path);
    ok = false;
  } else if (typeof ip !== 'string') {
    report('SCHEMA_TYPE', `${side}.ip must be a string`, [...path, 'ip']);
    ok = false;
  } else {
    const parsed = parseIp(ip);
    if (!parsed.ok) {
      const why = parsed.problems.find((p) => p.fatal)?.message ?? `"${ip}" is not a valid IP address`;
      report('IP_INVALID', `${side}.ip: ${why}`, [...path, 'ip']);
      ok = false;
    }
  }
  const pod = value.pod;
  if (pod !== undefined && (typeof pod !== 'string' || !POD_NAME.test(pod))) {
    report('FLOW_FIELD_INVALID', `${side}.pod ${JSON.stringify(pod)} is not a pod name ns/name`, [
      ...path,
      'pod',
    ]);
    ok = false;
  }
  const labels = labelsOf(value.labels, [...path, 'labels'], report);
  const namespaceLabels = labelsOf(value.namespaceLabels, [...path, 'namespaceLabels'], report);
  if (!ok || labels === null || namespaceLabels === null) return undefined;
  return {
    ip: ip as string,
    ...(typeof pod === 'string' ? { pod } : {}),
    ...(labels ? { labels } : {}),
    ...(namespaceLabels ? { namespaceLabels } : {}),
  };
}

/** Labels as given; undefined when absent, null when malformed (reported). */
function labelsOf(value: unknown, path: Path, report: Report): Record<string, string> | undefined | null {
  if (value === undefined) return undefined;
  if (!isObject(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    report('SCHEMA_TYPE', `${path.join('.')} must map label keys to string values`, path);
    return null;
  }
  return value as Record<string, string>;
}
