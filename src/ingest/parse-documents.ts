/**
 * Parses a file's text (YAML, multi-document, or JSON) into raw Kubernetes objects, each with a
 * locator back to its source. `List` kinds (and `kubectl get -o yaml|json` output) are unrolled
 * into their items. Scalars are resolved as kubectl resolves them (YAML 1.1 through go-yaml:
 * `yes` is a boolean, `e2` a string; `yaml-schema.ts`), so type errors show up here as they would
 * at apply time.
 *
 * Hostile input costs what its size says: a document nested deeper than MAX_DEPTH or holding
 * more than MAX_DOCUMENT_VALUES values is refused with a located diagnostic before the parser
 * reads it (the parser recurses per level and holds hundreds of bytes per value) and is never
 * shown to it; documents are read one at a time and their syntax trees dropped once read
 * (`yaml-locator.ts`); repeated keys
 * are found with one set per mapping (the parser's own check compares every pair of keys), and
 * the other documents and files are read as usual.
 */
import {
  Composer,
  LineCounter,
  Parser,
  parseDocument,
  type Document,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  isAlias,
  visit,
} from 'yaml';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { DiagnosticSink } from './diagnostic-sink.ts';
import type { FieldPath, InputFile, Locator, RawObject } from './types.ts';
import type { SourceLocation } from '../model/types.ts';
import { eachJsonDocument, fillLineCounter } from './json-documents.ts';
import { explainParserError, syntaxErrors } from './yaml-syntax-errors.ts';
import { scanYamlDocuments, shiftSpans, type DocumentSpan } from './yaml-scan.ts';
import { jsonObjectStarts, splitJsonObjects } from './json-lines.ts';
import { kubectlTags } from './yaml-schema.ts';
import { firstForbiddenCharacter } from './text-checks.ts';
import { templateActionAt } from './non-manifests.ts';
import { DocumentCache, YamlLocator, noteDocument } from './yaml-locator.ts';

const MAX_ALIAS_COUNT = 1000;
/**
 * Deepest nesting read. Kubernetes objects nest a dozen levels (CRD schemas a few dozen); the
 * parser and the decoders recurse per level and overflow the stack in the thousands.
 */
export const MAX_DEPTH = 256;
/**
 * Most values one YAML document may hold: the parser needs up to ~500 bytes a value while it
 * reads a document (about 1 GB at this limit). A `kubectl get -o yaml` List of some 25,000 pods
 * has this many, and its text is larger than the default file size limit anyway.
 */
export const MAX_DOCUMENT_VALUES = 2_000_000;

/**
 * Most documents read from one file. Each costs about 2 KB while its file is read (its object,
 * locator and span), so a file of millions of empty documents (`{}` and `---`, 6 bytes each)
 * would outgrow the heap within the file size limit; real files hold far fewer (a generated
 * 100,000-pod cluster has 100,000 in its largest file; kubectl dumps are one List document).
 */
export const MAX_DOCUMENTS = 500_000;

const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions & { logLevel: 'error' } = {
  // The parser's warnings would go to process.emitWarning, printed as a Node runtime warning.
  logLevel: 'error',
  // Repeated keys are found by noteDocument, in linear time.
  uniqueKeys: false,
  prettyErrors: false,
  version: '1.1',
  customTags: kubectlTags,
};

export function parseDocuments(
  input: InputFile,
  /** Tests lower the document limit to reach it cheaply. */
  maxDocuments = MAX_DOCUMENTS,
): { objects: RawObject[]; diagnostics: Diagnostic[] } {
  const objects: RawObject[] = [];
  const diagnostics = readDocuments(
    input,
    {
      object: (raw) => objects.push(raw),
      discard: () => (objects.length = 0),
    },
    maxDocuments,
  );
  return { objects, diagnostics };
}

/** Where readDocuments puts a file's objects. */
interface DocumentVisitor {
  /** The next object of the file, in order (List items unrolled). */
  object(raw: RawObject): void;
  /**
   * Forget every object given so far from this file: it is read again the YAML way (a JSON
   * syntax error further on), or skipped whole (an unrendered template, a tool's configuration).
   */
  discard(): void;
  /** How far into the file the objects given so far reach (0 to 1), now and then: for progress. */
  progress?(fraction: number): void;
}

/**
 * Same as parseDocuments, handing each object to `visitor` as soon as it is parsed rather than
 * keeping them all, so that a caller that decodes it at once lets its parsed document die young;
 * returns the file's diagnostics. Objects are final once this returns.
 */
export function readDocuments(
  input: InputFile,
  visitor: DocumentVisitor,
  maxDocuments = MAX_DOCUMENTS,
): Diagnostic[] {
  let diagnostics = new DiagnosticSink();
  let count = 0;
  let kinds = false;
  const emit = (raw: RawObject): void => {
    count++;
    if (!kinds && typeof (raw.value as { kind?: unknown }).kind === 'string') kinds = true;
    visitor.object(raw);
    if (visitor.progress && (count & 1023) === 0)
      visitor.progress(raw.locator.valueAt(raw.basePath).line / Math.max(1, lineCounter.lineStarts.length));
  };
  const lineCounter = new LineCounter();
  const position = (offset: number): SourceLocation => {
    const { line, col } = lineCounter.linePos(offset);
    return { file: input.name, line, column: col };
  };
  const text = input.text;
  fillLineCounter(text, lineCounter);

  // At most maxDocuments documents are read from a file, however they are read (fast, the YAML
  // way, cut from JSON objects one after another): millions of tiny ones would fill the heap.
  let documents = 0;
  let said = false; // TOO_MANY_DOCUMENTS is in the diagnostics
  let full = false; // the file's documents are all read that will be
  const tooMany = (where: SourceLocation): void => {
    full = true;
    if (said) return;
    said = true;
    diagnostics.add(
      makeDiagnostic(
        'TOO_MANY_DOCUMENTS',
        `this file holds more than ${maxDocuments.toLocaleString('en-US')} documents, the most Palisade reads from one file; the documents from here on are skipped (split the file)`,
        where,
      ),
    );
  };
  /** Counts the document about to be read at `where`; false when the file may hold no more. */
  const room = (where: () => SourceLocation): boolean => {
    if (full) return false;
    if (++documents <= maxDocuments) return true;
    tooMany(where());
    return false;
  };
  /** How many more documents a part of the file may hold, the one that says "too many" included. */
  const left = (): number => Math.max(1, maxDocuments - documents + 1);

  // The YAML way, for the whole file or for the documents the JSON fast path cannot take.
  const read = (slice: string): Document => parseDocument(slice, YAML_OPTIONS);
  let collectionKey = false;
  const cache = new DocumentCache();
  // Runs of accepted documents are parsed as one stream each; a refused document is never
  // shown to the parser (even blanked out, its lines would cost the lexer time).
  let run: DocumentSpan[] = [];
  const parseRun = (): void => {
    let spans: readonly DocumentSpan[] = run;
    run = [];
    while (spans.length > 0) spans = parseSpans(spans);
  };
  /**
   * Reads `spans` as one stream; returns the spans still to read when a document ran on into the
   * next one. The parser lets a quoted string never closed run to the end of the stream, across
   * `---` lines (YAML does not allow a document marker inside a string, and no one means one
   * there), so the documents after it would be lost: that document is read again on its own
   * and the spans after it as a run of their own. That reads a run again at most once per kind
   * of quote: the parser runs on only when that quote character occurs nowhere after the string
   * (but doubled or escaped), so the spans after it cannot run on with it again.
   */
  const parseSpans = (spans: readonly DocumentSpan[]): readonly DocumentSpan[] => {
    const first = spans[0] as DocumentSpan;
    const last = spans[spans.length - 1] as DocumentSpan;
    const base = first.start;
    const segment = base === 0 && last.end === text.length ? text : text.slice(base, last.end);
    const composer = new Composer(YAML_OPTIONS);
    let next = 0;
    for (const document of composer.compose(new Parser().parse(segment))) {
      const offset = base + (document.range?.[0] ?? 0);
      while (next < spans.length - 1 && (spans[next + 1] as DocumentSpan).start <= offset) next++;
      const span = spans[next] as DocumentSpan;
      const following = spans[next + 1];
      if (following && base + (document.range?.[2] ?? 0) > following.start) {
        parseSpans([span]); // alone, it has no other document to run into
        return spans.slice(next + 1);
      }
      readDocument(document, span, segment, base);
    }
    return [];
  };
  const take = (span: DocumentSpan): void => {
    if (!room(() => position(span.start))) return;
    if (span.tooDeepAt !== undefined || span.values > MAX_DOCUMENT_VALUES) {
      parseRun();
      diagnostics.add(refusal(span, position, /^\s*[[{]/.test(text.slice(span.start, span.start + 64))));
    } else run.push(span);
  };
  const readSpans = (spans: readonly DocumentSpan[]): void => {
    for (const span of spans) {
      if (full) break;
      const objectStarts = jsonObjectStarts(text, span, left());
      if (!objectStarts) {
        take(span);
        continue;
      }
      // JSON objects one after another (json-lines.ts): each is parsed as a stream of its own.
      parseRun();
      for (const piece of splitJsonObjects(text, span, objectStarts, MAX_DEPTH)) {
        take(piece);
        parseRun();
      }
    }
    parseRun();
  };
  /** The documents of text[from, to), read the YAML way, within the file's budget. */
  const readPart = (from: number, to: number): void => {
    if (full) return;
    const spans = scanYamlDocuments(text.slice(from, to), MAX_DEPTH, left());
    readSpans(shiftSpans(spans, from));
    if (spans.truncatedAt !== undefined) tooMany(position(from + spans.truncatedAt));
  };

  // JSON documents (generated clusters, `kubectl get -o json`): parsed without syntax trees;
  // one that must be read the YAML way is read so in its place, unless it holds a character
  // that makes the whole file unreadable (below).
  const json = eachJsonDocument(
    text,
    position,
    { maxDepth: MAX_DEPTH, maxValues: MAX_DOCUMENT_VALUES, maxDocuments },
    ({ value, locator }) => {
      if (room(() => locator.valueAt([]))) unrollLists(value, [], input.name, locator, emit, diagnostics);
    },
    (from, to) => {
      if (firstForbiddenCharacter(text.slice(from, to)) >= 0) return false;
      readPart(from, to);
      return true;
    },
  );
  if (json) return judged(input, visitor, diagnostics, collectionKey, count, kinds);
  // Not JSON documents after all: what was read of them is read again the YAML way.
  if (count > 0) visitor.discard();
  diagnostics = new DiagnosticSink();
  count = 0;
  kinds = false;
  collectionKey = false;
  documents = 0;
  said = false;
  full = false;

  const forbidden = firstForbiddenCharacter(text);
  if (forbidden >= 0) {
    const code = text.charCodeAt(forbidden).toString(16).toUpperCase().padStart(2, '0');
    diagnostics.add(
      makeDiagnostic(
        'CONTROL_CHARACTER',
        `control character U+${code.padStart(4, '0')} is not allowed in YAML (kubectl rejects the file); the file is skipped`,
        position(forbidden),
      ),
    );
    return diagnostics.list();
  }
  readPart(0, text.length);
  return judged(input, visitor, diagnostics, collectionKey, count, kinds);

  /** One document of a run whose text is `segment`, starting at `base` in the file. */
  function readDocument(document: Document, span: DocumentSpan, segment: string, base: number): void {
    if (document.errors.length > 0) {
      const where = {
        text,
        start: span.start,
        end: span.end,
        base,
        lineStarts: lineCounter.lineStarts,
        position,
      };
      const { diagnostics: errors, readUntil } = syntaxErrors(where, document);
      diagnostics.addAll(errors);
      // What the parser read before the first mistake has the structure it seems to have, so a
      // key repeated there is a mistake of its own, reported too (fixing the syntax error alone
      // would only reveal it); past the mistake the parser only guesses.
      for (const duplicate of noteDocument(document, segment, base).duplicates)
        if (duplicate.offset < readUntil) reportDuplicate(duplicate);
      return; // a broken document is skipped whole; the others in the file still count
    }
    const notes = noteDocument(document, segment, base);
    if (notes.collectionKey) collectionKey = true;
    if (notes.duplicates.length > 0) {
      for (const duplicate of notes.duplicates) reportDuplicate(duplicate);
      return;
    }
    let value: unknown;
    try {
      value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (error) {
      const message = explainParserError(error instanceof Error ? error.message : String(error));
      const code =
        /alias/i.test(message) && /count|exceed|excessive/i.test(message)
          ? 'YAML_ALIAS_LIMIT'
          : 'YAML_SYNTAX';
      // The parser names an unresolved alias but does not place it: find it.
      const alias = /unresolved alias/i.test(message) ? unresolvedAliasOffset(document) : undefined;
      diagnostics.add(makeDiagnostic(code, message, position(base + (alias ?? document.range?.[0] ?? 0))));
      return;
    }
    if (value === null || value === undefined) return; // empty document between `---` lines
    const locator = new YamlLocator(text, span.start, span.end, notes, position, read, cache);
    if (typeof value !== 'object' || Array.isArray(value)) {
      diagnostics.add(
        makeDiagnostic(
          'NOT_AN_OBJECT',
          'document is not a Kubernetes object (expected a mapping with apiVersion and kind)',
          locator.valueAt([]),
        ),
      );
      return;
    }
    unrollLists(value as Record<string, unknown>, [], input.name, locator, emit, diagnostics);
  }

  function reportDuplicate(duplicate: { key: string; offset: number; first: number }): void {
    diagnostics.add(
      makeDiagnostic(
        'YAML_DUPLICATE_KEY',
        `the key "${duplicate.key}" is repeated in this mapping (first at line ${position(duplicate.first).line}); kubectl rejects it`,
        position(duplicate.offset),
      ),
    );
  }
}

/**
 * The file's diagnostics, unless the file as a whole is something else: an unrendered template
 * (template actions, and YAML that does not read or reads `{{ x }}` as a mapping key) is one
 * warning; a file found in a directory whose documents all read but none has a `kind` (a tool's
 * configuration) is one info. Either way its objects are not analysed: the visitor discards them.
 */
function judged(
  input: InputFile,
  visitor: DocumentVisitor,
  diagnostics: DiagnosticSink,
  collectionKey: boolean,
  objects: number,
  kinds: boolean,
): Diagnostic[] {
  const listed = diagnostics.list();
  const broken = listed.some((d) => d.severity === 'error');
  const at = broken || collectionKey ? templateActionAt(input.text) : -1;
  if (at >= 0) {
    visitor.discard();
    const line = input.text.slice(0, at).split('\n').length;
    return [
      makeDiagnostic(
        'TEMPLATE_NOT_RENDERED',
        'this file is a template (Helm or Go template actions such as {{ .Values.x }}), not YAML yet; render it first (helm template …) and analyse the result; skipped',
        { file: input.name, line, column: at - input.text.lastIndexOf('\n', at - 1) },
      ),
    ];
  }
  // Named on purpose, yet nothing in it: most likely not the file meant (an empty file found in
  // a directory is a placeholder, and says nothing).
  if (input.piece) return listed;
  if (!input.discovered && objects === 0 && listed.length === 0 && !holdsDocument(input.text)) {
    return [
      makeDiagnostic(
        'FILE_EMPTY',
        `${input.name} holds no object (it is empty, or only comments and --- lines); is it the file you meant?`,
        { file: input.name },
      ),
    ];
  }
  if (input.discovered && !broken && objects > 0 && !kinds) {
    visitor.discard();
    return [
      makeDiagnostic(
        'NOT_KUBERNETES',
        `${input.name} holds no Kubernetes object (no document has a kind); skipped`,
        { file: input.name },
      ),
    ];
  }
  return listed;
}

/**
 * Whether any line is more than white space, a comment or a document separator: an empty List
 * (what `kubectl get -o yaml` writes when there is nothing) or a `null` is a document, not an
 * empty file.
 */
function holdsDocument(text: string): boolean {
  return /^(?![ \t]*(?:#.*)?\r?$)(?!(?:---|\.\.\.)[ \t]*(?:#.*)?\r?$)./m.test(text);
}

function refusal(
  span: DocumentSpan,
  position: (offset: number) => SourceLocation,
  json: boolean,
): Diagnostic {
  if (span.tooDeepAt !== undefined) {
    return makeDiagnostic(
      'NESTING_TOO_DEEP',
      `this document nests deeper than ${MAX_DEPTH} levels, the most Palisade reads; the document is skipped`,
      position(span.tooDeepAt),
    );
  }
  // The limit holds for JSON too (its documents are read whole), so the way out is to split it.
  const what = json ? 'JSON document' : 'document';
  return makeDiagnostic(
    'DOCUMENT_TOO_LARGE',
    `this ${what} holds about ${span.values.toLocaleString('en-US')} values, more than the ${MAX_DOCUMENT_VALUES.toLocaleString('en-US')} Palisade reads from one document; the document is skipped (split it: several documents, or several files)`,
    position(span.start),
  );
}

function unrollLists(
  value: Record<string, unknown>,
  basePath: FieldPath,
  file: string,
  locator: Locator,
  emit: (raw: RawObject) => void,
  diagnostics: DiagnosticSink,
): void {
  const kind = value.kind;
  const items = value.items;
  const list = typeof kind === 'string' && kind.endsWith('List');
  if (list && items !== undefined && items !== null && !Array.isArray(items)) {
    // kubectl rejects a List whose items are not a list; skipping it silently would hide objects.
    const what = typeof items === 'object' ? 'a mapping' : `the ${typeof items} ${JSON.stringify(items)}`;
    diagnostics.add(
      makeDiagnostic('SCHEMA_TYPE', `"items" of a ${kind} must be a list, not ${what}`, {
        ...locator.valueAt([...basePath, 'items']),
        object: kind,
        path: 'items',
      }),
    );
    return;
  }
  if (!list || !Array.isArray(items)) {
    if (list && kind === 'List') return; // a List without items: nothing in it
    emit({ value, file, basePath, locator });
    return;
  }
  // Typed lists from the API (PodList, NamespaceList...) omit kind and apiVersion on their items.
  const itemKind = kind === 'List' ? undefined : kind.slice(0, -'List'.length);
  (items as unknown[]).forEach((item, index) => {
    const path = [...basePath, 'items', index];
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      diagnostics.add(
        makeDiagnostic('NOT_AN_OBJECT', `List item ${index} is not an object`, locator.valueAt(path)),
      );
      return;
    }
    const object = item as Record<string, unknown>;
    const typed =
      itemKind && object.kind === undefined
        ? { apiVersion: value.apiVersion, kind: itemKind, ...object }
        : object;
    unrollLists(typed, path, file, locator, emit, diagnostics);
  });
}

/**
 * Where the first alias with no anchor before it is, in one pass (the parser's own lookup
 * visits the document once per alias).
 */
function unresolvedAliasOffset(document: Document): number | undefined {
  const anchors = new Set<string>();
  let offset: number | undefined;
  visit(document, {
    Node(_key, node) {
      if (isAlias(node)) {
        if (anchors.has(node.source)) return undefined;
        offset = node.range?.[0];
        return visit.BREAK;
      }
      if (node.anchor) anchors.add(node.anchor);
      return undefined;
    },
  });
  return offset;
}
