/**
 * Where a flow collection that was never closed began. The YAML parser notices a missing `}` or
 * `]` only where the text can no longer belong to the collection — often the next line, or the
 * next key — so its message points past the mistake; the `{` or `[` left open is where to look.
 */

import type { SourceLocation } from '../model/types.ts';
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-documents.ts';

const OPENERS: Readonly<Record<string, number>> = { '}': OPEN_BRACE, ']': OPEN_BRACKET };
const CLOSERS: Readonly<Record<number, number>> = {
  [OPEN_BRACE]: CLOSE_BRACE,
  [OPEN_BRACKET]: CLOSE_BRACKET,
};
const APOSTROPHE = 0x27;
const HASH = 0x23;

/**
 * The offset of the innermost `{` (for `closer` "}") or `[` (for "]") still open at `at`, or with
 * `outward` n, the n-th one enclosing that; reading from `from` (a document's start); undefined
 * when there is none. Quoted strings and comments are skipped; brackets inside plain scalars are
 * rare enough in manifests to count.
 */
function unclosedOpener(
  text: string,
  from: number,
  at: number,
  closer: '}' | ']',
  outward: number,
): number | undefined {
  const wanted = OPENERS[closer] as number;
  const open: number[] = [];
  for (let i = from; i < at; i++) {
    const c = text.charCodeAt(i);
    if ((c === QUOTE || c === APOSTROPHE) && startsScalar(text, from, i)) i = stringEnd(text, i, at);
    else if (c === HASH && (i === from || /\s/.test(text[i - 1] as string))) {
      const newline = text.indexOf('\n', i);
      i = newline < 0 || newline >= at ? at : newline;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) open.push(i);
    else if (open.length > 0 && c === CLOSERS[text.charCodeAt(open[open.length - 1] as number)]) open.pop();
  }
  let skip = outward;
  for (let k = open.length - 1; k >= 0; k--)
    if (text.charCodeAt(open[k] as number) === wanted && skip-- === 0) return open[k];
  return undefined;
}

/** The closer a parser message says is missing: "}" for a flow map, "]" for a flow sequence. */
export function missingCloser(message: string): '}' | ']' | undefined {
  return /end with an? ([}\]])/.exec(message)?.[1] as '}' | ']' | undefined;
}

/** Which of the unclosed collections a parser error is about, and how to name it. */
export interface UnclosedNoteOptions {
  /**
   * 0 for the innermost collection of the error's kind left open; n for the n-th enclosing it.
   * The parser says the same thing at the same place once per nested collection left open
   * (`{a: {b: c`), innermost first: the n-th of those errors is about the n-th collection.
   */
  readonly outward: number;
  /**
   * Name the opener even on the error's own line (default: only on an earlier one, where the
   * user would not look): when several errors are at one place, it is what tells them apart.
   */
  readonly alwaysName?: boolean;
}

/**
 * Where the flow collection the parser says is unclosed began, when on an earlier line than the
 * error (or `alwaysName`): ` (the { at line 7, column 16 is not closed)`.
 */
export function unclosedNote(
  text: string,
  message: string,
  from: number,
  at: number,
  line: number,
  position: (offset: number) => SourceLocation,
  options: UnclosedNoteOptions,
): string {
  const closer = missingCloser(message);
  if (!closer) return '';
  const opener = unclosedOpener(text, from, at, closer, options.outward);
  if (opener === undefined) return '';
  const where = position(opener);
  if (where.line === line && !options.alwaysName) return '';
  return ` (the ${text[opener]} at line ${where.line}, column ${where.column} is not closed)`;
}

/**
 * The offset of a quoted string opened before `at` (reading from `from`, a document's start)
 * and not closed by `at`; undefined when every string is closed. The parser reports a missing
 * closing quote at the end of what it swallowed (the document's end), and then, as consequences,
 * every collection the string left open: the quote that opened it is the one place to look.
 */
export function unclosedQuote(text: string, from: number, at: number): number | undefined {
  for (let i = from; i < at; i++) {
    const c = text.charCodeAt(i);
    if ((c === QUOTE || c === APOSTROPHE) && startsScalar(text, from, i)) {
      const end = stringEnd(text, i, at);
      if (end >= at) return i;
      i = end;
    } else if (c === HASH && (i === from || /\s/.test(text[i - 1] as string))) {
      const newline = text.indexOf('\n', i);
      i = newline < 0 || newline >= at ? at : newline;
    }
  }
  return undefined;
}

/**
 * Whether a quote at `at` opens a quoted scalar: only at a scalar's start (after a line's
 * indentation, or `[`, `{`, `,`, `:`, `-`, `?` and spaces); inside a plain scalar (`don't`) it
 * is a character like any other.
 */
function startsScalar(text: string, from: number, at: number): boolean {
  let i = at - 1;
  while (i >= from && (text[i] === ' ' || text[i] === '\t')) i--;
  return i < from || '\n[{,:-?'.includes(text[i] as string);
}

/** The offset of the quote closing the string opened at `at` (or `limit` when unclosed). */
function stringEnd(text: string, at: number, limit: number): number {
  const quote = text.charCodeAt(at);
  for (let i = at + 1; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (quote === QUOTE && c === BACKSLASH) i++;
    else if (c === quote) {
      // '' is an escaped apostrophe inside a single-quoted string.
      if (quote === APOSTROPHE && text.charCodeAt(i + 1) === APOSTROPHE) i++;
      else return i;
    }
  }
  return limit;
}
