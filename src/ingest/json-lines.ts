/**
 * JSON objects one after another with no `---` between them (JSON lines, as `jq -c '.items[]'`
 * writes them, or `jq '.items[]'` pretty-printed) that the JSON fast path did not take: one of
 * them is broken, or reads differently in YAML. The YAML parser reads no such text (a flow
 * mapping ends its document), so it reported every token after the first object — dozens of
 * errors per line — and lost the objects that were fine. Cut where a line starts with `{` right
 * after a `}`, so that each object is a document of its own: a broken one gets its own errors and
 * the others are read.
 *
 * Valid JSON never has `}` then `{` with only white space between (a list puts a comma there),
 * so a single document written over many lines is never cut.
 */
import { scanYamlPart, type DocumentSpan } from './yaml-scan.ts';

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Where each object of `span` starts, when the span is two or more JSON objects one after
 * another (the first may follow a `---` line); undefined otherwise.
 */
export function jsonObjectStarts(text: string, span: { start: number; end: number }): number[] | undefined {
  let first = span.start;
  while (first < span.end && isSpace(text.charCodeAt(first))) first++;
  if (text.startsWith('---', first)) {
    const lineEnd = text.indexOf('\n', first);
    if (lineEnd < 0 || lineEnd >= span.end) return undefined;
    first = lineEnd;
    while (first < span.end && isSpace(text.charCodeAt(first))) first++;
  }
  if (text.charCodeAt(first) !== OPEN_BRACE) return undefined;
  const starts = [first];
  for (let newline = text.indexOf('\n{', first); newline >= 0 && newline < span.end;) {
    let before = newline;
    while (before > first && isSpace(text.charCodeAt(before - 1))) before--;
    if (text.charCodeAt(before - 1) === CLOSE_BRACE) starts.push(newline + 1);
    newline = text.indexOf('\n{', newline + 1);
  }
  return starts.length > 1 ? starts : undefined;
}

/**
 * `span` cut into one span per object, each scanned on its own for its depth and size (the
 * limits hold per object). The first keeps the span's start, with its `---` line if it has one.
 */
export function splitJsonObjects(
  text: string,
  span: DocumentSpan,
  starts: readonly number[],
  maxDepth: number,
): DocumentSpan[] {
  const pieces: DocumentSpan[] = [];
  for (let k = 0; k < starts.length; k++) {
    const from = k === 0 ? span.start : (starts[k] as number);
    const to = k + 1 < starts.length ? (starts[k + 1] as number) : span.end;
    for (const scanned of scanYamlPart(text, from, to, maxDepth)) pieces.push(scanned);
  }
  return pieces;
}
