/**
 * A cheap look at a YAML (or JSON) file before the YAML parser reads it: where each document
 * starts and ends, how deep it nests, and about how many values it holds. The parser recurses
 * once per nesting level and holds several hundred bytes per value while it reads a document,
 * so a document nested thousands deep overflows the stack and one of millions of values
 * exhausts the heap; both are refused with a diagnostic before the parser sees them, and the
 * other documents and files are still read.
 *
 * One pass over the characters, no allocation per value. It follows YAML's structure only as far
 * as the estimates need: document markers (`---`, `...` at column 0, which YAML forbids inside
 * content), indentation, `- ` sequence entries, `key:` pairs, flow collections, quoted scalars
 * (which may span lines), comments and block scalars (whose lines are text, not structure). The
 * depth counts block levels and flow brackets; it may count a level more or fewer than the
 * parser would, which the limits allow for.
 */

/** One document's span in the text and what the scan saw in it. */
export interface DocumentSpan {
  /** Offset of the document's first character (its `---` line, when it has one). */
  readonly start: number;
  /** Offset just past the document. */
  readonly end: number;
  /** Deepest nesting seen: block levels plus open flow collections. */
  readonly depth: number;
  /** Where the nesting first went deeper than the limit asked about, when it did. */
  readonly tooDeepAt?: number;
  /** About how many values (scalars, collections, keys) the document holds. */
  readonly values: number;
}

const SPACE = 0x20;
const TAB = 0x09;
const CR = 0x0d;
const DASH = 0x2d;
const DOT = 0x2e;
const COLON = 0x3a;
const COMMA = 0x2c;
const HASH = 0x23;
const DOUBLE = 0x22;
const SINGLE = 0x27;
const BACKSLASH = 0x5c;
const PIPE = 0x7c;
const GREATER = 0x3e;

const isBlank = (c: number): boolean => c === SPACE || c === TAB || c === CR || Number.isNaN(c);
const isOpen = (c: number): boolean => c === 0x5b || c === 0x7b;
const isClose = (c: number): boolean => c === 0x5d || c === 0x7d;

class Scan {
  start = 0;
  depth = 0;
  tooDeepAt: number | undefined = undefined;
  values = 0;
  /** Columns of the open block collections. */
  readonly block: number[] = [];
  flow = 0;
  /** The block depth where the open flow collection started. */
  flowBase = 0;
  quote = 0;
  /** Indentation of the line that opened a block scalar; -1 when not in one. */
  scalarParent = -1;

  constructor(readonly maxDepth: number) {}

  reach(depth: number, at: number): void {
    if (depth > this.depth) this.depth = depth;
    if (depth > this.maxDepth && this.tooDeepAt === undefined) this.tooDeepAt = at;
  }

  span(end: number): DocumentSpan {
    return this.tooDeepAt === undefined
      ? { start: this.start, end, depth: this.depth, values: this.values }
      : { start: this.start, end, depth: this.depth, tooDeepAt: this.tooDeepAt, values: this.values };
  }
}

/** The documents of `text`, each with its nesting depth and value estimate. */
export function scanYamlDocuments(
  text: string,
  maxDepth: number,
  maxDocuments = Infinity,
): DocumentSpan[] & { truncatedAt?: number } {
  const spans: DocumentSpan[] & { truncatedAt?: number } = [];
  let scan = new Scan(maxDepth);
  let sawContent = false;
  const length = text.length;
  for (let lineStart = 0; lineStart < length;) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd < 0) lineEnd = length;
    const marker = documentMarker(text, lineStart, lineEnd);
    if (marker !== 0) {
      // `---` starts a document (ending the one before, if it had anything); `...` ends one.
      if (marker === DASH) {
        if (sawContent) spans.push(scan.span(lineStart));
        // The documents past the limit are not scanned (their spans alone would outgrow the heap).
        if (spans.length >= maxDocuments) {
          spans.truncatedAt = lineStart;
          return spans;
        }
        scan = new Scan(maxDepth);
        scan.start = lineStart;
        sawContent = true;
        scanLine(text, lineStart + 3, lineEnd, scan, 0);
      } else {
        spans.push(scan.span(lineEnd));
        scan = new Scan(maxDepth);
        scan.start = Math.min(lineEnd + 1, length);
        sawContent = false;
      }
    } else if (scanLine(text, lineStart, lineEnd, scan, -1)) sawContent = true;
    lineStart = lineEnd + 1;
  }
  if (sawContent || spans.length === 0) spans.push(scan.span(length));
  return spans;
}

/** DASH for a `---` line, DOT for `...`, 0 otherwise. */
function documentMarker(text: string, at: number, end: number): number {
  const c = text.charCodeAt(at);
  if (c !== DASH && c !== DOT) return 0;
  if (text.charCodeAt(at + 1) !== c || text.charCodeAt(at + 2) !== c) return 0;
  return at + 3 >= end || isBlank(text.charCodeAt(at + 3)) ? c : 0;
}

/**
 * Scans one line (without its newline). `forcedIndent` is the indentation to assume (0 after a
 * `---` on the same line), or -1 to measure it. Returns whether the line held content.
 */
function scanLine(text: string, from: number, end: number, scan: Scan, forcedIndent: number): boolean {
  let i = from;
  while (i < end && (text.charCodeAt(i) === SPACE || text.charCodeAt(i) === TAB)) i++;
  const indent = forcedIndent >= 0 ? forcedIndent : i - from;
  if (i >= end || text.charCodeAt(i) === CR) return scan.quote !== 0 || scan.flow > 0;
  if (scan.scalarParent >= 0) {
    if (indent > scan.scalarParent) return true; // a line of the block scalar's text
    scan.scalarParent = -1;
  }
  if (scan.quote === 0 && scan.flow === 0) {
    if (text.charCodeAt(i) === HASH) return false;
    // Block structure: leave the collections this line is not inside of.
    const block = scan.block;
    while (block.length > 0 && (block[block.length - 1] as number) > indent) block.pop();
    if (block.length === 0 || (block[block.length - 1] as number) < indent) block.push(indent);
    scan.reach(block.length, i);
    // `- ` sequence entries, possibly several on one line (`- - a`).
    while (text.charCodeAt(i) === DASH && (i + 1 >= end || isBlank(text.charCodeAt(i + 1)))) {
      scan.values++;
      block.push(i - from + 2);
      scan.reach(block.length, i);
      i += 2;
      while (i < end && (text.charCodeAt(i) === SPACE || text.charCodeAt(i) === TAB)) i++;
    }
  }
  let tokenStart = true;
  let pairDepth = 0;
  for (; i < end; i++) {
    const c = text.charCodeAt(i);
    if (scan.quote === DOUBLE) {
      if (c === BACKSLASH) i++;
      else if (c === DOUBLE) scan.quote = 0;
      continue;
    }
    if (scan.quote === SINGLE) {
      if (c === SINGLE) {
        if (text.charCodeAt(i + 1) === SINGLE) i++;
        else scan.quote = 0;
      }
      continue;
    }
    if (c === SPACE || c === TAB) {
      tokenStart = true;
      continue;
    }
    const atStart = tokenStart;
    tokenStart = false;
    if (c === HASH && atStart) break; // a comment
    if ((c === DOUBLE || c === SINGLE) && (atStart || scan.flow > 0)) {
      scan.quote = c;
      scan.values++;
      continue;
    }
    if (isOpen(c) && (atStart || scan.flow > 0)) {
      if (scan.flow === 0) scan.flowBase = scan.block.length + pairDepth;
      scan.flow++;
      scan.values++;
      scan.reach(scan.flowBase + scan.flow, i);
      tokenStart = true;
      continue;
    }
    if (scan.flow > 0) {
      if (isClose(c)) scan.flow--;
      else if (c === COMMA) {
        scan.values++;
        tokenStart = true;
      } else if (c === COLON) tokenStart = true;
      continue;
    }
    if (c === COLON && (i + 1 >= end || isBlank(text.charCodeAt(i + 1)))) {
      // `key: value`: the value is one level below the key.
      scan.values++;
      pairDepth = 1;
      scan.reach(scan.block.length + 1, i);
      tokenStart = true;
      continue;
    }
    if ((c === PIPE || c === GREATER) && atStart && isBlockScalarHeader(text, i + 1, end)) {
      scan.scalarParent = indent;
      scan.values++;
      break;
    }
    if (atStart) scan.values++;
  }
  return true;
}

/** After `|` or `>`: only chomping and indentation indicators, then blanks or a comment. */
function isBlockScalarHeader(text: string, from: number, end: number): boolean {
  let i = from;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === 0x2b || c === DASH || (c >= 0x31 && c <= 0x39)) i++;
    else break;
  }
  if (i >= end) return true;
  const c = text.charCodeAt(i);
  if (!isBlank(c)) return false;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  return i >= end || text.charCodeAt(i) === HASH;
}

/** Spans of a part of a text that starts at `from`, with their offsets in the whole text. */
export function shiftSpans(spans: readonly DocumentSpan[], from: number): DocumentSpan[] {
  if (from === 0) return spans as DocumentSpan[];
  return spans.map((span) => ({
    start: from + span.start,
    end: from + span.end,
    depth: span.depth,
    values: span.values,
    ...(span.tooDeepAt !== undefined ? { tooDeepAt: from + span.tooDeepAt } : {}),
  }));
}
