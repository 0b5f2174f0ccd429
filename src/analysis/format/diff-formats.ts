/**
 * `palisade diff` outputs, one writer each, registered by name: text for people, JSON (the
 * documented data), CSV and Markdown tables. The graph outputs (dot, svg, html) are in
 * graph-formats.ts.
 */
import { formatPortSet, type PortSet } from '../../semantics/index.ts';
import type { ConnectionChange, ConnectivityDiff, DiffPeer } from '../diff/types.ts';
import { diffGraph, type GroupBy } from '../graph/graph.ts';
import { GRAPH_FORMATS, writeGraph } from './graph-formats.ts';
import { portSetJson } from './ports-json.ts';
import type { Style } from './style.ts';

/** How a diff is drawn (graph formats only). */
interface DiffWriterOptions {
  readonly groupBy?: GroupBy;
}

/** Writes a diff; graph writers (which lay out with WebAssembly) are asynchronous. */
type DiffWriter = (
  diff: ConnectivityDiff,
  write: (chunk: string) => void,
  style: Style,
  options: DiffWriterOptions,
) => void | Promise<void>;

const peerKind = (p: DiffPeer): string => (p.type === 'endpoint' ? p.kind : 'Addresses');

/** `none` for nothing at all; ports only some pod pairs may use are added in brackets. */
function side(every: PortSet, partial: PortSet | undefined): string {
  const base = formatPortSet(every);
  if (!partial) return base;
  const some = `${formatPortSet(partial)} for some pod pairs`;
  return base === 'none' ? `(${some})` : `${base} (+ ${some})`;
}

/** `TCP 80` for an added connection, `TCP 80` → `TCP 80,443` for a changed one. */
function portsText(c: ConnectionChange, arrow = '→'): string {
  const before = side(c.before, c.partialBefore);
  const after = side(c.after, c.partialAfter);
  if (c.change === 'added') return after;
  if (c.change === 'removed') return before;
  return `${before} ${arrow} ${after}`;
}

function summary(diff: ConnectivityDiff): { added: number; removed: number; changed: number } {
  const count = (kind: ConnectionChange['change']): number =>
    diff.connections.filter((c) => c.change === kind).length;
  return { added: count('added'), removed: count('removed'), changed: count('changed') };
}

const text: DiffWriter = (diff, write, style) => {
  const list = (peers: readonly DiffPeer[]): string => peers.map((p) => p.label).join(', ');
  if (diff.endpoints.added.length) write(`endpoints added: ${list(diff.endpoints.added)}\n`);
  if (diff.endpoints.removed.length) write(`endpoints removed: ${list(diff.endpoints.removed)}\n`);
  if (diff.endpoints.added.length || diff.endpoints.removed.length) write('\n');
  let width = 0;
  for (const c of diff.connections) width = Math.max(width, `${c.from.label} → ${c.to.label}`.length);
  for (const c of diff.connections) {
    const word =
      c.change === 'added'
        ? style.ok('added  ')
        : c.change === 'removed'
          ? style.bad('removed')
          : style.warn('changed');
    const pair = `${c.from.label} → ${c.to.label}`.padEnd(width);
    const why = c.causes.length ? style.dim(`  (${c.causes.join(', ')})`) : '';
    write(`${word} ${pair}  ${portsText(c)}${why}\n`);
  }
  const s = summary(diff);
  const total = s.added + s.removed + s.changed;
  write(
    total === 0
      ? 'no connection differs\n'
      : `\n${total} ${total === 1 ? 'connection differs' : 'connections differ'}: ${s.added} added, ${s.removed} removed, ${s.changed} changed\n`,
  );
};

/** A changed endpoint or address range in a diff's JSON document. */
interface DiffPeerJson {
  readonly id: string;
  readonly kind: string;
  readonly namespace?: string;
}

/** A diff's JSON document (`palisade diff -o json`, and serve's `/api/diff`). */
interface DiffDocument {
  readonly endpoints: { readonly added: readonly DiffPeerJson[]; readonly removed: readonly DiffPeerJson[] };
  readonly objects: readonly {
    readonly object: string;
    readonly change: ConnectivityDiff['objects'][number]['change'];
    readonly fields?: readonly string[];
    readonly file?: string;
    readonly line?: number;
    readonly column?: number;
  }[];
  readonly connections: readonly {
    readonly from: string;
    readonly fromKind: string;
    readonly to: string;
    readonly toKind: string;
    readonly change: ConnectionChange['change'];
    readonly before: string;
    readonly after: string;
    readonly beforePorts: Record<string, [number, number][]>;
    readonly afterPorts: Record<string, [number, number][]>;
    readonly partialBefore?: Record<string, [number, number][]>;
    readonly partialAfter?: Record<string, [number, number][]>;
    readonly causes: readonly string[];
  }[];
  readonly summary: { readonly added: number; readonly removed: number; readonly changed: number };
}

/** The JSON document of a diff, as docs/commands/diff.md documents it. */
export function diffJson(diff: ConnectivityDiff): DiffDocument {
  const peer = (p: DiffPeer): DiffPeerJson => ({
    id: p.id,
    kind: peerKind(p),
    ...(p.type === 'endpoint' ? { namespace: p.namespace } : {}),
  });
  return {
    endpoints: { added: diff.endpoints.added.map(peer), removed: diff.endpoints.removed.map(peer) },
    objects: diff.objects.map((o) => ({
      object: o.object,
      change: o.change,
      ...(o.fields ? { fields: o.fields } : {}),
      ...(o.location ? { file: o.location.file, line: o.location.line, column: o.location.column } : {}),
    })),
    connections: diff.connections.map((c) => ({
      from: c.from.id,
      fromKind: peerKind(c.from),
      to: c.to.id,
      toKind: peerKind(c.to),
      change: c.change,
      before: formatPortSet(c.before),
      after: formatPortSet(c.after),
      beforePorts: portSetJson(c.before),
      afterPorts: portSetJson(c.after),
      ...(c.partialBefore ? { partialBefore: portSetJson(c.partialBefore) } : {}),
      ...(c.partialAfter ? { partialAfter: portSetJson(c.partialAfter) } : {}),
      causes: c.causes,
    })),
    summary: summary(diff),
  };
}

/** One object or connection per line: readable, and diffable itself. */
const json: DiffWriter = (diff, write) => {
  const doc = diffJson(diff);
  const list = (items: readonly unknown[]): string =>
    items.length ? `[\n${items.map((item) => JSON.stringify(item)).join(',\n')}\n]` : '[]';
  write(
    `{"endpoints":${JSON.stringify(doc.endpoints)},\n"objects":${list(doc.objects)},\n` +
      `"connections":${list(doc.connections)},\n"summary":${JSON.stringify(doc.summary)}}\n`,
  );
};

const csvField = (value: string): string => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

const csv: DiffWriter = (diff, write) => {
  write('from,to,change,before,after,causes\n');
  const ports = (p: PortSet): string => formatPortSet(p);
  for (const c of diff.connections)
    write(
      [c.from.label, c.to.label, c.change, ports(c.before), ports(c.after), c.causes.join(' ')]
        .map(csvField)
        .join(',') + '\n',
    );
};

const md: DiffWriter = (diff, write) => {
  write('| from | to | change | before | after | because of |\n|---|---|---|---|---|---|\n');
  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  for (const c of diff.connections)
    write(
      `| ${cell(c.from.label)} | ${cell(c.to.label)} | ${c.change} | ${side(c.before, c.partialBefore)} | ${side(c.after, c.partialAfter)} | ${cell(c.causes.join(', '))} |\n`,
    );
};

const LEGEND = 'Green: connections added; red, dashed: removed; amber: ports changed (before → after).';

const graphWriters = Object.fromEntries(
  GRAPH_FORMATS.map((format): [string, DiffWriter] => [
    format,
    async (diff, write, _style, options) =>
      write(
        await writeGraph(
          diffGraph(diff, options.groupBy ? { groupBy: options.groupBy } : {}),
          format,
          LEGEND,
        ),
      ),
  ]),
);

export const DIFF_FORMATS: Readonly<Record<string, DiffWriter>> = { text, json, csv, md, ...graphWriters };
