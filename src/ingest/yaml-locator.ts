/**
 * Positions in a YAML document without keeping its syntax tree. The tree costs tens of bytes
 * of memory per byte of YAML, and a file's trees were all kept until the end of the load: a
 * large YAML input ran out of memory. Now each document's tree lives only while the document is
 * read; what every object needs afterwards (where it starts, the source of numbers written in an
 * unusual form) is noted then, and any other position — asked only for a diagnostic — comes from
 * reading that one document again. A few re-read documents are kept per file, since an object's
 * diagnostics come together.
 */
import { isMap, isNode, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';
import type { SourceLocation } from '../model/types.ts';
import type { FieldPath, Locator } from './types.ts';

/** How a document is read again: the same options as the first time. */
type ReadDocument = (text: string) => Document;

/** Documents re-read for positions, per file: the most recent few. */
export class DocumentCache {
  private readonly entries: { key: number; document: Document }[] = [];
  constructor(private readonly size = 4) {}

  get(key: number, read: () => Document): Document {
    const index = this.entries.findIndex((e) => e.key === key);
    if (index >= 0) return (this.entries[index] as { document: Document }).document;
    const document = read();
    this.entries.unshift({ key, document });
    if (this.entries.length > this.size) this.entries.pop();
    return document;
  }
}

/** What is noted about a document while its tree exists. */
interface DocumentNotes {
  /** Offset of each object's start (the root's, and List items', keyed by their path). */
  readonly starts: ReadonlyMap<string, number>;
  /** Numbers written otherwise than as a decimal integer (`80.0`, `0x50`, `8e1`), by path. */
  readonly numberForms: ReadonlyMap<string, string>;
  /** Keys repeated in a mapping: the key, where it is repeated, and where it first was. */
  readonly duplicates: readonly { readonly key: string; readonly offset: number; readonly first: number }[];
  /** Whether some mapping has a mapping or list as a key (what `{{ x }}` reads as in YAML). */
  readonly collectionKey: boolean;
}

/** A map key for a path: each segment after a NUL, so `[]`, `['']` and `['a', '']` differ. */
function pathKey(path: FieldPath): string {
  let key = '';
  for (const segment of path) key += `\u0000${segment}`;
  return key;
}

/**
 * Notes, in one walk of a document's tree (parsed from `source`, which starts at `base` in its
 * file; offsets noted are the file's), what later stages need from it: where the objects
 * start (the root and, through `List` kinds, their items), the source of every number not
 * written as a decimal integer, and repeated keys (one set per mapping: linear, where the
 * parser's own check compares each key with every earlier one).
 */
export function noteDocument(document: Document, source: string, base: number): DocumentNotes {
  const starts = new Map<string, number>();
  const numberForms = new Map<string, string>();
  const duplicates: { key: string; offset: number; first: number }[] = [];
  let collectionKey = false;
  const visit = (node: unknown, path: (string | number)[], isObject: boolean): void => {
    if (isScalar(node)) {
      if (typeof node.value === 'number' && node.range) {
        const text = source.slice(node.range[0], node.range[1]).trim();
        if (!/^-?(0|[1-9][0-9]*)$/.test(text)) numberForms.set(pathKey(path), text);
      }
    } else if (isMap(node)) {
      if (isObject && node.range) starts.set(pathKey(path), base + node.range[0]);
      const seen = new Map<string, number>();
      let list = false;
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const keyNode = pair.key;
        if (isMap(keyNode) || isSeq(keyNode)) collectionKey = true;
        const key = isScalar(keyNode) ? keyNode.value : keyNode;
        if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'boolean') continue;
        const name = String(key);
        const offset = base + (isNode(keyNode) && keyNode.range ? keyNode.range[0] : (node.range?.[0] ?? 0));
        const first = seen.get(name);
        if (first !== undefined) duplicates.push({ key: name, offset, first });
        else seen.set(name, offset);
        if (isObject && name === 'kind' && isScalar(pair.value)) {
          const kind = pair.value.value;
          list = typeof kind === 'string' && kind.endsWith('List');
        }
      }
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        if (typeof key !== 'string' && typeof key !== 'number') continue;
        // The items of a List are objects too (the parser's caller unrolls them).
        if (list && key === 'items' && isSeq(pair.value))
          pair.value.items.forEach((item, index) => visit(item, [...path, 'items', index], true));
        else visit(pair.value, [...path, key], false);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => visit(item, [...path, index], false));
    }
  };
  visit(document.contents, [], true);
  if (!starts.has(pathKey([])) && isNode(document.contents) && document.contents.range)
    starts.set(pathKey([]), base + document.contents.range[0]);
  return { starts, numberForms, duplicates, collectionKey };
}

/** A locator for one document of a YAML file. */
export class YamlLocator implements Locator {
  constructor(
    private readonly text: string,
    /** Where the document's text starts and ends in the file (a line start). */
    private readonly from: number,
    private readonly to: number,
    private readonly notes: DocumentNotes,
    private readonly position: (offset: number) => SourceLocation,
    private readonly read: ReadDocument,
    private readonly cache: DocumentCache,
  ) {}

  valueAt(path: FieldPath): SourceLocation {
    const start = this.notes.starts.get(pathKey(path));
    if (start !== undefined) return this.position(start);
    const document = this.document();
    for (let p = path; ; p = p.slice(0, -1)) {
      const node = this.nodeAt(document, p);
      if (node?.range) return this.position(this.from + node.range[0]);
      if (p.length === 0) return this.position(this.notes.starts.get(pathKey([])) ?? this.from);
    }
  }

  keyAt(path: FieldPath): SourceLocation {
    const document = this.document();
    const parent = this.nodeAt(document, path.slice(0, -1));
    const last = path[path.length - 1];
    if (isMap(parent)) {
      for (const pair of parent.items) {
        const key = pair.key;
        if (isNode(key) && key.range && 'value' in key && String(key.value) === String(last))
          return this.position(this.from + key.range[0]);
      }
    }
    return this.valueAt(path);
  }

  numberFormAt(path: FieldPath): string | undefined {
    return this.notes.numberForms.get(pathKey(path));
  }

  stringCharAt(path: FieldPath, index: number): SourceLocation | undefined {
    const node = this.nodeAt(this.document(), path);
    if (!isScalar(node) || typeof node.value !== 'string' || !node.range) return undefined;
    const quoted = node.type === 'QUOTE_SINGLE' || node.type === 'QUOTE_DOUBLE';
    if (!quoted && node.type !== 'PLAIN') return undefined;
    const start = node.range[0] + (quoted ? 1 : 0);
    const source = this.text.slice(this.from + start, this.from + start + index);
    // Only where the source spells the value character for character: one line, no escapes.
    if (source !== node.value.slice(0, index)) return undefined;
    return this.position(this.from + start + index);
  }

  private document(): Document {
    return this.cache.get(this.from, () => this.read(this.text.slice(this.from, this.to)));
  }

  private nodeAt(document: Document, path: FieldPath): Node | undefined {
    const node: unknown = path.length === 0 ? document.contents : document.getIn(path, true);
    return isNode(node) ? node : undefined;
  }
}
