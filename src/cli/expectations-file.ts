/**
 * Reads an expectations file for `palisade assert`: a YAML list of
 * `{from, to, port, protocol?, allowed}` (port a number, a named port, or `53/UDP`). Every problem
 * is reported with its line and column; one bad entry does not hide the others.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { FILE_SPELLING, parsePortQuery, type Expectation, type PortQuery } from '../analysis/index.ts';
import { misplacedTab, tabMessage, type DocumentText } from '../ingest/index.ts';
import { readFile } from 'node:fs/promises';
import { closest } from '../util/closest.ts';
import { fileErrorText } from './file-error.ts';
import { UsageError } from './io.ts';

const FIELDS = ['from', 'to', 'port', 'protocol', 'allowed'];

interface ExpectationsFile {
  readonly expectations: Expectation[];
  /** `file:line:column: message` for each problem. */
  readonly problems: string[];
}

export function parseExpectations(file: string, text: string): ExpectationsFile {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true });
  const found: { line: number; column: number; message: string }[] = [];
  // In the file's order, whichever check found them first.
  const problems = (): string[] =>
    found
      .sort((a, b) => a.line - b.line || a.column - b.column)
      .map((p) => `${file}:${p.line}:${p.column}: ${p.message}`);
  const at = (node: Node | null | undefined): { line: number; column: number } => {
    const offset = node?.range?.[0] ?? 0;
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, column: pos.col };
  };
  const problem = (node: Node | null | undefined, message: string): void => {
    found.push({ ...at(node), message });
  };
  const tab =
    doc.errors.length > 0
      ? misplacedTab(wholeFile(file, text, lineCounter), doc, firstError(doc))
      : undefined;
  if (tab !== undefined) {
    // The parser's errors are what follows from the tab (three or more for one tab).
    const { line, col } = lineCounter.linePos(tab);
    found.push({ line, column: col, message: tabMessage(line) });
    return { expectations: [], problems: problems() };
  }
  for (const error of doc.errors) {
    const pos = lineCounter.linePos(error.pos[0]);
    // The parser's first line repeats the place ("… at line 1, column 5:"), which the prefix gives.
    const said = (error.message.split('\n')[0] ?? 'YAML error').replace(/ at line \d+, column \d+:?$/, '');
    // The parser's own wording for a second document names its API, not the user's fix.
    const message =
      error.code === 'MULTIPLE_DOCS'
        ? 'a second YAML document (after ---): give every expectation in one list'
        : said;
    found.push({ line: pos.line, column: pos.col, message });
  }
  if (doc.errors.length) return { expectations: [], problems: problems() };
  const root = doc.contents;
  if (!isSeq(root)) {
    problem(root, 'expected a list of expected connections (- from: …, to: …, port: …, allowed: true|false)');
    return { expectations: [], problems: problems() };
  }
  const expectations: Expectation[] = [];
  root.items.forEach((item, i) => {
    const node = item as Node;
    if (!isMap(item)) {
      problem(node, `entry ${i + 1} is not a mapping`);
      return;
    }
    const values = new Map<string, { value: unknown; node: Node }>();
    for (const pair of item.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : '';
      const valueNode = (pair.value ?? pair.key) as Node;
      if (!FIELDS.includes(key)) {
        const near = closest(key, FIELDS);
        problem(pair.key, `unknown field "${key}"${near ? ` (did you mean "${near}"?)` : ''}`);
        continue;
      }
      values.set(key, { value: isScalar(pair.value) ? pair.value.value : pair.value, node: valueNode });
    }
    const text = (key: string): string | undefined => {
      const entry = values.get(key);
      if (!entry) {
        problem(node, `entry ${i + 1} needs "${key}"`);
        return undefined;
      }
      if (typeof entry.value !== 'string' || entry.value === '') {
        problem(entry.node, `"${key}" must be ns/name, ns/name[Kind] or an IP address`);
        return undefined;
      }
      return entry.value;
    };
    const from = text('from');
    const to = text('to');
    const allowedEntry = values.get('allowed');
    if (!allowedEntry) problem(node, `entry ${i + 1} needs "allowed: true" or "allowed: false"`);
    else if (typeof allowedEntry.value !== 'boolean')
      problem(allowedEntry.node, '"allowed" must be true or false');
    const port = parsePort(values.get('port'), values.get('protocol'), (n, m) => problem(n ?? node, m));
    if (from && to && port && typeof allowedEntry?.value === 'boolean') {
      const { line, column } = at(node);
      expectations.push({ from, to, ...port, allowed: allowedEntry.value, location: { file, line, column } });
    }
  });
  return { expectations, problems: problems() };
}

/** The file as the YAML syntax checks see a document: the whole of it. */
function wholeFile(file: string, text: string, lineCounter: LineCounter): DocumentText {
  const position = (offset: number): { file: string; line: number; column: number } => {
    const { line, col } = lineCounter.linePos(offset);
    return { file, line, column: col };
  };
  return { text, start: 0, end: text.length, base: 0, lineStarts: lineCounter.lineStarts, position };
}

function firstError(doc: Document): number {
  let first = Infinity;
  for (const error of doc.errors) first = Math.min(first, error.pos[0]);
  return first;
}

function parsePort(
  port: { value: unknown; node: Node } | undefined,
  protocol: { value: unknown; node: Node } | undefined,
  problem: (node: Node | undefined, message: string) => void,
): (PortQuery & { protocolApart?: true }) | undefined {
  if (!port) {
    problem(undefined, 'every entry needs "port" (a number, a named port, or 53/UDP)');
    return undefined;
  }
  // A number or a string is read as written (`port: 80`, `port: dns`); anything else is named,
  // not turned into text (an empty `port:` was read as a port named "null", `true` as "true").
  const shape = ({ value }: { value: unknown }): string | undefined =>
    isMap(value)
      ? 'a mapping'
      : isSeq(value)
        ? 'a list'
        : value === null || value === undefined
          ? 'empty'
          : typeof value === 'boolean'
            ? `the boolean ${value}`
            : undefined;
  const portShape = shape(port);
  if (portShape) {
    problem(port.node, `"port" must be a number, a port name or 53/UDP, not ${portShape}`);
    return undefined;
  }
  const protocolShape = protocol && shape(protocol);
  if (protocol && protocolShape) {
    problem(protocol.node, `"protocol" must be TCP, UDP or SCTP, not ${protocolShape}`);
    return undefined;
  }
  const protocolText = protocol === undefined ? undefined : String(protocol.value);
  const parsed = parsePortQuery(String(port.value), {
    ...(protocolText !== undefined ? { protocol: protocolText } : {}),
    spelling: FILE_SPELLING,
  });
  if (parsed.ok) return { ...parsed.query, ...(protocol ? { protocolApart: true } : {}) };
  problem(parsed.field === 'protocol' && protocol ? protocol.node : port.node, parsed.message);
  return undefined;
}

/** The expectations of `--expect FILE` (assert, suggest); a file that cannot be read or is not valid is a usage error. */
export async function readExpectationsFile(file: string): Promise<Expectation[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--expect: cannot read ${file}: ${fileErrorText(error)}`);
  }
  const parsed = parseExpectations(file, text);
  if (parsed.problems.length) throw new UsageError(parsed.problems.join('\n'));
  return parsed.expectations;
}
