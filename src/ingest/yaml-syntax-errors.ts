/**
 * What to tell the user about a YAML document the parser could not read. The parser reports
 * where it noticed a mistake, often past it and several times over; these diagnostics point
 * at the mistake itself where it can be found: the quote of a string never closed, the `{` or
 * `[` left open.
 */
import type { YAMLError } from 'yaml';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { SourceLocation } from '../model/types.ts';
import { isSpace } from './json-documents.ts';
import { unclosedNote, unclosedQuote } from './unclosed-flow.ts';

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
  document: DocumentText,
  errors: readonly YAMLError[],
): { diagnostics: Diagnostic[]; readUntil: number } {
  const { text, start, base, position } = document;
  // An error the parser finds only at the document's end (a flow map never closed) is put
  // right after its last character, not on the next line (another document's).
  let contentEnd = document.end;
  while (contentEnd > start && isSpace(text.charCodeAt(contentEnd - 1))) contentEnd--;
  const offsetOf = (error: YAMLError): number => Math.min(base + error.pos[0], contentEnd);

  const diagnostics: Diagnostic[] = [];
  let readUntil = document.end;
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
    const message = said + unclosedNote(text, said, start, at, where.line, position);
    diagnostics.push(makeDiagnostic('YAML_SYNTAX', message + tabHint(document, where.line), where));
    readUntil = Math.min(readUntil, at);
  }
  return { diagnostics, readUntil };
}

/** YAML forbids tabs in indentation, but many editors insert them; say so when that is the cause. */
function tabHint({ text, lineStarts }: DocumentText, line: number): string {
  for (const candidate of [line, line - 1]) {
    const start = lineStarts[candidate - 1];
    if (start === undefined) continue;
    const end = text.indexOf('\n', start);
    const content = text.slice(start, end < 0 ? undefined : end);
    if (/^[ ]*\t/.test(content))
      return ` (line ${candidate} is indented with a tab; YAML allows only spaces)`;
  }
  return '';
}

/** Pathologically deep nesting exhausts the parser's stack; say what that means. */
export function explainParserError(message: string): string {
  return /call stack/i.test(message) ? `document is nested too deeply to read (${message})` : message;
}
