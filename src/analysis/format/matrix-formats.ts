/**
 * Matrix output formats, one writer each, registered by name. A writer yields its output in
 * pieces as it produces them — a line, a row — and never holds the whole: a 10,000-endpoint
 * matrix is 100 million cells, more than any string or memory budget. The caller decides how
 * pieces reach the output (the CLI batches them and waits while the pipe is full).
 */
import { PROTOCOLS } from '../../model/types.ts';
import { containsPorts, formatPortSet, isNoPorts, type PortSet } from '../../semantics/index.ts';
import type { IpFamily } from '../../net/ip.ts';
import type { Matrix, MatrixRow } from '../types.ts';
import { outsideAllows, type OutsideClass } from '../outside.ts';
import type { IngressControllerPeer } from '../ingress-controller.ts';
import type { Style } from './style.ts';
import { portListText } from './ports-text.ts';
import { addressLabel, controllerLines, outsideLines, somePodsOnly } from './matrix-address-rows.ts';

/** What a matrix's answer says besides its cells. */
interface MatrixExtras {
  /** The input holds policy the answer does not include (cli/common.ts `notEvaluated`). */
  readonly notEvaluated?: { readonly objects: readonly string[]; readonly note: string };
  /** Connections with the addresses outside the cluster (outside.ts), listed after the rows'. */
  readonly outside?: readonly OutsideClass[];
  /** They were left out at this size (JSON says so: `"addressesLeftOut": true`). */
  readonly addressesLeftOut?: boolean;
  /** The ingress controller (ingress-controller.ts): per row, the ports it may open there; listed last. */
  readonly ingressController?: IngressControllerPeer;
}

/**
 * A matrix answer's extras, each only when there is something to say (small answers keep their
 * shape); `outside` undefined: the ranges were left out at this size. `matrix` and serve's
 * `/api/matrix` answer alike through it.
 */
export function matrixExtras(parts: {
  readonly notEvaluated: MatrixExtras['notEvaluated'];
  readonly outside: readonly OutsideClass[] | undefined;
  readonly ingressController: IngressControllerPeer | undefined;
}): MatrixExtras {
  const { notEvaluated, outside, ingressController } = parts;
  return {
    ...(notEvaluated ? { notEvaluated } : {}),
    ...(outside && outside.length > 0 ? { outside } : {}),
    ...(outside === undefined ? { addressesLeftOut: true } : {}),
    ...(ingressController ? { ingressController } : {}),
  };
}

export type MatrixWriter = (matrix: Matrix, style: Style, extras?: MatrixExtras) => Iterable<string>;

const queryLabel = (matrix: Matrix, q: number): string => {
  const query = matrix.queries[q];
  return query ? `${query.protocol}/${query.port}` : '';
};

/** Characters per line of the text table of these rows (labels, three per cell, the row number). */
export function textTableWidth(rows: readonly MatrixRow[]): number {
  const n = rows.length;
  return labelWidth(rows) + 2 + 3 * n + 2 + String(n).length;
}

function labelWidth(rows: readonly MatrixRow[]): number {
  return rows.reduce((widest, r) => Math.max(widest, r.label.length), 4);
}

/**
 * Dual-stack: the one family a cell is allowed over when the other denies it (the combined
 * answer is then "denied": every family must allow); undefined when the families agree.
 */
function allowedOnlyOver(matrix: Matrix, from: number, to: number, q: number): IpFamily | undefined {
  if (!matrix.overFamily) return undefined;
  const v4 = matrix.overFamily(from, to, q, 4);
  const v6 = matrix.overFamily(from, to, q, 6);
  if (v4 === undefined || v6 === undefined || v4 === v6) return undefined;
  return v4 ? 4 : 6;
}

/** Dual-stack, port-set mode: each family's ports where the two families allow different ones. */
function portsPerFamily(matrix: Matrix, from: number, to: number): { 4: PortSet; 6: PortSet } | undefined {
  const v4 = matrix.portsOverFamily?.(from, to, 4);
  const v6 = matrix.portsOverFamily?.(from, to, 6);
  if (!v4 || !v6 || (containsPorts(v4, v6) && containsPorts(v6, v4))) return undefined;
  return { 4: v4, 6: v6 };
}

const portsText = (ports: PortSet): string => (isNoPorts(ports) ? 'none' : portListText(ports));

function* text(matrix: Matrix, style: Style, extras: MatrixExtras = {}): Iterable<string> {
  yield* textTable(matrix, style, extras.outside ?? [], extras.ingressController);
  if (extras.notEvaluated) yield style.warn(`note: ${extras.notEvaluated.note}\n`);
}

function* textTable(
  matrix: Matrix,
  style: Style,
  outside: readonly OutsideClass[],
  controller: IngressControllerPeer | undefined,
): Iterable<string> {
  const ids = matrix.rows.map((r) => r.label);
  if (matrix.queries.length === 0) {
    let connected = 0;
    // Only the pairs that may connect are printed: visit only the rows each row may reach.
    for (const [from, to, ports, f, t] of portSetLines(matrix, true)) {
      const perFamily = portsPerFamily(matrix, f, t);
      if (perFamily) {
        connected++;
        yield `${from} → ${to}: ${portsText(perFamily[4])} over IPv4, ${portsText(perFamily[6])} over IPv6\n`;
        continue;
      }
      const partial = matrix.partialPorts?.(f, t);
      if (isNoPorts(ports) && !partial) continue;
      connected++;
      const every = isNoPorts(ports) ? 'none for every pod pair' : portListText(ports);
      const some = partial ? `; ${portListText(partial.ports)} for ${partial.where}` : '';
      yield `${from} → ${to}: ${every}${some}\n`;
    }
    let reaching = 0;
    let reachingSome = 0;
    for (const [from, to, ports, r, c, outward] of outsideLines(matrix, outside)) {
      const partial = somePodsOnly(c, r, outward, ports);
      if (isNoPorts(ports) && !partial) continue;
      reaching++;
      if (isNoPorts(ports)) reachingSome++;
      const every = isNoPorts(ports) ? 'none for every pod' : portListText(ports);
      yield `${from} → ${to}: ${every}${partial ? `; ${portListText(partial)} for some pods only` : ''}\n`;
    }
    let forwarded = 0;
    for (const [from, to, ports] of controllerLines(matrix, controller)) {
      if (isNoPorts(ports)) continue;
      forwarded++;
      yield `${from} → ${to}: ${portListText(ports)}\n`;
    }
    const pairs = ids.length * ids.length;
    yield style.dim(
      pairs === 0
        ? '\nno pods in the matrix: nothing to connect\n'
        : connected === pairs
          ? `\n${pairs === 1 ? 'the one ordered pair (a self pair) can' : `all ${pairs} ordered pairs (self pairs included) can`} connect\n`
          : `\n${connected} of ${pairs} ordered pairs (self pairs included) can connect; the others are denied on every port\n`,
    );
    if (pairs > 0 && outside.length > 0)
      yield style.dim(
        `${reaching} of ${2 * ids.length * outside.length} connections with address ranges outside the cluster are allowed on some port${reachingSome > 0 ? ` (${reachingSome} for some pods only)` : ''}\n`,
      );
    if (pairs > 0 && controller)
      yield style.dim(
        `the ingress controller reaches ${forwarded} of ${ids.length} rows on a port an Ingress or Route forwards to\n`,
      );
    return;
  }
  const labels = [...ids, ...outside.map(addressLabel), ...(controller ? [controller.label] : [])];
  const width = labels.reduce((widest, label) => Math.max(widest, label.length), 4);
  const allowed = style.ok('  .');
  const denied = style.bad('  X');
  const partial = style.warn('  ~');
  const none = style.dim('  -');
  const onlyOver = { 4: style.warn('  4'), 6: style.warn('  6') };
  let anyPartial = false;
  /** A `~` between a row and an address range: some pods of the row, not pairs. */
  let anyPartialPods = false;
  const anyOnlyOver = new Set<IpFamily>();
  // Columns are destinations: the endpoints and the ranges (the ingress controller is a source only).
  const header = labels
    .slice(0, ids.length + outside.length)
    .map((_, i) => String(i + 1).padStart(3))
    .join('');
  for (let q = 0; q < matrix.queries.length; q++) {
    if (q > 0) yield '\n';
    yield `${queryLabel(matrix, q).padEnd(width)}  ${header}\n`;
    // An address cell is `~` where some pods of the row have the connection and others not.
    const addressCell = (every: PortSet, some: PortSet, row: number | undefined): string => {
      if (outsideAllows(matrix, every, q, row)) return allowed;
      if (some === every || !outsideAllows(matrix, some, q, row)) return denied;
      anyPartialPods = true;
      return partial;
    };
    for (let from = 0; from < ids.length; from++) {
      let cells = '';
      for (let to = 0; to < ids.length; to++) {
        const family = matrix.allowed(from, to, q) ? undefined : allowedOnlyOver(matrix, from, to, q);
        if (matrix.allowed(from, to, q)) cells += allowed;
        else if (family !== undefined) {
          cells += onlyOver[family];
          anyOnlyOver.add(family);
        } else if (matrix.partial?.(from, to, q) === undefined) cells += denied;
        else {
          cells += partial;
          anyPartial = true;
        }
      }
      for (const c of outside)
        cells += addressCell(c.out[from] as PortSet, c.outSome[from] as PortSet, undefined);
      yield `${(ids[from] as string).padEnd(width)}  ${cells}  ${style.dim(String(from + 1))}\n`;
    }
    for (let i = 0; i < outside.length; i++) {
      const c = outside[i] as OutsideClass;
      let cells = '';
      for (let to = 0; to < ids.length; to++)
        cells += addressCell(c.into[to] as PortSet, c.intoSome[to] as PortSet, to);
      cells += none.repeat(outside.length);
      yield `${addressLabel(c).padEnd(width)}  ${cells}  ${style.dim(String(ids.length + i + 1))}\n`;
    }
    if (controller) {
      // A source only: no column (where it forwards is what Ingress objects say, not a question).
      let cells = '';
      for (let to = 0; to < ids.length; to++)
        cells += outsideAllows(matrix, controller.into[to] as PortSet, q, to) ? allowed : denied;
      cells += none.repeat(outside.length);
      yield `${controller.label.padEnd(width)}  ${cells}  ${style.dim(String(ids.length + outside.length + 1))}\n`;
    }
  }
  const partialLegend =
    anyPartial && anyPartialPods
      ? '  ~ some pod pairs (with an address range: some pods) only'
      : anyPartial
        ? '  ~ some pod pairs only'
        : anyPartialPods
          ? '  ~ some pods only'
          : '';
  const familyLegend = [...anyOnlyOver]
    .sort()
    .map((f) => `  ${f} allowed over IPv${f} only (denied over IPv${f === 4 ? 6 : 4})`)
    .join('');
  const addressLegend = outside.length > 0 ? '  - no question (outside to outside)' : '';
  const controllerLegend = controller
    ? `; ${controller.label}: the ingress controller, on the ports Ingress and Route objects forward to`
    : '';
  yield style.dim(
    `\n. allowed  X denied${partialLegend}${familyLegend}${addressLegend}; rows are sources, columns destinations (numbered as the rows)${controllerLegend}\n`,
  );
  for (const c of outside)
    if (addressLabel(c) !== c.label) yield style.dim(`${addressLabel(c)}: ${c.label}\n`);
}

function* json(matrix: Matrix, _style: Style, extras: MatrixExtras = {}): Iterable<string> {
  yield '{"results":[';
  let separator = '\n';
  if (matrix.queries.length === 0) {
    for (const [, , ports, f, t] of portSetLines(matrix)) {
      const from = matrix.rows[f] as MatrixRow;
      const to = matrix.rows[t] as MatrixRow;
      const partial = matrix.partialPorts?.(f, t);
      const perFamily = portsPerFamily(matrix, f, t);
      yield (
        separator +
        JSON.stringify({
          from: from.id,
          to: to.id,
          allowed: !isNoPorts(ports),
          ports: portsJson(ports),
          ...(partial ? { partialPorts: portsJson(partial.ports), partial: partial.where } : {}),
          fromKind: from.kind,
          toKind: to.kind,
          ...(perFamily
            ? {
                byFamily: ([4, 6] as const).map((family) => ({
                  family,
                  allowed: !isNoPorts(perFamily[family]),
                  ports: portsJson(perFamily[family]),
                })),
              }
            : {}),
        })
      );
      separator = ',\n';
    }
  } else {
    // One row of sources at a time: the ids are quoted once, not once per cell. `from` and `to`
    // are `ns/name` (the contract); the kinds say what each names.
    const ids = matrix.rows.map((r) => JSON.stringify(r.id));
    const kinds = matrix.rows.map((r) => JSON.stringify(r.kind));
    const columns = matrix.queries.map(
      (query) =>
        `,"port":${JSON.stringify(query.port)},"protocol":${JSON.stringify(query.protocol)},"allowed":`,
    );
    for (let f = 0; f < ids.length; f++) {
      let row = '';
      const from = `{"from":${ids[f] as string},"to":`;
      const fromKind = `,"fromKind":${kinds[f] as string},"toKind":`;
      for (let t = 0; t < ids.length; t++)
        for (let q = 0; q < columns.length; q++) {
          const partial = matrix.partial?.(f, t, q);
          const partialField = partial === undefined ? '' : `,"partial":${JSON.stringify(partial)}`;
          const only = matrix.overFamily && allowedOnlyOver(matrix, f, t, q);
          const familyField =
            only === undefined
              ? ''
              : `,"byFamily":[{"family":4,"allowed":${only === 4}},{"family":6,"allowed":${only === 6}}]`;
          row += `${separator}${from}${ids[t] as string}${columns[q] as string}${matrix.allowed(f, t, q)}${partialField}${fromKind}${kinds[t] as string}${familyField}}`;
          separator = ',\n';
        }
      yield row;
    }
  }
  yield '\n]';
  // Beside `results`, whose entries stay pairs of rows: the address ranges outside the cluster.
  const outside = extras.outside ?? [];
  if (outside.length > 0) {
    yield ',"addresses":[';
    let comma = '\n';
    for (const [from, to, ports, r, , outward] of outsideLines(matrix, outside)) {
      const row = matrix.rows[r] as MatrixRow;
      const ends = outward
        ? { from: row.id, to, fromKind: row.kind, toKind: 'Addresses' }
        : { from, to: row.id, fromKind: 'Addresses', toKind: row.kind };
      if (matrix.queries.length === 0)
        yield `${comma}${JSON.stringify({ from: ends.from, to: ends.to, allowed: !isNoPorts(ports), ports: portsJson(ports), fromKind: ends.fromKind, toKind: ends.toKind })}`;
      else
        yield matrix.queries
          .map(
            (query, q) =>
              `${q === 0 ? comma : ',\n'}${JSON.stringify({ from: ends.from, to: ends.to, port: query.port, protocol: query.protocol, allowed: outsideAllows(matrix, ports, q, outward ? undefined : r), fromKind: ends.fromKind, toKind: ends.toKind })}`,
          )
          .join('');
      comma = ',\n';
    }
    yield '\n]';
  }
  // Only past the few seconds' work the ranges may take: every other answer keeps its shape.
  if (extras.addressesLeftOut) yield ',"addressesLeftOut":true';
  // Only for inputs with Ingress or Route objects: every other answer keeps its shape.
  const controller = extras.ingressController;
  if (controller) {
    yield ',"ingressController":[';
    let comma = '\n';
    for (const [from, , ports, r] of controllerLines(matrix, controller)) {
      const row = matrix.rows[r] as MatrixRow;
      const ends = { from, to: row.id };
      const kinds = { fromKind: 'IngressController', toKind: row.kind };
      if (matrix.queries.length === 0)
        yield `${comma}${JSON.stringify({ ...ends, allowed: !isNoPorts(ports), ports: portsJson(ports), ...kinds })}`;
      else
        yield matrix.queries
          .map(
            (query, q) =>
              `${q === 0 ? comma : ',\n'}${JSON.stringify({ ...ends, port: query.port, protocol: query.protocol, allowed: outsideAllows(matrix, ports, q, r), ...kinds })}`,
          )
          .join('');
      comma = ',\n';
    }
    yield '\n]';
  }
  // Only when there is something to say: the shape of every other answer is unchanged.
  if (extras.notEvaluated) yield `,"notEvaluated":${JSON.stringify(extras.notEvaluated.objects)}`;
  yield '}\n';
}

function* csv(matrix: Matrix, _style: Style, extras: MatrixExtras = {}): Iterable<string> {
  const ids = matrix.rows.map((r) => r.label);
  const outside = extras.outside ?? [];
  if (matrix.queries.length === 0) {
    yield 'from,to,ports\n';
    for (const [from, to, ports] of portSetLines(matrix)) yield `${from},${to},"${formatPortSet(ports)}"\n`;
    for (const [from, to, ports] of outsideLines(matrix, outside))
      yield `${csvField(from)},${csvField(to)},"${formatPortSet(ports)}"\n`;
    for (const [from, to, ports] of controllerLines(matrix, extras.ingressController))
      yield `${from},${to},"${formatPortSet(ports)}"\n`;
    return;
  }
  // Dual-stack matrices gain a column per family (empty where the pair does not share it).
  const overFamily = matrix.overFamily;
  yield `from,to,port,protocol,allowed${overFamily ? ',ipv4,ipv6' : ''}\n`;
  for (let f = 0; f < ids.length; f++) {
    let row = '';
    for (let t = 0; t < ids.length; t++)
      matrix.queries.forEach((query, q) => {
        const families = overFamily ? `,${overFamily(f, t, q, 4) ?? ''},${overFamily(f, t, q, 6) ?? ''}` : '';
        row += `${ids[f] as string},${ids[t] as string},${query.port},${query.protocol},${matrix.allowed(f, t, q)}${families}\n`;
      });
    yield row;
  }
  const families = overFamily ? ',,' : '';
  for (const [from, to, ports, r, , outward] of outsideLines(matrix, outside))
    yield matrix.queries
      .map(
        (query, q) =>
          `${csvField(from)},${csvField(to)},${query.port},${query.protocol},${outsideAllows(matrix, ports, q, outward ? undefined : r)}${families}\n`,
      )
      .join('');
  for (const [from, to, ports, r] of controllerLines(matrix, extras.ingressController))
    yield matrix.queries
      .map(
        (query, q) =>
          `${from},${to},${query.port},${query.protocol},${outsideAllows(matrix, ports, q, r)}${families}\n`,
      )
      .join('');
}

/** A CSV field, quoted when it holds a comma (address ranges do). */
function csvField(text: string): string {
  return text.includes(',') ? `"${text}"` : text;
}

function* md(matrix: Matrix, _style: Style, extras: MatrixExtras = {}): Iterable<string> {
  yield* mdTable(matrix, extras.outside ?? [], extras.ingressController);
  if (extras.notEvaluated) yield `\n_note: ${extras.notEvaluated.note}_\n`;
}

function* mdTable(
  matrix: Matrix,
  outside: readonly OutsideClass[],
  controller: IngressControllerPeer | undefined,
): Iterable<string> {
  const ids = matrix.rows.map((r) => r.label);
  if (matrix.queries.length === 0) {
    yield '| from | to | allowed ports |\n|---|---|---|\n';
    for (const [from, to, ports] of portSetLines(matrix))
      yield `| ${from} | ${to} | ${portListText(ports)} |\n`;
    for (const [from, to, ports] of outsideLines(matrix, outside))
      yield `| ${from} | ${to} | ${portListText(ports)} |\n`;
    for (const [from, to, ports] of controllerLines(matrix, controller))
      yield `| ${from} | ${to} | ${portListText(ports)} |\n`;
    return;
  }
  const columns = [...ids, ...outside.map((c) => c.label)];
  for (let q = 0; q < matrix.queries.length; q++) {
    if (q > 0) yield '\n';
    yield `| ${queryLabel(matrix, q)} | ${columns.join(' | ')} |\n|---|${columns.map(() => ':-:').join('|')}|\n`;
    for (let f = 0; f < ids.length; f++) {
      let cells = '';
      for (let t = 0; t < ids.length; t++) {
        const only = matrix.allowed(f, t, q) ? undefined : allowedOnlyOver(matrix, f, t, q);
        cells += matrix.allowed(f, t, q) ? ' ✓ |' : only ? ` IPv${only} only |` : ' ✗ |';
      }
      for (const c of outside)
        cells += outsideAllows(matrix, c.out[f] as PortSet, q, undefined) ? ' ✓ |' : ' ✗ |';
      yield `| ${ids[f] as string} |${cells}\n`;
    }
    for (const c of outside) {
      let cells = '';
      for (let t = 0; t < ids.length; t++)
        cells += outsideAllows(matrix, c.into[t] as PortSet, q, t) ? ' ✓ |' : ' ✗ |';
      cells += ' – |'.repeat(outside.length);
      yield `| ${c.label} |${cells}\n`;
    }
    if (controller) {
      let cells = '';
      for (let t = 0; t < ids.length; t++)
        cells += outsideAllows(matrix, controller.into[t] as PortSet, q, t) ? ' ✓ |' : ' ✗ |';
      cells += ' – |'.repeat(outside.length);
      yield `| ${controller.label} |${cells}\n`;
    }
  }
}

/**
 * Every ordered pair's allowed ports, with the rows' labels and indexes — or, `connectedOnly`,
 * the pairs that may connect (where the matrix can tell which rows a row reaches, only those
 * are visited: a listing of a sparse matrix costs its lines, not the square of its rows).
 */
function* portSetLines(
  matrix: Matrix,
  connectedOnly = false,
): Iterable<[string, string, PortSet, number, number]> {
  const ids = matrix.rows.map((r) => r.label);
  const all = ids.map((_, i) => i);
  for (let f = 0; f < ids.length; f++) {
    const targets = connectedOnly && matrix.reachedRows ? matrix.reachedRows(f) : all;
    for (const t of targets) yield [ids[f] as string, ids[t] as string, matrix.ports(f, t), f, t];
  }
}

function portsJson(ports: PortSet): Record<string, [number, number][]> {
  const result: Record<string, [number, number][]> = {};
  for (const p of PROTOCOLS) if (ports.ranges[p].length) result[p] = ports.ranges[p].map(([a, b]) => [a, b]);
  return result;
}

export const MATRIX_FORMATS: Readonly<Record<string, MatrixWriter>> = { text, json, csv, md };
