/**
 * Parses a file's text (YAML, multi-document, or JSON) into raw Kubernetes objects, each with a
 * locator back to its source. `List` kinds (and `kubectl get -o yaml|json` output) are unrolled
 * into their items. YAML 1.1 rules are used because kubectl's parser follows them (`yes` is a
 * boolean there), so type errors show up here as they would at apply time.
 */
import { isMap, isNode, LineCounter, parseAllDocuments, type Document, type Node } from 'yaml';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { FieldPath, InputFile, Locator, RawObject } from './types.ts';
import type { SourceLocation } from '../model/types.ts';
import { parseJsonDocuments } from './json-documents.ts';

const MAX_ALIAS_COUNT = 1000;

export function parseDocuments(input: InputFile): { objects: RawObject[]; diagnostics: Diagnostic[] } {
  const objects: RawObject[] = [];
  const diagnostics: Diagnostic[] = [];
  const lineCounter = new LineCounter();
  const position = (offset: number): SourceLocation => {
    const { line, col } = lineCounter.linePos(offset);
    return { file: input.name, line, column: col };
  };
  // JSON documents only (generated clusters, `kubectl get -o json`): parsed without syntax trees.
  const json = parseJsonDocuments(input.text, lineCounter, position);
  if (json) {
    for (const { value, locator } of json) unrollLists(value, [], input.name, locator, objects, diagnostics);
    return { objects, diagnostics };
  }
  const documents = parseAllDocuments(input.text, {
    lineCounter,
    uniqueKeys: true,
    prettyErrors: false,
    version: '1.1',
  });
  // parseAllDocuments returns an EmptyStream (not an array) for empty input.
  if (!Array.isArray(documents)) return { objects, diagnostics };
  for (const document of documents) {
    if (document.errors.length > 0) {
      for (const error of document.errors) {
        const code = error.code === 'DUPLICATE_KEY' ? 'YAML_DUPLICATE_KEY' : 'YAML_SYNTAX';
        const message = explain(error.message.split('\n')[0] ?? error.message);
        const where = position(error.pos[0]);
        diagnostics.push(makeDiagnostic(code, message + tabHint(input.text, lineCounter, where.line), where));
      }
      continue; // a broken document is skipped whole; the others in the file still count
    }
    let value: unknown;
    try {
      value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (error) {
      const message = explain(error instanceof Error ? error.message : String(error));
      const code =
        /alias/i.test(message) && /count|exceed|excessive/i.test(message)
          ? 'YAML_ALIAS_LIMIT'
          : 'YAML_SYNTAX';
      diagnostics.push(makeDiagnostic(code, message, position(document.range?.[0] ?? 0)));
      continue;
    }
    if (value === null || value === undefined) continue; // empty document between `---` lines
    const locator = makeLocator(document, position);
    if (typeof value !== 'object' || Array.isArray(value)) {
      diagnostics.push(
        makeDiagnostic(
          'NOT_AN_OBJECT',
          'document is not a Kubernetes object (expected a mapping with apiVersion and kind)',
          locator.valueAt([]),
        ),
      );
      continue;
    }
    unrollLists(value as Record<string, unknown>, [], input.name, locator, objects, diagnostics);
  }
  return { objects, diagnostics };
}

function unrollLists(
  value: Record<string, unknown>,
  basePath: FieldPath,
  file: string,
  locator: Locator,
  objects: RawObject[],
  diagnostics: Diagnostic[],
): void {
  const kind = value.kind;
  if (typeof kind !== 'string' || !kind.endsWith('List') || !Array.isArray(value.items)) {
    objects.push({ value, file, basePath, locator });
    return;
  }
  // Typed lists from the API (PodList, NamespaceList...) omit kind and apiVersion on their items.
  const itemKind = kind === 'List' ? undefined : kind.slice(0, -'List'.length);
  (value.items as unknown[]).forEach((item, index) => {
    const path = [...basePath, 'items', index];
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      diagnostics.push(
        makeDiagnostic('NOT_AN_OBJECT', `List item ${index} is not an object`, locator.valueAt(path)),
      );
      return;
    }
    const object = item as Record<string, unknown>;
    const typed =
      itemKind && object.kind === undefined
        ? { apiVersion: value.apiVersion, kind: itemKind, ...object }
        : object;
    unrollLists(typed, path, file, locator, objects, diagnostics);
  });
}

function makeLocator(document: Document, position: (offset: number) => SourceLocation): Locator {
  const nodeAt = (path: FieldPath): Node | undefined => {
    const node: unknown = path.length === 0 ? document.contents : document.getIn(path, true);
    return isNode(node) ? node : undefined;
  };
  const valueAt = (path: FieldPath): SourceLocation => {
    for (let p = path; ; p = p.slice(0, -1)) {
      const node = nodeAt(p);
      if (node?.range) return position(node.range[0]);
      if (p.length === 0) return position(document.range?.[0] ?? 0);
    }
  };
  return {
    valueAt,
    keyAt(path) {
      const parent = nodeAt(path.slice(0, -1));
      const last = path[path.length - 1];
      if (isMap(parent)) {
        for (const pair of parent.items) {
          const key = pair.key;
          if (isNode(key) && key.range && 'value' in key && String(key.value) === String(last)) {
            return position(key.range[0]);
          }
        }
      }
      return valueAt(path);
    },
  };
}

/** YAML forbids tabs in indentation, but many editors insert them; say so when that is the cause. */
function tabHint(text: string, lineCounter: LineCounter, line: number): string {
  for (const candidate of [line, line - 1]) {
    const start = lineCounter.lineStarts[candidate - 1];
    if (start === undefined) continue;
    const end = text.indexOf('\n', start);
    const content = text.slice(start, end < 0 ? undefined : end);
    if (/^[ ]*\t/.test(content))
      return ` (line ${candidate} is indented with a tab; YAML allows only spaces)`;
  }
  return '';
}

/** Pathologically deep nesting exhausts the parser's stack; say what that means. */
function explain(message: string): string {
  return /call stack/i.test(message) ? `document is nested too deeply to read (${message})` : message;
}
