/**
 * Auditing the kernel's `inet palisade` table against what the renderer last committed: the
 * agent's defence against other writers (an operator's `nft delete table`, a tool flushing a
 * chain, a rule replaced, a set edited, the table made dormant, a hook chain recreated without
 * its hook). Every difference is one line for the log and the status; the renderer repairs them
 * all with one transaction that replaces the table.
 *
 * What is compared, from one JSON listing of the table:
 * - the table itself: present, and without flags (`dormant` is the one that matters);
 * - the fingerprint the last commit wrote;
 * - every set and map: present, of its declared type, with exactly the elements and entries the
 *   renderer holds as committed; none that is not the renderer's;
 * - every chain: present, with as many rules as committed, hook chains hooked as declared;
 * - rules, text for text: nft prints a rule in its own normal form, not as it was written, so a
 *   chain's rules are digested as the kernel prints them the first time they are audited after
 *   the commit that made them (`learned`), and compared with that digest from then on. Chains
 *   are named after their content, so a name's rules never change legitimately; the hook chains'
 *   rules change with the generation and are learned per generation. A chain not yet learned
 *   while another writer has touched the table (`learn: false`) counts as differing: the table
 *   is replaced, and learned afresh from what the replace wrote — from the replace's own echo
 *   (`learnFromEcho`): the rules as the kernel took them in that transaction, so an edit made
 *   right after it counts as an edit, whatever the monitor saw.
 */
import { hash } from 'node:crypto';
import type { NftObjects } from './objects.ts';
import { elementText, listingItems, verdictText, fingerprintOf, type Fingerprint } from './readback.ts';
import { FINGERPRINT_SET, TABLE } from './names.ts';

type Json = Record<string, unknown>;

/** What the last commit left, as the renderer holds it. */
interface CommittedTable {
  readonly fingerprint: Fingerprint;
  /** Sets, maps and chains other than the hook chains (chain lines: one per rule). */
  readonly objects: NftObjects;
  /** The hook and fixed chains, each with its declaration line first when it is hooked. */
  readonly baseChains: ReadonlyMap<string, readonly string[]>;
}

interface AuditOutcome {
  /** One line per difference (empty: the kernel holds what was committed). */
  readonly differences: readonly string[];
}

/** Most differences listed; the rest are counted in one more line. */
const MAX_LINES = 12;

/**
 * Audits `listing` (nft's JSON of the table, undefined when there is none). `learned` maps a
 * chain (hook chains: `name@generation`) to the digest of its rules; chains seen for the first
 * time are added to it when `learn` is set, and entries of chains gone are dropped.
 */
export function auditTable(
  listing: string | undefined,
  committed: CommittedTable,
  learned: Map<string, string>,
  learn: boolean,
): AuditOutcome {
  if (listing === undefined) return { differences: [`table ${TABLE} is missing`] };
  const out: string[] = [];
  const kernelSets = new Map<string, { type: string; interval: boolean; elements: Set<string> }>();
  const kernelMaps = new Map<string, { type: string; entries: Map<string, string> }>();
  const kernelChains = new Map<string, Json>();
  const rules = new Map<string, string[]>();
  let fingerprint: Fingerprint | undefined;
  for (const item of listingItems(listing)) {
    if (item.table) {
      const table = item.table as Json;
      // nft 1.0.6 prints a dormant table's flags wrongly but prints the key: any flag is a change.
      if (table.flags !== undefined) out.push(`table ${TABLE} has flags (dormant: it filters nothing)`);
    } else if (item.set) {
      const set = item.set as Json;
      const name = String(set.name);
      if (name === FINGERPRINT_SET) {
        fingerprint = fingerprintOf(set);
        continue;
      }
      const interval = ((set.flags as string[] | undefined) ?? []).includes('interval');
      const type = Array.isArray(set.type) ? (set.type as string[]).join(' . ') : String(set.type);
      const elements = new Set(
        ((set.elem as unknown[] | undefined) ?? []).map((e) => elementText(e, interval)),
      );
      kernelSets.set(name, { type, interval, elements });
    } else if (item.map) {
      const map = item.map as Json;
      const entries = new Map<string, string>();
      for (const pair of (map.elem as [unknown, unknown][] | undefined) ?? [])
        entries.set(elementText(pair[0], false), verdictText(pair[1]));
      kernelMaps.set(String(map.name), { type: String(map.type), entries });
    } else if (item.chain) {
      const chain = item.chain as Json;
      kernelChains.set(String(chain.name), chain);
      rules.set(String(chain.name), []);
    } else if (item.rule) {
      const rule = item.rule as Json;
      rules.get(String(rule.chain))?.push(ruleText(rule));
    }
  }
  const { objects } = committed;
  if (!fingerprint) out.push(`the fingerprint set is missing`);
  else if (
    fingerprint.generation !== committed.fingerprint.generation ||
    fingerprint.nonce !== committed.fingerprint.nonce
  )
    out.push(
      `the fingerprint is ${fingerprint.generation} . ${fingerprint.nonce}, not the last commit's ${committed.fingerprint.generation} . ${committed.fingerprint.nonce}`,
    );
  for (const [name, set] of objects.sets) {
    const held = kernelSets.get(name);
    if (!held) out.push(`set ${name} is missing`);
    else if (held.type !== set.declaration.type || held.interval !== !!set.declaration.interval)
      out.push(`set ${name} is of type ${held.type}, not ${set.declaration.type}`);
    else out.push(...differing(`set ${name}`, set.elements, held.elements));
  }
  for (const name of kernelSets.keys())
    if (!objects.sets.has(name)) out.push(`set ${name} is not Palisade's`);
  for (const [name, map] of objects.maps) {
    const held = kernelMaps.get(name);
    if (!held) out.push(`map ${name} is missing`);
    else {
      const want = new Set([...map.entries].map(([k, v]) => `${k} : ${v}`));
      out.push(...differing(`map ${name}`, want, new Set([...held.entries].map(([k, v]) => `${k} : ${v}`))));
    }
  }
  for (const name of kernelMaps.keys())
    if (!objects.maps.has(name)) out.push(`map ${name} is not Palisade's`);
  const expectedChains = new Map<string, { rules: number; hook?: string; key: string }>();
  for (const [name, lines] of objects.chains) expectedChains.set(name, { rules: lines.length, key: name });
  for (const [name, lines] of committed.baseChains) {
    const declared = lines[0]?.startsWith('type ') ? lines[0] : undefined;
    expectedChains.set(name, {
      rules: lines.length - (declared ? 1 : 0),
      ...(declared ? { hook: declared } : {}),
      key: `${name}@${committed.fingerprint.generation}`,
    });
  }
  const seen = new Set<string>();
  for (const [name, want] of expectedChains) {
    const chain = kernelChains.get(name);
    seen.add(want.key);
    if (!chain) {
      out.push(`chain ${name} is missing`);
      continue;
    }
    if (want.hook) {
      const hook = hookDifference(want.hook, chain);
      if (hook) out.push(`chain ${name} ${hook}`);
    } else if (chain.hook !== undefined)
      out.push(`chain ${name} is hooked to ${JSON.stringify(chain.hook)}, not a plain chain`);
    const held = rules.get(name) ?? [];
    if (held.length !== want.rules) {
      out.push(`chain ${name} has ${held.length} rules, not ${want.rules}`);
      continue;
    }
    const digest = rulesDigest(held);
    const known = learned.get(want.key);
    if (known === undefined) {
      if (learn) learned.set(want.key, digest);
      else out.push(`chain ${name}'s rules were not audited before another writer changed the table`);
    } else if (known !== digest) out.push(`chain ${name}'s rules were edited`);
  }
  for (const name of kernelChains.keys())
    if (!expectedChains.has(name)) out.push(`chain ${name} is not Palisade's`);
  for (const key of learned.keys()) if (!seen.has(key)) learned.delete(key);
  if (out.length > MAX_LINES)
    return { differences: [...out.slice(0, MAX_LINES), `and ${out.length - MAX_LINES} more`] };
  return { differences: out };
}

/** A rule as nft prints it, for a chain's digest: its expressions and comment. */
const ruleText = (rule: Json): string => JSON.stringify([rule.expr, rule.comment ?? null]);
const rulesDigest = (rules: readonly string[]): string => hash('sha1', rules.join('\n'));

/**
 * Learns every chain's rules from a transaction's echo (`nft --echo -j`: each object it added,
 * as the kernel took it — the same JSON a listing prints). `keyOf` names a chain's entry in
 * `learned` (hook chains: `name@generation`). Returns whether the echo held any chain (runners
 * that reach no kernel echo nothing).
 */
export function learnFromEcho(
  echo: string,
  keyOf: (chain: string) => string,
  learned: Map<string, string>,
): boolean {
  if (echo.trim() === '') return false;
  const rules = new Map<string, string[]>();
  const ours = (object: Json): boolean => `${String(object.family)} ${String(object.table)}` === TABLE;
  for (const item of listingItems(echo)) {
    const added = item.add as Json | undefined;
    const chain = added?.chain as Json | undefined;
    const rule = added?.rule as Json | undefined;
    if (chain && ours(chain)) rules.set(String(chain.name), []);
    else if (rule && ours(rule)) rules.get(String(rule.chain))?.push(ruleText(rule));
  }
  for (const [chain, texts] of rules) learned.set(keyOf(chain), rulesDigest(texts));
  return rules.size > 0;
}

/** `what: N missing (e.g. x), M not Palisade's (e.g. y)`, or nothing when equal. */
function differing(what: string, want: ReadonlySet<string>, held: ReadonlySet<string>): string[] {
  const missing: string[] = [];
  const extra: string[] = [];
  for (const e of want) if (!held.has(e)) missing.push(e);
  for (const e of held) if (!want.has(e)) extra.push(e);
  if (missing.length === 0 && extra.length === 0) return [];
  const parts: string[] = [];
  if (missing.length > 0) parts.push(`${missing.length} missing (e.g. ${missing[0]})`);
  if (extra.length > 0) parts.push(`${extra.length} not Palisade's (e.g. ${extra[0]})`);
  return [`${what}: ${parts.join(', ')}`];
}

/** How a hook chain differs from its declaration (`type filter hook forward priority filter; policy accept;`). */
function hookDifference(declared: string, chain: Json): string | undefined {
  const match = /^type (\S+) hook (\S+) priority (\S+?);(?: policy (\S+?);)?/.exec(declared);
  if (!match) return undefined;
  const [, type, hook, priority, policy] = match;
  if (chain.hook === undefined) return `is not hooked (it should be at hook ${hook})`;
  if (chain.type !== type || chain.hook !== hook)
    return `is hooked as ${JSON.stringify(chain.type)} at ${JSON.stringify(chain.hook)}, not ${type} at ${hook}`;
  const prio = priority === 'filter' ? 0 : Number(priority);
  if (Number(chain.prio) !== prio) return `has priority ${JSON.stringify(chain.prio)}, not ${prio}`;
  if (policy !== undefined && chain.policy !== policy)
    return `has policy ${JSON.stringify(chain.policy)}, not ${policy}`;
  return undefined;
}
