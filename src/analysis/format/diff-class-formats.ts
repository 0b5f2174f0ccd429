/**
 * `diff --by class` outputs: the lines of `diff` with classes of the two inputs for endpoints
 * (text, CSV, Markdown: as `diff` writes them, then how many endpoint pairs the lines stand for),
 * and JSON as its own versioned shape (`"format": "palisade.diff.classes/v1"`, docs/OUTPUTS.md):
 * the classes the lines name, with every member, then the connections with their `pairs`.
 */
import type { ClassDiff } from '../diff/classes.ts';
import type { DiffPeer } from '../diff/types.ts';
import { endpointRow } from '../workload-view.ts';
import { DIFF_FORMATS, diffJson } from './diff-formats.ts';
import type { Style } from './style.ts';

/** The version of the JSON shape; a change that breaks readers gets a new one. */
export const DIFF_CLASSES_JSON_FORMAT = 'palisade.diff.classes/v1';

export type ClassDiffWriter = (classes: ClassDiff, write: (chunk: string) => void, style: Style) => void;

const count = (n: number): string => n.toLocaleString('en-US');

const perPairs =
  (format: 'text' | 'md' | 'csv'): ClassDiffWriter =>
  (classes, write, style) => {
    // Text, CSV and Markdown are written at once (only the graph writers wait).
    void DIFF_FORMATS[format]?.(classes.diff, write, style, {});
    if (format === 'csv' || classes.diff.connections.length === 0) return;
    const lines = classes.diff.connections.length;
    write(
      style.dim(
        `${count(lines)} ${lines === 1 ? 'line stands' : 'lines stand'} for ${count(classes.endpointPairs)} ` +
          `endpoint pairs, by classes of endpoints no policy tells apart in either input (--by pod for each pair)\n`,
      ),
    );
  };

const json: ClassDiffWriter = (classes, write) => {
  const doc = diffJson(classes.diff);
  const named = new Set<string>();
  const note = (p: DiffPeer): void => {
    if (p.type === 'endpoint' && p.kind === 'Class') named.add(p.id);
  };
  for (const c of classes.diff.connections) {
    note(c.from);
    note(c.to);
  }
  for (const p of [...classes.diff.endpoints.added, ...classes.diff.endpoints.removed]) note(p);
  const listed = classes.rows
    .filter((r) => named.has(r.id))
    .map((r) => ({
      id: r.id,
      label: r.label,
      namespace: r.namespace,
      size: r.members.length,
      members: r.members.map((m) => endpointRow(m).label),
    }));
  const list = (items: readonly unknown[]): string =>
    items.length ? `[\n${items.map((item) => JSON.stringify(item)).join(',\n')}\n]` : '[]';
  write(
    `{"format":${JSON.stringify(DIFF_CLASSES_JSON_FORMAT)},\n"classes":${list(listed)},\n` +
      `"endpoints":${JSON.stringify(doc.endpoints)},\n"objects":${list(doc.objects)},\n` +
      `"connections":${list(doc.connections.map((c, i) => ({ ...c, pairs: classes.pairs[i] })))},\n` +
      `"summary":${JSON.stringify({ ...doc.summary, endpointPairs: classes.endpointPairs })}}\n`,
  );
};

export const DIFF_CLASS_FORMATS: Readonly<Record<string, ClassDiffWriter>> = {
  text: perPairs('text'),
  csv: perPairs('csv'),
  md: perPairs('md'),
  json,
};
