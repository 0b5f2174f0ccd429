/**
 * What the kernel holds, read back: `list table inet palisade` (nft's JSON) turned into the
 * renderer's own model — sets with their elements, verdict maps with their entries, chains with
 * their rule counts — plus the table's fingerprint. The renderer plans its next transaction from
 * this when it attaches to a table it did not just write, and after any failed or uncertain
 * commit, so what it sends always starts from what is really there.
 *
 * Rules are not compared text for text: chains other than the base chains are named after their
 * content (a table id, a content hash), so a chain that exists with the right number of rules is
 * taken as the chain of that name. Base chains are compared by rule count.
 */
import type { NftRunner } from '../../dataplane/index.ts';
import { FINGERPRINT_SET, TABLE } from './names.ts';
import { NftObjects } from './objects.ts';

export interface KernelTable {
  /** Sets (without the fingerprint), maps, and chains (rule texts unknown: placeholders). */
  readonly objects: NftObjects;
  /** Rules per chain, base chains included. */
  readonly ruleCounts: ReadonlyMap<string, number>;
  /** `generation . nonce` as nft prints it in the fingerprint set, if the table has one. */
  readonly fingerprint: Fingerprint | undefined;
}

export interface Fingerprint {
  readonly generation: number;
  readonly nonce: number;
}

export const fingerprintText = (f: Fingerprint): string => `${f.generation} . ${f.nonce}`;

type Json = Record<string, unknown>;

/** Reads the whole table; undefined when there is none. Throws DataplaneError if nft fails. */
export function readBack(runner: NftRunner): KernelTable | undefined {
  const text = runner.query(`list table ${TABLE}`);
  return text === undefined ? undefined : parseTable(text);
}

/** Reads only the fingerprint (one small set): undefined when the table or the set is missing. */
export function readFingerprint(runner: NftRunner): Fingerprint | undefined {
  const text = runner.query(`list set ${TABLE} ${FINGERPRINT_SET}`);
  if (text === undefined) return undefined;
  for (const item of listingItems(text)) {
    const set = item.set as Json | undefined;
    if (set?.name === FINGERPRINT_SET) return fingerprintOf(set);
  }
  return undefined;
}

/** The objects of nft's JSON output, in order. */
export function listingItems(text: string): Json[] {
  const parsed = JSON.parse(text) as { nftables?: Json[] };
  return parsed.nftables ?? [];
}

function parseTable(text: string): KernelTable {
  const objects = new NftObjects();
  const ruleCounts = new Map<string, number>();
  let fingerprint: Fingerprint | undefined;
  for (const item of listingItems(text)) {
    if (item.set) {
      const set = item.set as Json;
      const name = String(set.name);
      if (name === FINGERPRINT_SET) {
        fingerprint = fingerprintOf(set);
        continue;
      }
      const flags = (set.flags as string[] | undefined) ?? [];
      const interval = flags.includes('interval');
      const type = Array.isArray(set.type) ? (set.type as string[]).join(' . ') : String(set.type);
      const elements = new Set(
        ((set.elem as unknown[] | undefined) ?? []).map((e) => elementText(e, interval)),
      );
      objects.sets.set(name, { declaration: { type, ...(interval ? { interval } : {}) }, elements });
    } else if (item.map) {
      const map = item.map as Json;
      const entries = new Map<string, string>();
      for (const pair of (map.elem as [unknown, unknown][] | undefined) ?? [])
        entries.set(elementText(pair[0], false), verdictText(pair[1]));
      objects.maps.set(String(map.name), { type: String(map.type), entries });
    } else if (item.chain) {
      ruleCounts.set(String((item.chain as Json).name), 0);
    } else if (item.rule) {
      const chain = String((item.rule as Json).chain);
      ruleCounts.set(chain, (ruleCounts.get(chain) ?? 0) + 1);
    }
  }
  for (const [name, count] of ruleCounts)
    objects.chains.set(
      name,
      Array.from({ length: count }, () => '?'),
    );
  return { objects, ruleCounts, fingerprint };
}

export function fingerprintOf(set: Json): Fingerprint | undefined {
  const [element] = (set.elem as unknown[] | undefined) ?? [];
  const parts = ((element as Json | undefined)?.concat as unknown[] | undefined) ?? [];
  const [generation, nonce] = parts.map(Number);
  return generation !== undefined &&
    nonce !== undefined &&
    Number.isFinite(generation) &&
    Number.isFinite(nonce)
    ? { generation, nonce }
    : undefined;
}

/** An element as the renderer writes it: addresses as text, prefixes `a/len`, ranges `a-b`. */
export function elementText(element: unknown, interval: boolean): string {
  if (typeof element === 'string') return interval ? hostPrefix(element) : element;
  if (typeof element === 'number') return String(element);
  const e = element as Json;
  if (e.prefix) {
    const p = e.prefix as { addr: string; len: number };
    return `${p.addr}/${p.len}`;
  }
  if (e.range) {
    const [a, b] = e.range as [unknown, unknown];
    return `${elementText(a, false)}-${elementText(b, false)}`;
  }
  // An interval concatenation (address ranges . family): the address field is an interval.
  if (e.concat) return (e.concat as unknown[]).map((x, i) => elementText(x, interval && i === 0)).join(' . ');
  if (e.elem) return elementText((e.elem as Json).val, interval);
  return JSON.stringify(element);
}

/** nft prints a one-address interval as the address; the renderer writes it as a /32 or /128. */
const hostPrefix = (address: string): string => `${address}/${address.includes(':') ? 128 : 32}`;

export function verdictText(verdict: unknown): string {
  const v = verdict as Json;
  const [kind] = Object.keys(v);
  if (kind === undefined) return JSON.stringify(verdict);
  const target = (v[kind] as { target?: string } | null)?.target;
  return target ? `${kind} ${target}` : kind;
}
