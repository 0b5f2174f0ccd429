/**
 * A fast path for files made of JSON documents (what `palisade generate` writes, what
 * `kubectl get -o json` prints): `JSON.parse` instead of building a YAML syntax tree for every
 * document, with positions found in the text only when a diagnostic asks for one. The YAML
 * parser kept every document's tree for that, which made a 75 MB file take minutes and
 * gigabytes.
 *
 * The path is taken only when it gives exactly what the YAML path gives: every document is one
 * JSON object, `---` lines between them (or none: objects one after another, JSON lines, which
 * the YAML path cannot read at all), and nothing in it that YAML 1.1 reads differently or
 * that the YAML path reports (a repeated key; a number with an exponent or a fraction, whose
 * written form the YAML path keeps for the checks of integer fields; `\/` and `\u` escapes;
 * nesting or a size beyond the YAML path's limits, which that path reports). Anything else,
 * syntax errors included, goes the YAML way, so its messages and positions are the YAML
 * parser's — one document at a time when the caller can read one (a broken object in a 40 MB
 * file no longer sends the whole file through the YAML parser, ten times slower), in its place
 * among the others so that later definitions still win.
 */
import type { LineCounter } from 'yaml';
import type { SourceLocation } from '../model/types.ts';
import type { FieldPath, Locator } from './types.ts';

/** One document of a JSON file: its parsed value and positions in it. */
interface JsonDocument {
  readonly value: Record<string, unknown>;
  readonly locator: Locator;
}

/** JSON's structural characters, as char codes (json-lines.ts reads them too). */
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
/** Keys compared one by one up to this many per object; a set beyond. */
const SET_AFTER_KEYS = 16;

/** A line that separates documents: `---` or `...`, alone on its line. */
const SEPARATOR = /^(?:---|\.\.\.)[ \t]*\r?$/gm;

/**
 * The file's documents when it is JSON documents only and the fast path gives what the YAML
 * path would; undefined otherwise. Fills `lineCounter` with the file's line starts, which
 * `position` (the caller's offset → line and column) reads.
 */
export function parseJsonDocuments(
  text: string,
  lineCounter: LineCounter,
  position: (offset: number) => SourceLocation,
  limits: JsonLimits,
): JsonDocument[] | undefined {
  const documents: JsonDocument[] = [];
  const taken = eachJsonDocument(text, position, limits, (document) => documents.push(document));
  if (!taken) return undefined;
  fillLineCounter(text, lineCounter);
  return documents;
}

/** How much one file's documents may hold: beyond, the YAML path reads them and says so. */
interface JsonLimits {
  readonly maxDepth: number;
  readonly maxValues: number;
  readonly maxDocuments?: number;
}

/**
 * Reads the text in [from, to) — one document, or JSON objects one after another — the YAML
 * way, in its place among the file's documents; false when it cannot be read alone (the whole
 * file must then go the YAML way).
 */
type YamlDocumentReader = (from: number, to: number) => boolean;

/**
 * Hands each document of a file of JSON documents to `visit` as soon as it is parsed, so the
 * caller can decode it and drop it while it is young (a 43 MB file's parsed objects all alive at
 * once were most of the load's garbage collection). A document the fast path cannot take goes
 * to `yamlDocument`, when given, in its place. True when the file was read this way; false when
 * it must be read the YAML way as a whole — possibly after some documents were visited (a
 * syntax error further on), which the caller then forgets. `position` must be usable from the
 * first visit on: the caller fills its line starts first.
 */
export function eachJsonDocument(
  text: string,
  position: (offset: number) => SourceLocation,
  limits: JsonLimits,
  visit: (document: JsonDocument) => void,
  yamlDocument?: YamlDocumentReader,
): boolean {
  if (!startsAsJsonDocuments(text)) return false;
  const spans = separatedSpans(text);
  // More documents than a file may hold: the YAML path reads up to the limit and says so.
  if (spans.length / 2 > (limits.maxDocuments ?? Infinity)) return false;
  // Every document is checked before the first is visited: a file the YAML path must read is
  // then mostly found before any decoding is spent on it (only JSON.parse's own errors are not).
  // `parts` holds [how, from, to] per object to parse (JSON) or text to read the YAML way.
  const parts: number[] = [];
  const backslashes = new Backslashes(text);
  for (let i = 0; i < spans.length; i += 2) {
    const from = spans[i] as number;
    const to = spans[i + 1] as number;
    const begin = firstSignificant(text, from, to);
    if (begin < 0) continue; // nothing between two separators
    const objects = jsonObjectsOf(text, begin, to, limits, backslashes);
    if (objects)
      for (let k = 0; k < objects.length; k += 2)
        parts.push(AS_JSON, objects[k] as number, objects[k + 1] as number);
    else if (yamlDocument) parts.push(AS_YAML, from, to);
    else return false;
  }
  if (parts.length / 3 > (limits.maxDocuments ?? Infinity)) return false;
  for (let i = 0; i < parts.length; i += 3) {
    const from = parts[i + 1] as number;
    const to = parts[i + 2] as number;
    if (parts[i] === AS_YAML) {
      if (!(yamlDocument as YamlDocumentReader)(from, to)) return false;
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text.slice(from, to));
    } catch {
      if (!yamlDocument?.(from, to)) return false;
      continue;
    }
    visit({ value: value as Record<string, unknown>, locator: new JsonLocator(text, from, position) });
  }
  return true;
}

/** Whether the text starts as JSON documents do: an object, or a `---` line. */
export function startsAsJsonDocuments(text: string): boolean {
  const first = firstSignificant(text, 0, text.length);
  return first >= 0 && (text.charCodeAt(first) === OPEN_BRACE || text.startsWith('---', first));
}

/** [from, to) of every document between `---` (or `...`) lines, the separators left out. */
export function separatedSpans(text: string): number[] {
  const spans: number[] = [];
  let start = 0;
  for (const match of text.matchAll(SEPARATOR)) {
    spans.push(start, match.index);
    start = match.index + match[0].length;
  }
  spans.push(start, text.length);
  return spans;
}

const AS_JSON = 0;
const AS_YAML = 1;

/**
 * Where each object of the document in [begin, to) starts and ends, when the fast path can take
 * it (see the top of this file); undefined when it must be read the YAML way.
 */
function jsonObjectsOf(
  text: string,
  begin: number,
  to: number,
  limits: JsonLimits,
  backslashes: Backslashes,
): number[] | undefined {
  let end = to;
  while (end > begin && isSpace(text.charCodeAt(end - 1))) end--;
  if (text.charCodeAt(begin) !== OPEN_BRACE || text.charCodeAt(end - 1) !== CLOSE_BRACE) return undefined;
  const objectEnds: number[] = [];
  if (!readsAsYamlDoes(text, begin, end, limits, backslashes, objectEnds)) return undefined;
  // Objects one after another with no `---` between them (JSON lines, as `jq -c '.items[]'`
  // writes them) are one document each. The YAML path reads each of them the same way
  // (json-lines.ts).
  const objects: number[] = [];
  let part = begin;
  for (const objectEnd of objectEnds) {
    if (part < 0 || text.charCodeAt(part) !== OPEN_BRACE) return undefined;
    objects.push(part, objectEnd);
    part = firstSignificant(text, objectEnd, end);
  }
  return part >= 0 ? undefined : objects; // something after the last object that is not one
}

/** Line starts of `text`, as the YAML parser's LineCounter keeps them. */
export function fillLineCounter(text: string, lineCounter: LineCounter): void {
  lineCounter.addNewLine(0);
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lineCounter.addNewLine(i + 1);
}

/** JSON's white space: space, line feed, carriage return, tab. */
export function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The first character that is not white space in [from, to), or -1. */
export function firstSignificant(text: string, from: number, to: number): number {
  for (let i = from; i < to; i++) if (!isSpace(text.charCodeAt(i))) return i;
  return -1;
}

/**
 * The index just past the string whose opening quote is at `at`, or -1 when it has an escape
 * YAML 1.1 reads differently or that would make equal keys look different (`\u`, `\/`).
 */
function skipPlainString(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i + 1;
    if (c !== BACKSLASH) continue;
    const escaped = text.charCodeAt(i + 1);
    if (escaped === 0x75 /* u */ || escaped === 0x2f /* / */) return -1;
    i++;
  }
  return -1;
}

/**
 * Where the next backslash of a file is, found once rather than looked for in every string: a
 * string with none inside is skipped by one `indexOf` of its closing quote, not character by
 * character (strings are most of a manifest's text). Positions only move forward through the
 * file, so all searches together read it once.
 */
class Backslashes {
  /** The first backslash at or after where it was last looked for; -1 when none is left. */
  private next = -2;

  constructor(private readonly text: string) {}

  /** Same as skipPlainString. */
  skipString(at: number): number {
    const close = this.text.indexOf('"', at + 1);
    if (close < 0) return -1;
    if (this.next !== -1 && this.next <= at) this.next = this.text.indexOf('\\', at + 1);
    return this.next === -1 || this.next > close ? close + 1 : skipPlainString(this.text, at);
  }
}

/** Whether text[a, aEnd) equals text[b, bEnd). */
function sameText(text: string, a: number, aEnd: number, b: number, bEnd: number): boolean {
  if (aEnd - a !== bEnd - b) return false;
  for (let i = 0; i < aEnd - a; i++) if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
  return true;
}

/**
 * True when the JSON text in [begin, end) has no repeated key in any object and nothing that
 * YAML 1.1 would read differently. Does not validate: JSON.parse does that afterwards. Where each
 * top-level object ends goes to `objectEnds` (more than one: objects one after another).
 * Repeated keys are found by comparing each key with the earlier keys of its object (raw text:
 * without `\u` escapes, equal text is equal keys); an object with more than a few keys gets a
 * set of them instead, so a mapping of 100,000 labels costs 100,000 look-ups, not 5 billion
 * comparisons.
 */
function readsAsYamlDoes(
  text: string,
  begin: number,
  end: number,
  limits: { readonly maxDepth: number; readonly maxValues: number },
  backslashes: Backslashes,
  objectEnds: number[],
): boolean {
  let values = 0;
  // Per open object, where its keys start in `keys` (a flat list of [start, end) pairs).
  const objectKeysFrom: number[] = [];
  const inObject: boolean[] = [];
  const keys: number[] = [];
  // Per open object, the set of its keys once it has more than SET_AFTER_KEYS.
  const keySets: (Set<string> | undefined)[] = [];
  let expectKey = false;
  for (let i = begin; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const after = backslashes.skipString(i);
      if (after < 0) return false;
      if (expectKey) {
        const from = objectKeysFrom[objectKeysFrom.length - 1] ?? 0;
        const top = keySets.length - 1;
        let set = keySets[top];
        if (!set && keys.length - from >= 2 * SET_AFTER_KEYS) {
          set = new Set<string>();
          for (let k = from; k < keys.length; k += 2) set.add(text.slice(keys[k], keys[k + 1]));
          keySets[top] = set;
        }
        if (set) {
          const key = text.slice(i, after);
          if (set.has(key)) return false;
          set.add(key);
        } else {
          for (let k = from; k < keys.length; k += 2) {
            if (sameText(text, keys[k] as number, keys[k + 1] as number, i, after)) return false;
          }
          keys.push(i, after);
        }
        expectKey = false;
      }
      i = after - 1;
    } else if (c === OPEN_BRACE) {
      objectKeysFrom.push(keys.length);
      keySets.push(undefined);
      inObject.push(true);
      expectKey = true;
      if (inObject.length > limits.maxDepth || ++values > limits.maxValues) return false;
    } else if (c === OPEN_BRACKET) {
      inObject.push(false);
      if (inObject.length > limits.maxDepth || ++values > limits.maxValues) return false;
    } else if (c === CLOSE_BRACE) {
      keys.length = objectKeysFrom.pop() ?? 0;
      keySets.pop();
      inObject.pop();
      if (inObject.length === 0) {
        objectEnds.push(i + 1);
        values = 0; // the limit is per document, and each object one after another is one
      }
    } else if (c === CLOSE_BRACKET) {
      inObject.pop();
    } else if (c === COMMA) {
      expectKey = inObject[inObject.length - 1] === true;
      if (++values > limits.maxValues) return false;
    } else if (c === 0x65 || c === 0x45) {
      // An 'e' outside a string is in a number (true/false are letters too, but 'e' ends them:
      // look at what precedes it).
      const before = text.charCodeAt(i - 1);
      if (before >= 0x30 && before <= 0x39) return false;
    } else if (c === 0x2e) {
      return false; // a '.' outside a string: a number with a fraction
    }
  }
  return true;
}

/** Children of one object or array: where each key and value starts. */
interface ContainerIndex {
  readonly values: Map<string | number, number>;
  readonly keys: Map<string, number>;
}

/**
 * Positions in one JSON document, found on demand: each object or array on a path is scanned
 * once for where its children start, so a list's thousands of items cost one scan.
 */
class JsonLocator implements Locator {
  // Made on the first position asked for: most documents never need one.
  private indexes: Map<number, ContainerIndex> | undefined;

  constructor(
    private readonly text: string,
    private readonly start: number,
    private readonly position: (offset: number) => SourceLocation,
  ) {}

  valueAt(path: FieldPath): SourceLocation {
    let offset = this.start;
    for (const segment of path) {
      const child = this.index(offset)?.values.get(segment);
      if (child === undefined) break; // the nearest existing ancestor
      offset = child;
    }
    return this.position(offset);
  }

  stringCharAt(path: FieldPath, index: number): SourceLocation | undefined {
    let offset = this.start;
    for (const segment of path) {
      const child = this.index(offset)?.values.get(segment);
      if (child === undefined) return undefined;
      offset = child;
    }
    if (this.text.charCodeAt(offset) !== QUOTE) return undefined;
    // Strings on this path are plain (no escapes): the characters follow the quote one for one.
    return this.position(offset + 1 + index);
  }

  keyAt(path: FieldPath): SourceLocation {
    let offset = this.start;
    for (const segment of path.slice(0, -1)) {
      const child = this.index(offset)?.values.get(segment);
      if (child === undefined) return this.valueAt(path);
      offset = child;
    }
    const last = path[path.length - 1];
    const key = last === undefined ? undefined : this.index(offset)?.keys.get(String(last));
    return key === undefined ? this.valueAt(path) : this.position(key);
  }

  /** The children of the object or array starting at `offset` (undefined for a scalar). */
  private index(offset: number): ContainerIndex | undefined {
    const indexes = (this.indexes ??= new Map<number, ContainerIndex>());
    const known = indexes.get(offset);
    if (known) return known;
    const open = this.text.charCodeAt(offset);
    if (open !== OPEN_BRACE && open !== OPEN_BRACKET) return undefined;
    const index: ContainerIndex = { values: new Map(), keys: new Map() };
    const text = this.text;
    let depth = 0;
    let item = 0;
    let key: string | undefined;
    let awaitingValue = open === OPEN_BRACKET;
    for (let i = offset; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (isSpace(c)) continue;
      if (depth === 1 && awaitingValue) {
        index.values.set(open === OPEN_BRACKET ? item : (key as string), i);
        awaitingValue = false;
      }
      if (c === QUOTE) {
        // Every string of an accepted document is plain and closed (readsAsYamlDoes and
        // JSON.parse checked), so this never gives -1 here; stop rather than loop if it did.
        const after = skipPlainString(text, i);
        if (after < 0) break;
        if (depth === 1 && open === OPEN_BRACE && key === undefined) {
          key = JSON.parse(text.slice(i, after)) as string;
          index.keys.set(key, i);
        }
        i = after - 1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        depth++;
        if (depth === 1 && open === OPEN_BRACKET) awaitingValue = true;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) break;
      } else if (depth === 1 && c === COLON) {
        awaitingValue = true;
      } else if (depth === 1 && c === COMMA) {
        if (open === OPEN_BRACKET) {
          item++;
          awaitingValue = true;
        } else key = undefined;
      }
    }
    // An empty array's "first value" would be its closing bracket.
    if (open === OPEN_BRACKET && text.charCodeAt(index.values.get(0) ?? -1) === CLOSE_BRACKET)
      index.values.delete(0);
    indexes.set(offset, index);
    return index;
  }
}
