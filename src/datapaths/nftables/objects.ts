/**
 * The contents of Palisade's nftables table as data — sets with their elements, verdict maps with
 * their entries, chains with their rules — and the scripts that create it whole or change it.
 * The renderer keeps two copies: what it wants (desired) and what the kernel last accepted
 * (applied). Changes are tracked per set element, map entry and chain, so a transaction lists
 * only what changed and costs time in proportion to it.
 */
import { FINGERPRINT_SET, FINGERPRINT_TYPE, TABLE } from './names.ts';

export interface SetDeclaration {
  readonly type: string;
  readonly interval?: boolean;
  readonly comment?: string;
}

export class NftObjects {
  readonly sets = new Map<string, { readonly declaration: SetDeclaration; readonly elements: Set<string> }>();
  /** Verdict maps: key (an address) → verdict (`goto t_…` or `return`). */
  readonly maps = new Map<string, { readonly type: string; readonly entries: Map<string, string> }>();
  readonly chains = new Map<string, readonly string[]>();
}

/** What changed since the last commit: names of sets/chains, and elements/entries within them. */
export class Dirty {
  readonly sets = new Set<string>();
  readonly elements = new Map<string, Set<string>>();
  readonly entries = new Map<string, Set<string>>();
  readonly chains = new Set<string>();

  element(set: string, element: string): void {
    let elements = this.elements.get(set);
    if (!elements) this.elements.set(set, (elements = new Set()));
    elements.add(element);
  }

  entry(map: string, key: string): void {
    let keys = this.entries.get(map);
    if (!keys) this.entries.set(map, (keys = new Set()));
    keys.add(key);
  }

  get empty(): boolean {
    return this.sets.size + this.elements.size + this.entries.size + this.chains.size === 0;
  }

  clear(): void {
    this.sets.clear();
    this.elements.clear();
    this.entries.clear();
    this.chains.clear();
  }
}

function setBody(declaration: SetDeclaration): string {
  const parts = [`type ${declaration.type};`];
  if (declaration.interval) parts.push('flags interval;');
  if (declaration.comment) parts.push(`comment ${quote(declaration.comment)};`);
  return parts.join(' ');
}

/** nft strings cannot contain a double quote; comments are for people, so it is replaced. */
const quote = (text: string): string => `"${text.replace(/"/g, "'").slice(0, 120)}"`;

/** Most elements on one line: one huge line is slow for nft's parser. */
const ELEMENTS_PER_LINE = 500;

/** Elements in lines of bounded length (`prefix { a, b, … }` each). */
function elementLines(prefix: string, elements: Iterable<string>): string[] {
  const lines: string[] = [];
  let batch: string[] = [];
  for (const element of elements) {
    batch.push(element);
    if (batch.length === ELEMENTS_PER_LINE) {
      lines.push(`${prefix} { ${batch.join(', ')} }`);
      batch = [];
    }
  }
  if (batch.length > 0) lines.push(`${prefix} { ${batch.join(', ')} }`);
  return lines;
}

export const declareSet = (name: string, declaration: SetDeclaration): string =>
  `add set ${TABLE} ${name} { ${setBody(declaration)} }`;
export const addElements = (set: string, elements: Iterable<string>): string[] =>
  elementLines(`add element ${TABLE} ${set}`, elements);
export const deleteElements = (set: string, elements: Iterable<string>): string[] =>
  elementLines(`delete element ${TABLE} ${set}`, elements);
export const addEntries = (map: string, entries: Iterable<[string, string]>): string[] =>
  elementLines(
    `add element ${TABLE} ${map}`,
    [...entries].map(([k, v]) => `${k} : ${v}`),
  );
export const deleteEntries = (map: string, keys: Iterable<string>): string[] =>
  elementLines(`delete element ${TABLE} ${map}`, keys);

/** Creates a chain with its rules; `flush` first empties one that exists with other rules. */
export function addChain(name: string, lines: readonly string[], flush = false): string[] {
  return [
    `add chain ${TABLE} ${name}`,
    ...(flush ? [`flush chain ${TABLE} ${name}`] : []),
    ...lines.map((line) => `add rule ${TABLE} ${name} ${line}`),
  ];
}
export const deleteChain = (name: string): string => `delete chain ${TABLE} ${name}`;
export const deleteSet = (name: string): string => `delete set ${TABLE} ${name}`;

/**
 * The whole table as one block, for a first apply or a resync (`nft list`-like, readable). A set
 * or map whose elements fit one line holds them in the block (`elements = { … }`); a larger one is
 * filled by `add element` lines after it, in the same transaction — inside a block, each
 * `elements =` line replaces the one before it rather than adding to it, so a set written as
 * several such lines held only its last line's elements.
 */
export function tableBlock(
  objects: NftObjects,
  baseChains: ReadonlyMap<string, readonly string[]>,
  fingerprint: string,
): string {
  const out: string[] = [`table ${TABLE} {`];
  const after: string[] = [];
  /** `elements = { … }` inside the block when they fit one line, else `add element` lines after it. */
  const fill = (name: string, elements: readonly string[]): void => {
    if (elements.length === 0) return;
    if (elements.length <= ELEMENTS_PER_LINE) out.push(`\t\telements = { ${elements.join(', ')} }`);
    else for (const line of elementLines(`add element ${TABLE} ${name}`, elements)) after.push(line);
  };
  out.push(
    `\tset ${FINGERPRINT_SET} {`,
    `\t\ttype ${FINGERPRINT_TYPE};`,
    `\t\telements = { ${fingerprint} }`,
    '\t}',
  );
  for (const [name, set] of [...objects.sets].sort(byName)) {
    out.push(`\tset ${name} {`, `\t\t${setBody(set.declaration).replace(/; /g, ';\n\t\t')}`);
    fill(name, [...set.elements].sort());
    out.push('\t}');
  }
  for (const [name, map] of [...objects.maps].sort(byName)) {
    out.push(`\tmap ${name} {`, `\t\ttype ${map.type} : verdict;`);
    fill(
      name,
      [...map.entries].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k} : ${v}`),
    );
    out.push('\t}');
  }
  for (const [name, lines] of [...[...objects.chains].sort(byName), ...baseChains]) {
    out.push(`\tchain ${name} {`);
    // One by one: a chain's rules spread into push() would overflow the stack at ~125,000.
    for (const line of lines) out.push(`\t\t${line}`);
    out.push('\t}');
  }
  out.push('}');
  for (const line of after) out.push(line);
  return out.join('\n') + '\n';
}

function byName<T>([a]: [string, T], [b]: [string, T]): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Replaces the fingerprint element (see `names.ts`) within a transaction. */
export function fingerprintScript(before: string, after: string): string {
  return (
    `delete element ${TABLE} ${FINGERPRINT_SET} { ${before} }\n` +
    `add element ${TABLE} ${FINGERPRINT_SET} { ${after} }\n`
  );
}

/** Replaces the table atomically: create (so the delete cannot fail), delete, create whole. */
export function replaceTableScript(block: string): string {
  return `table ${TABLE} {}\ndelete table ${TABLE}\n${block}`;
}
