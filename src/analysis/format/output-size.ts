/**
 * How large an output would be, before it is written: a matrix listing every pair of 10,000
 * endpoints is 100 million lines (10 GB of JSON), and a port-set listing of a cluster whose
 * policies allow nearly every port can be hundreds of gigabytes. Formats that list every pair
 * are counted exactly from the rows' name lengths; listings of the pairs that may connect are
 * counted by walking them — only as far as the limit, past which the estimate is "at least".
 */
import { formatPortSet, isNoPorts, type PortSet } from '../../semantics/index.ts';
import type { ClassReport } from '../class-view.ts';
import type { Matrix } from '../types.ts';
import { connects } from '../focus.ts';
import { portListText } from './ports-text.ts';
import type { OutsideClass } from '../outside.ts';
import type { IngressControllerPeer } from '../ingress-controller.ts';
import { controllerLines, outsideLines, somePodsOnly } from './matrix-address-rows.ts';

export interface OutputEstimate {
  readonly bytes: number;
  readonly lines: number;
  /** The walk stopped at the limit: the output is at least this large. */
  readonly atLeast: boolean;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

/** The size of a matrix (rows of workloads, pods or namespaces) in a format, walking at most up to `limit` bytes. */
export function estimateMatrixOutput(matrix: Matrix, format: string, limit: number): OutputEstimate {
  const n = matrix.rows.length;
  const q = Math.max(1, matrix.queries.length);
  const labels = matrix.rows.map((r) => r.label.length);
  const ids = matrix.rows.map((r) => r.id.length + 2);
  const kinds = matrix.rows.map((r) => r.kind.length + 2);
  const sumLabels = sum(labels);
  // Reduced, not spread: Math.max(...labels) overflows the stack past ~120,000 rows.
  const widest = labels.reduce((w, l) => Math.max(w, l), 4);
  const perPort = matrix.queries.length > 0;
  const exact = (bytes: number, lines: number): OutputEstimate => ({ bytes, lines, atLeast: false });
  switch (format) {
    case 'json':
      // {"from":…,"to":…,"port":…,"protocol":…,"allowed":…,"fromKind":…,"toKind":…} per pair and port;
      // a port-set line has "ports" instead (at least `{}`).
      return exact(n * q * (2 * sum(ids) + 2 * sum(kinds) + n * (perPort ? 70 : 75)), n * n * q);
    case 'csv':
      return exact(n * q * (2 * sumLabels + n * (perPort ? 20 : 12)), n * n * q + 1);
    case 'md':
      return perPort
        ? exact(q * (n * (widest + 5 * n + 4) + sumLabels + 5 * n), q * (n + 2))
        : exact(n * (2 * sumLabels) + n * n * 12, n * n + 2);
    case 'text': {
      if (perPort) {
        const width = widest + 2 + 3 * n + 4 + String(n).length;
        return exact(q * (n + 2) * width, q * (n + 2));
      }
      return walkListing(matrix, limit);
    }
    default:
      return exact(0, 0);
  }
}

/** The text listing of the pairs that may connect, walked (only the rows each row reaches) up to the limit. */
function walkListing(matrix: Matrix, limit: number): OutputEstimate {
  const n = matrix.rows.length;
  let bytes = 0;
  let lines = 0;
  for (let f = 0; f < n; f++) {
    const targets = matrix.reachedRows ? matrix.reachedRows(f) : [...Array(n).keys()];
    for (const t of targets) {
      if (!connects(matrix, f, t)) continue;
      lines++;
      bytes +=
        (matrix.rows[f]?.label.length ?? 0) +
        (matrix.rows[t]?.label.length ?? 0) +
        6 +
        portListText(matrix.ports(f, t)).length;
      if (bytes > limit) return { bytes, lines, atLeast: true };
    }
  }
  return { bytes, lines, atLeast: false };
}

/** The size of a class listing in a format, walked up to the limit. */
export function estimateClassOutput(report: ClassReport, format: string, limit: number): OutputEstimate {
  let bytes =
    format === 'json'
      ? sum(report.rows.map((r) => r.label.length + 60 + sum(r.members.map((m) => m.id.length + 12))))
      : 0;
  let lines = format === 'json' ? report.rows.length : 0;
  if (bytes > limit) return { bytes, lines, atLeast: true };
  for (const { from, to, ports } of report.pairs()) {
    const a = report.rows[from];
    const b = report.rows[to];
    lines++;
    bytes +=
      format === 'json'
        ? 40 + (a?.id.length ?? 0) + (b?.id.length ?? 0) + formatPortSet(ports).length * 2
        : (a?.label.length ?? 0) + (b?.label.length ?? 0) + 8 + portListText(ports).length;
    if (bytes > limit) return { bytes, lines, atLeast: true };
  }
  return { bytes, lines, atLeast: false };
}

/** `10.5 GB`, `312 kB`: decimal units, as disks are sold and `--max-output` reads them. */
export function formatSize(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value.toFixed(0) : value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** `100MB`, `1.5 GB`, `500k`, `2GiB`, `0` (no limit) → bytes; undefined when it is not a size. */
export function parseSize(text: string): number | undefined {
  const match = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?)(i?)b?\s*$/i.exec(text);
  if (!match) return undefined;
  const power = ['', 'k', 'm', 'g', 't', 'p'].indexOf((match[2] ?? '').toLowerCase());
  const base = match[3] ? 1024 : 1000;
  return Math.round(Number(match[1]) * base ** power);
}

/** What a matrix answer writes after its rows: address ranges outside the cluster, the ingress controller. */
interface MatrixExtrasSize {
  readonly outside?: readonly OutsideClass[];
  readonly ingressController?: IngressControllerPeer;
}

/**
 * The size of a matrix's address ranges and ingress controller in a format (`estimateMatrixOutput`
 * counts the rows alone). Listings (every format without `--port`) are walked line by line with
 * their port lists, up to `limit` (past it the estimate is "at least"): a range's line can list
 * hundreds of ports. Tables and per-port lines (with `--port`) have cells of one size: counted.
 */
export function estimateMatrixExtras(
  matrix: Matrix,
  extras: MatrixExtrasSize,
  format: string,
  limit = Number.POSITIVE_INFINITY,
): OutputEstimate {
  if (matrix.queries.length === 0) return walkExtras(matrix, extras, format, limit);
  const q = matrix.queries.length;
  const n = matrix.rows.length;
  const ranges = extras.outside ?? [];
  const controller = extras.ingressController;
  const peers = ranges.length + (controller ? 1 : 0);
  const rowLabels = sum(
    matrix.rows.map((r) => (format === 'json' ? r.id.length + r.kind.length + 4 : r.label.length)),
  );
  const rangeLabels = sum(ranges.map((r) => r.label.length));
  const controllerLabel = controller?.label.length ?? 0;
  /** Bytes of every line between a row and a peer (each range both ways): both labels and `perLine` more. */
  const listing = (perLine: number): number =>
    2 * (ranges.length * rowLabels + n * rangeLabels + n * ranges.length * perLine) +
    (controller ? rowLabels + n * (controllerLabel + perLine) : 0);
  const lines = q * n * (2 * ranges.length + (controller ? 1 : 0));
  const exact = (bytes: number, count: number): OutputEstimate => ({ bytes, lines: count, atLeast: false });
  switch (format) {
    case 'json':
      // Per line: the row's id and kind, the range's label (or the controller's), ~110 bytes of keys.
      return exact(q * listing(110), lines);
    case 'csv':
      return exact(q * listing(24), lines);
    case 'md':
      // A column per range (a ✓ cell is 6 bytes) on every row, and a row per peer.
      return exact(
        q * (rangeLabels + 8 * ranges.length + n * 6 * ranges.length + peers * 6 * (n + ranges.length)) +
          q * (rangeLabels + controllerLabel + 4 * peers),
        q * peers,
      );
    case 'text': {
      // A 3-byte column per peer on every line of each port's table, and a row per peer.
      const width = matrix.rows.reduce((w, r) => Math.max(w, r.label.length), 4) + 6 + 3 * (n + peers);
      return exact(q * ((n + 2) * 3 * peers + peers * width) + rangeLabels, q * peers);
    }
    default:
      return exact(0, 0);
  }
}

/**
 * The listings' lines with address ranges and the ingress controller, as the writers make them
 * (matrix-formats.ts): both labels, the port list in the format's words, and the format's
 * punctuation; text lists only the connections allowed to some pod. JSON's port lists
 * (`{"TCP":[[80,80]]}`) are about twice the text's.
 */
function walkExtras(matrix: Matrix, extras: MatrixExtrasSize, format: string, limit: number): OutputEstimate {
  let bytes = 0;
  let lines = 0;
  const line = (from: string, to: string, ports: PortSet, partial: PortSet | undefined): boolean => {
    if (format === 'text' && isNoPorts(ports) && !partial) return false;
    lines++;
    if (format === 'json')
      bytes += from.length + to.length + Math.ceil(2.5 * formatPortSet(ports).length) + 115;
    else if (format === 'csv') bytes += from.length + to.length + formatPortSet(ports).length + 5;
    else bytes += from.length + to.length + portListText(ports).length + (format === 'md' ? 12 : 5);
    if (partial) bytes += portListText(partial).length + 25;
    return bytes > limit;
  };
  for (const [from, to, ports, r, c, outward] of outsideLines(matrix, extras.outside ?? []))
    if (line(from, to, ports, format === 'text' ? somePodsOnly(c, r, outward, ports) : undefined))
      return { bytes, lines, atLeast: true };
  for (const [from, to, ports] of controllerLines(matrix, extras.ingressController))
    if (line(from, to, ports, undefined)) return { bytes, lines, atLeast: true };
  return { bytes, lines, atLeast: false };
}
