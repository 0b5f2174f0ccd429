/**
 * JSON objects one after another with no `---` between them (JSON lines, as `jq -c '.items[]'`
 * writes them, or `jq '.items[]'` pretty-printed) that the JSON fast path did not take: one of
 * them is broken, or reads differently in YAML. The YAML parser reads no such text (a flow
 * mapping ends its document), so it reported every token after the first object — dozens of
 * errors per line — and lost the objects that were fine. Cut where a line starts with `{` right
 * after a value ended (a `}`, or a string, number or word of an object cut short), so that each
 * object is a document of its own: a broken one gets its own errors and the others are read.
 *
 * In valid JSON a `{` follows only `[`, `,`, `:` or nothing, so a single document written over
 * many lines is never cut. One more cut: a line starting with `{` after a `,` that leaves only
 * the object begun above open (a line whose closing `}` was typed as `,`). In an object a `,`
 * is followed by a key, never by `{`, so valid JSON is never cut there either; without the cut
 * the broken line swallowed the next one, a valid object lost without a word.
 */
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isSpace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from './json-documents.ts';
import { scanYamlDocuments, shiftSpans, type DocumentSpan } from './yaml-scan.ts';

/**
 * Where each object of `span` starts, when the span is two or more JSON objects one after
 * another (the first may follow a `---` line); undefined otherwise. At most `most` starts: the
 * last object found then runs to the span's end (the file's document limit stops before it).
 */
export function jsonObjectStarts(
  text: string,
  span: { start: number; end: number },
  most = Infinity,
): number[] | undefined {
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
  for (
    let newline = text.indexOf('\n{', first);
    newline >= 0 && newline < span.end && starts.length < most;
  ) {
    let before = newline;
    while (before > first && isSpace(text.charCodeAt(before - 1))) before--;
    const last = text.charCodeAt(before - 1);
    if (
      endsValue(last) ||
      (last === COMMA && openAfter(text, starts[starts.length - 1] as number, before) === 1)
    )
      starts.push(newline + 1);
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
    // The last piece may be the rest of a huge span (see jsonObjectStarts): only its first
    // document is scanned.
    const last = k === starts.length - 1;
    const scanned = scanYamlDocuments(text.slice(from, to), maxDepth, last ? 1 : Infinity);
    for (const piece of shiftSpans(scanned, from)) pieces.push(piece);
  }
  return pieces;
}

/** Whether a `{` after this character starts another object rather than a value inside one. */
function endsValue(c: number): boolean {
  return !Number.isNaN(c) && c !== COMMA && c !== OPEN_BRACKET && c !== OPEN_BRACE && c !== COLON;
}

/** How many objects and arrays are open at `to`, counting from `from` (strings skipped). */
function openAfter(text: string, from: number, to: number): number {
  let open = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) open++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) open--;
    else if (c === QUOTE) {
      for (i++; i < to; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    }
  }
  return open;
}
