/**
 * The renderer cache: remembers what was last realized for one node (known pods, their local
 * tables, the global table) and, for a transaction, computes the new state and only the
 * difference — tables added or removed (shared by content), pods rebound, the global table
 * replaced. Local tables are combined towards one side (CombineRules) and the global table is
 * built from the other (BuildGlobalTable), per the seed.
 */
import type { IpAddress } from '../../net/ip.ts';
import type { RuleTable } from '../../model/rule.ts';
import { stateGroupLookup, type GroupExpansion, type PodTables } from '../../configurator/index.ts';
import type { ReadonlyStore } from '../../state/index.ts';
import type { RenderedPod, Renderer, RendererTxn } from '../types.ts';
import type { Rule } from '../../model/rule.ts';
import { buildGlobalTable, combinedTable, pairRules, type KnownPod, type Side } from './combine.ts';
import { flattenTiers } from './flatten-tiers.ts';

interface CacheOptions {
  /** The side local tables are combined to (ACL: ingress; VPPTCP: egress). */
  readonly side: Side;
  /** Group lookups; expansion flattens ordered cluster policy, which VPP tables cannot order. */
  readonly groups: GroupExpansion;
}

export interface CacheChanges {
  /** Local tables that appear in this transaction (by content id). */
  readonly addedTables: readonly RuleTable[];
  /** Ids of local tables no pod uses any more. */
  readonly removedTables: readonly string[];
  /** Pods whose local table changed (undefined: the pod is gone). */
  readonly rebound: readonly { readonly pod: string; readonly before?: string; readonly after?: string }[];
  /** Set when the global table changes. */
  readonly global?: { readonly before?: string; readonly after: RuleTable };
}

export interface CacheSnapshot {
  readonly pods: ReadonlyMap<string, KnownPod>;
  /** CombineRules' additions per (target, other) pair, kept so a change recomputes only its pairs. */
  readonly pairs: ReadonlyMap<string, ReadonlyMap<string, readonly Rule[]>>;
  readonly binding: ReadonlyMap<string, string>;
  readonly tables: ReadonlyMap<string, RuleTable>;
  readonly global: RuleTable;
}

export class RendererCache implements Renderer<CacheChanges> {
  readonly reads = 'tables' as const;
  readonly name = 'cache';
  private current: CacheSnapshot;

  constructor(private readonly options: CacheOptions) {
    this.current = {
      pods: new Map(),
      pairs: new Map(),
      binding: new Map(),
      tables: new Map(),
      global: buildGlobalTable([], options.side),
    };
  }

  /** A cache combining towards `side` that expands groups from the store. */
  static forStore(store: ReadonlyStore, side: Side): RendererCache {
    return new RendererCache({ side, groups: stateGroupLookup(store) });
  }

  get snapshot(): CacheSnapshot {
    return this.current;
  }

  localTable(pod: string): RuleTable | undefined {
    const id = this.current.binding.get(pod);
    return id === undefined ? undefined : this.current.tables.get(id);
  }

  newTxn(options: { readonly resync: boolean }): RendererTxn<CacheChanges> {
    const pending = new Map<string, { pod: RenderedPod; tables: PodTables | undefined }>();
    const movedPods = new Set<string>();
    const changedGroups = new Set<string>();
    let computed: { snapshot: CacheSnapshot; changes: CacheChanges } | undefined;
    const compute = (): { snapshot: CacheSnapshot; changes: CacheChanges } => {
      computed ??= this.compute(pending, movedPods, changedGroups, options.resync);
      return computed;
    };
    return {
      render: (pod, tables) => {
        pending.set(pod.id, { pod, tables });
        computed = undefined;
      },
      groupsChanged: (groups, pods) => {
        for (const pod of pods) movedPods.add(pod);
        for (const group of groups) changedGroups.add(group);
        computed = undefined;
      },
      changes: () => compute().changes,
      commit: () => {
        this.current = compute().snapshot;
      },
    };
  }

  /** A pod as the cache knows it: with ordered cluster policy, its tiered sides flattened. */
  private known(pod: RenderedPod, tables: PodTables, members: GroupMembersMemo): KnownPod {
    if (!tables.ingressTiers && !tables.egressTiers) return { pod, tables };
    const flat = flattenTiers(tables, (reference) => {
      let list = members.get(reference);
      if (!list) members.set(reference, (list = this.options.groups.addresses(reference)));
      return list;
    });
    return { pod, tables: flat.tables, flattened: { source: tables, groups: flat.groups } };
  }

  /** The transaction's new snapshot and its difference from the current one. */
  private compute(
    pending: ReadonlyMap<string, { pod: RenderedPod; tables: PodTables | undefined }>,
    movedPods: ReadonlySet<string>,
    changedGroups: ReadonlySet<string>,
    resync: boolean,
  ): { snapshot: CacheSnapshot; changes: CacheChanges } {
    // Group members read while flattening, once per transaction (pods share the groups they name).
    const members: GroupMembersMemo = new Map();
    const pods = this.nextPods(pending, resync, members);
    const reflattened = this.reflatten(pods, pending, changedGroups, members);
    const moved = podsAtAddressesOf(pods, this.current.pods, movedPods);
    if (!resync && pending.size === 0 && moved.length === 0 && reflattened.length === 0)
      return { snapshot: this.current, changes: { addedTables: [], removedTables: [], rebound: [] } };
    // Pairs to recompute: every pair of a changed pod (both ways); all pairs on resync.
    const changed = new Set(resync ? pods.keys() : pending.keys());
    for (const id of moved) changed.add(id);
    for (const id of reflattened) changed.add(id);
    const local = this.combineLocalTables(pods, changed);
    // The global table depends only on the known pods and their tables.
    const podsChanged =
      resync ||
      reflattened.length > 0 ||
      [...pending.keys()].some((id) => pods.has(id) || this.current.pods.has(id));
    const built = podsChanged ? buildGlobalTable(pods.values(), this.options.side) : this.current.global;
    const global = built.id === this.current.global.id ? this.current.global : built;
    const snapshot: CacheSnapshot = { pods, ...local, global };
    return { snapshot, changes: difference(this.current, snapshot) };
  }

  /** The known pods after the transaction's renders (all of them anew on resync). */
  private nextPods(
    pending: ReadonlyMap<string, { pod: RenderedPod; tables: PodTables | undefined }>,
    resync: boolean,
    members: GroupMembersMemo,
  ): Map<string, KnownPod> {
    const pods = new Map(resync ? [] : this.current.pods);
    for (const [id, { pod, tables }] of pending) {
      // A pod without an address cannot be policed: it is not known until it has one.
      if (tables === undefined || pod.ips.length === 0) pods.delete(id);
      else pods.set(id, this.known(pod, tables, members));
    }
    return pods;
  }

  /**
   * Flattened tiers hold group members' addresses: pods (not rendered in this transaction) that
   * expanded a changed group are flattened again, and kept (returned) only where the result
   * differs.
   */
  private reflatten(
    pods: Map<string, KnownPod>,
    pending: ReadonlyMap<string, unknown>,
    changedGroups: ReadonlySet<string>,
    members: GroupMembersMemo,
  ): string[] {
    const reflattened: string[] = [];
    if (changedGroups.size === 0) return reflattened;
    for (const [id, known] of pods) {
      const flattened = known.flattened;
      if (pending.has(id) || !flattened || !intersects(flattened.groups, changedGroups)) continue;
      const again = this.known(known.pod, flattened.source, members);
      if (
        again.tables.ingress?.id === known.tables.ingress?.id &&
        again.tables.egress?.id === known.tables.egress?.id
      )
        continue;
      pods.set(id, again);
      reflattened.push(id);
    }
    return reflattened;
  }

  /**
   * CombineRules over the known pods: each pod's pair rules with every known pod (reused for
   * pairs where neither pod changed), and its combined local table, shared by content.
   */
  private combineLocalTables(
    pods: ReadonlyMap<string, KnownPod>,
    changed: ReadonlySet<string>,
  ): Pick<CacheSnapshot, 'pairs' | 'binding' | 'tables'> {
    const pairs = new Map<string, Map<string, readonly Rule[]>>();
    const binding = new Map<string, string>();
    const tables = new Map<string, RuleTable>();
    for (const target of pods.values()) {
      const id = target.pod.id;
      const previous = this.current.pairs.get(id);
      const mine = new Map<string, readonly Rule[]>();
      let dirty = changed.has(id) || !previous;
      for (const other of pods.values()) {
        const reused =
          !changed.has(id) && !changed.has(other.pod.id) ? previous?.get(other.pod.id) : undefined;
        const rules = reused ?? pairRules(target, other, this.options.side, this.options.groups);
        if (!reused && !sameRules(rules, previous?.get(other.pod.id))) dirty = true;
        if (rules.length) mine.set(other.pod.id, rules);
      }
      if (previous) for (const other of previous.keys()) if (!pods.has(other)) dirty = true;
      pairs.set(id, mine);
      const before = this.current.binding.get(id);
      const table = !dirty && before ? this.current.tables.get(before) : undefined;
      const next = table ?? combinedTable(target, [...mine.values()].flat(), this.options.side);
      const shared = tables.get(next.id) ?? this.current.tables.get(next.id) ?? next;
      tables.set(shared.id, shared);
      binding.set(id, shared.id);
    }
    return { pairs, binding, tables };
  }
}

/**
 * Pair rules read only local pods' addresses, so group changes matter only when a local pod
 * joined, left or changed in a group — and a lookup is by address, so every pod sharing an
 * address (old or new) with such a pod is affected too.
 */
function podsAtAddressesOf(
  pods: ReadonlyMap<string, KnownPod>,
  before: ReadonlyMap<string, KnownPod>,
  movedPods: ReadonlySet<string>,
): string[] {
  if (movedPods.size === 0) return [];
  const addresses = new Set<string>();
  for (const id of movedPods)
    for (const known of [pods.get(id), before.get(id)])
      for (const ip of known?.pod.ips ?? []) addresses.add(addressKey(ip));
  if (addresses.size === 0) return [];
  const found: string[] = [];
  for (const known of pods.values())
    if (known.pod.ips.some((ip) => addresses.has(addressKey(ip)))) found.push(known.pod.id);
  return found;
}

/** What a commit changes: tables added and removed (by content), pods rebound, the global table. */
function difference(current: CacheSnapshot, next: CacheSnapshot): CacheChanges {
  const rebound: { pod: string; before?: string; after?: string }[] = [];
  for (const id of new Set([...current.binding.keys(), ...next.binding.keys()])) {
    const before = current.binding.get(id);
    const after = next.binding.get(id);
    if (before !== after)
      rebound.push({ pod: id, ...(before ? { before } : {}), ...(after ? { after } : {}) });
  }
  return {
    addedTables: [...next.tables.values()].filter((t) => !current.tables.has(t.id)),
    removedTables: [...current.tables.keys()].filter((id) => !next.tables.has(id)),
    rebound,
    ...(next.global.id !== current.global.id
      ? { global: { before: current.global.id, after: next.global } }
      : {}),
  };
}

type GroupMembersMemo = Map<string, readonly IpAddress[]>;

function intersects(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const item of small) if (large.has(item)) return true;
  return false;
}

function sameRules(a: readonly Rule[], b: readonly Rule[] | undefined): boolean {
  if (!b) return a.length === 0;
  return (
    a.length === b.length &&
    a.every((rule, i) => JSON.stringify(rule, replacer) === JSON.stringify(b[i], replacer))
  );
}

/** JSON for rules holding bigints (CIDR bases). */
function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString(16) : value;
}

function addressKey(ip: IpAddress): string {
  return `${ip.family}:${ip.value}`;
}
