/**
 * What to tell the user about a YAML document the parser could not read. The parser reports
 * where it noticed a mistake, often past it and several times over; these diagnostics point
 * at the mistake itself where it can be found: the quote of a string never closed, the `{` or
 * `[` left open, the tab that indents a line.
 */
import { visit, type Document, type YAMLError } from 'yaml';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { SourceLocation } from '../model/types.ts';
import { isSpace } from './json-documents.ts';
import { missingCloser, unclosedNote, unclosedQuote, type UnclosedNoteOptions } from './unclosed-flow.ts';

/** A document's place in its file, as the syntax errors need it. */
export interface DocumentText {
  /** The whole file. */
  readonly text: string;
  /** Where the document starts and ends in it. */
  readonly start: number;
  readonly end: number;
  /** Where the text the parser read starts in the file (the errors' offsets are from there). */
  readonly base: number;
  /** Offsets of the file's lines' starts (the LineCounter's `lineStarts`). */
  readonly lineStarts: readonly number[];
  readonly position: (offset: number) => SourceLocation;
}

/**
 * The diagnostics for a document's syntax errors, and `readUntil`: the offset of the first
 * mistake (the parser read the text as meant up to there).
 */
export function syntaxErrors(
  where: DocumentText,
  document: Document,
): { diagnostics: Diagnostic[]; readUntil: number } {
  const { text, start, base, position } = where;
  const errors = document.errors;
  // An error the parser finds only at the document's end (a flow map never closed) is put
  // right after its last character, not on the next line (another document's).
  let contentEnd = where.end;
  while (contentEnd > start && isSpace(text.charCodeAt(contentEnd - 1))) contentEnd--;
  const offsetOf = (error: YAMLError): number => Math.min(base + error.pos[0], contentEnd);

  let first = contentEnd;
  for (const error of errors) first = Math.min(first, offsetOf(error));
  const tab = misplacedTab(where, document, first);
  // What the parser says from there on follows from the tab (a line it cannot place, then
  // every line after it in the same collection): one error, at the tab.
  if (tab !== undefined) {
    const at = position(tab);
    return { diagnostics: [makeDiagnostic('YAML_SYNTAX', tabMessage(at.line), at)], readUntil: tab };
  }

  const diagnostics: Diagnostic[] = [];
  let readUntil = where.end;
  const nested = nestedUnclosed(errors, offsetOf);
  const seen = new Set<string>();
  for (const error of errors) {
    const at = offsetOf(error);
    if (/^Missing closing ["']quote/.test(error.message)) {
      const opener = unclosedQuote(text, start, at);
      if (opener !== undefined) {
        // The rest of the document is inside the string, so what the parser says after
        // this (flow maps and sequences never ended) only repeats it: one error, at the quote.
        const message = `the quoted string that starts here is never closed (its closing ${text[opener]} is missing)`;
        diagnostics.push(makeDiagnostic('YAML_SYNTAX', message, position(opener)));
        return { diagnostics, readUntil: Math.min(readUntil, opener) };
      }
    }
    const where = position(at);
    const said = explainParserError(error.message.split('\n')[0] ?? error.message);
    const message = said + unclosedNote(text, said, start, at, where.line, position, nested(error));
    // Said twice at one place (an opener not found): the same problem, once.
    const key = `${at}\n${message}`;
    if (!seen.has(key)) diagnostics.push(makeDiagnostic('YAML_SYNTAX', message, where));
    seen.add(key);
    readUntil = Math.min(readUntil, at);
  }
  return { diagnostics, readUntil };
}

/**
 * For each parser error about a flow collection left open, which one it is about. The parser
 * says the very same thing at the same offset once per nested collection left open
 * (`{a: {b: c`), innermost first; told apart by their openers, each is its own problem.
 */
function nestedUnclosed(
  errors: readonly YAMLError[],
  offsetOf: (error: YAMLError) => number,
): (error: YAMLError) => UnclosedNoteOptions {
  const placeOf = (error: YAMLError): string | undefined => {
    const closer = missingCloser(error.message);
    return closer === undefined ? undefined : `${offsetOf(error)}${closer}`;
  };
  const total = new Map<string, number>();
  for (const error of errors) {
    const place = placeOf(error);
    if (place !== undefined) total.set(place, (total.get(place) ?? 0) + 1);
  }
  const told = new Map<string, number>();
  return (error) => {
    const place = placeOf(error);
    if (place === undefined) return { outward: 0 };
    const outward = told.get(place) ?? 0;
    told.set(place, outward + 1);
    return { outward, alwaysName: (total.get(place) ?? 0) > 1 };
  };
}

/**
 * The tab that indents the line where the parser first went wrong (at offset `firstError`), or
 * the line before it (the parser may notice only on the next line), when one does and it is
 * not text: YAML indents with spaces only, and the parser's errors then name what follows from
 * it (an unexpected scalar, items not in line), not the tab. A tab after a block indicator
 * (`- `, `? `, `: `) indents too; a tab in a block scalar's or a quoted string's text is text.
 * A line with nothing but blanks or a comment after its tab is not blamed: YAML allows a tab
 * there, and blaming it would hide the real mistake on the next line.
 */
export function misplacedTab(
  where: DocumentText,
  document: Document,
  firstError: number,
): number | undefined {
  const line = where.position(firstError).line;
  for (const candidate of [line - 1, line]) {
    const lineStart = where.lineStarts[candidate - 1];
    if (lineStart === undefined || lineStart < where.start) continue;
    const indentation = /^(?: |[-?:](?=[ \t]))*\t(?=[ \t]*[^\s#])/.exec(
      where.text.slice(lineStart, lineStart + 256),
    );
    if (!indentation) continue;
    const tab = lineStart + indentation[0].length - 1;
    if (unclosedQuote(where.text, where.start, tab) === undefined && !inScalar(document, tab - where.base))
      return tab;
  }
  return undefined;
}

/** Whether a scalar the parser read (a block scalar's lines, say) holds `offset`. */
function inScalar(document: Document, offset: number): boolean {
  let found = false;
  visit(document, {
    Scalar(_key, node) {
      if (!node.range || node.range[0] > offset || offset >= node.range[1]) return undefined;
      found = true;
      return visit.BREAK;
    },
  });
  return found;
}

/** The one error for a line indented with a tab. */
export function tabMessage(line: number): string {
  return `line ${line} is indented with a tab; YAML allows only spaces`;
}

/** Pathologically deep nesting exhausts the parser's stack; say what that means. */
export function explainParserError(message: string): string {
  return /call stack/i.test(message) ? `document is nested too deeply to read (${message})` : message;
}
