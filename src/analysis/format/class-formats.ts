/**
 * Outputs of the matrix per class (`matrix --by class`): a line per class pair that may connect
 * (with its ports, or the queried ports allowed), then a summary counted in member pairs. JSON is
 * its own, versioned shape (`"format": "palisade.matrix.classes/v1"`, docs/OUTPUTS.md): every
 * class with its members, then the pairs — the row shapes of `-o json` are not reused, so a
 * script reading them never mistakes a class for a workload. Writers yield a line at a time.
 */
import { PROTOCOLS } from '../../model/types.ts';
import { formatPortSet, type PortSet } from '../../semantics/index.ts';
import type { ClassReport, ClassRow } from '../class-view.ts';
import { endpointRow } from '../workload-view.ts';
import { portListText } from './ports-text.ts';
import type { Style } from './style.ts';

export type ClassWriter = (report: ClassReport, style: Style) => Iterable<string>;

/** The version of the JSON shape; a change that breaks readers gets a new one. */
export const CLASS_JSON_FORMAT = 'palisade.matrix.classes/v1';

const count = (n: number): string => n.toLocaleString('en-US');
const onPorts = (report: ClassReport): string =>
  report.queries.length === 0 ? '' : ` on ${report.queries.map((q) => `${q.protocol}/${q.port}`).join(', ')}`;

function summary(report: ClassReport, allowedPairs: number): string {
  const pairs = report.endpoints * report.endpoints;
  const classes = `${count(report.rows.length)} ${report.rows.length === 1 ? 'class' : 'classes'}`;
  if (pairs === 0) return 'no pods in the matrix: nothing to connect\n';
  return (
    `${count(allowedPairs)} of ${count(pairs)} ordered pairs of endpoints (self pairs included; ` +
    `${count(report.endpoints)} endpoints in ${classes} no policy tells apart) can connect${onPorts(report)}; ` +
    `the others are denied${report.queries.length === 0 ? ' on every port' : ''}\n`
  );
}

/** The class pairs with their two classes. */
function* namedPairs(report: ClassReport): Iterable<{ a: ClassRow; b: ClassRow; ports: PortSet }> {
  for (const { from, to, ports } of report.pairs()) {
    const a = report.rows[from];
    const b = report.rows[to];
    if (a && b) yield { a, b, ports };
  }
}

function* text(report: ClassReport, style: Style): Iterable<string> {
  let allowed = 0;
  for (const { a, b, ports } of namedPairs(report)) {
    allowed += a.members.length * b.members.length;
    yield `${a.label} → ${b.label}: ${portListText(ports)}\n`;
  }
  yield style.dim(`\n${summary(report, allowed)}`);
}

function portsJson(ports: PortSet): Record<string, [number, number][]> {
  const result: Record<string, [number, number][]> = {};
  for (const p of PROTOCOLS) if (ports.ranges[p].length) result[p] = ports.ranges[p].map(([a, b]) => [a, b]);
  return result;
}

function* json(report: ClassReport): Iterable<string> {
  yield `{"format":${JSON.stringify(CLASS_JSON_FORMAT)},`;
  if (report.queries.length > 0)
    yield `"queries":${JSON.stringify(report.queries.map((q) => ({ port: q.port, protocol: q.protocol })))},`;
  yield '\n"classes":[';
  let separator = '\n';
  for (const row of report.rows) {
    yield (
      separator +
      JSON.stringify({
        id: row.id,
        label: row.label,
        namespace: row.namespace,
        size: row.members.length,
        members: row.members.map((m) => endpointRow(m).label),
      })
    );
    separator = ',\n';
  }
  yield '\n],\n"results":[';
  separator = '\n';
  let allowed = 0;
  let listed = 0;
  for (const { a, b, ports } of namedPairs(report)) {
    allowed += a.members.length * b.members.length;
    listed++;
    yield `${separator}{"from":"${a.id}","to":"${b.id}","ports":${JSON.stringify(portsJson(ports))}}`;
    separator = ',\n';
  }
  const pairs = report.endpoints * report.endpoints;
  yield `\n],\n"summary":${JSON.stringify({
    classes: report.rows.length,
    endpoints: report.endpoints,
    pairs,
    allowedPairs: allowed,
    classPairsListed: listed,
  })}}\n`;
}

const csvField = (text: string): string => (/[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

function* csv(report: ClassReport): Iterable<string> {
  yield 'from,to,from_size,to_size,ports\n';
  for (const { a, b, ports } of namedPairs(report))
    yield `${csvField(a.label)},${csvField(b.label)},${a.members.length},${b.members.length},${csvField(formatPortSet(ports))}\n`;
}

function* md(report: ClassReport): Iterable<string> {
  yield '| from | to | allowed ports |\n|---|---|---|\n';
  let allowed = 0;
  for (const { a, b, ports } of namedPairs(report)) {
    allowed += a.members.length * b.members.length;
    yield `| ${a.label} | ${b.label} | ${portListText(ports)} |\n`;
  }
  yield `\n${summary(report, allowed)}`;
}

export const CLASS_FORMATS: Readonly<Record<string, ClassWriter>> = { text, json, csv, md };
