/**
 * One endpoint's maps for one direction, as the seed defines them: the primary CIDR map, the
 * supplementary map (blocks that have excepts), the except map, and the protocol/port map with
 * its L3 ("any traffic") entry — plus an "any port of this protocol" entry per protocol and a
 * short list of port ranges (endPort), which the seed's single-port map cannot hold. Each value
 * is a bitmap of the endpoint's rule slots; a packet is allowed when
 * `(prim | (supp & ~except)) & ports` has a bit set. This is the builder of the maps; lookups
 * run on their packed copy (table-arena.ts), and datapaths/bitmap prints them.
 */
import type { Cidr, IpFamily } from '../net/ip.ts';
import type { Protocol } from '../model/types.ts';
import { BitmapStore, wordsFor } from './bitmaps.ts';
import { LpmTrie } from './lpm-trie.ts';

type CidrMap = 'prim' | 'supp' | 'except';
const FEW = 8;

export const PROTOCOL_INDEX: Record<Protocol, number> = { TCP: 0, UDP: 1, SCTP: 2 };

/**
 * Peer groups resolved outside a table and shared by all tables (cluster-policy peers): an
 * address → the groups it belongs to. A table then holds one bitmap per group it uses instead of
 * one per member address, so building it costs its rules, not their members.
 */
export interface GroupResolver {
  groupLabel(group: number): string;
}

interface FewEntry {
  readonly base: number;
  readonly mask: number;
  readonly offset: number;
}

interface RangeEntry {
  readonly protocol: number;
  readonly from: number;
  readonly to: number;
  readonly offset: number;
}

export class DirectionTable {
  readonly store: BitmapStore;
  readonly width: number;
  /** Created on first use: most tables need one or two of the six (memory is lookup speed). */
  private readonly tries: Record<CidrMap, Record<IpFamily, LpmTrie | undefined>> = {
    prim: { 4: undefined, 6: undefined },
    supp: { 4: undefined, 6: undefined },
    except: { 4: undefined, 6: undefined },
  };
  /** (protocol index << 16 | port) → bitmap offset. */
  readonly ports = new Map<number, number>();
  /** While a map holds few IPv4 prefixes, they are scanned as (base, mask) pairs: no trie walk. */
  private readonly fewV4: Record<CidrMap, FewEntry[] | undefined> = {
    prim: [],
    supp: [],
    except: [],
  };
  /** Primary-map /32 entries, by address. */
  private readonly hostsV4 = new Map<number, number>();
  readonly protocolAny: (number | undefined)[] = [undefined, undefined, undefined];
  l3: number | undefined;
  readonly ranges: RangeEntry[] = [];
  /** Per map, the prefixes stored (for printing). */
  readonly prefixes: Record<CidrMap, Map<string, number>> = {
    prim: new Map(),
    supp: new Map(),
    except: new Map(),
  };

  /** Group id → bitmap offset, when the table uses a group resolver. */
  private groupLayer: { readonly resolver: GroupResolver; readonly slots: Map<number, number> } | undefined;

  /** The address groups whose members the maps hold (the table is stale when they change). */
  readonly groups = new Set<string>();
  /** What each slot stands for (`ns/policy ingress[rule]`, with the except block or named-port number). */
  readonly labels: string[] = [];

  constructor(readonly slots: number) {
    this.width = wordsFor(slots);
    this.store = new BitmapStore(this.width);
  }

  addCidr(map: CidrMap, cidr: Cidr, text: string, slot: number): void {
    if (map === 'prim' && cidr.family === 4 && cidr.prefix === 32) {
      // Host entries (selected pods) go to a hash map: one probe instead of a 32-level walk.
      const key = Number(cidr.base);
      let offset = this.hostsV4.get(key);
      if (offset === undefined) this.hostsV4.set(key, (offset = this.store.allocate()));
      this.store.set(offset, slot);
      this.prefixes.prim.set(text, offset);
      return;
    }
    const trie = (this.tries[map][cidr.family] ??= new LpmTrie(cidr.family, 8));
    const offset = trie.slot(cidr.base, cidr.prefix, () => this.store.allocate());
    this.store.set(offset, slot);
    this.prefixes[map].set(text, offset);
    if (cidr.family === 4) {
      const list = this.fewV4[map];
      if (list && !list.some((e) => e.offset === offset)) {
        const mask = cidr.prefix === 0 ? 0 : (0xffffffff << (32 - cidr.prefix)) >>> 0;
        list.push({ base: Number(cidr.base) >>> 0, mask, offset });
        // Beyond a few prefixes the trie walk wins over a scan.
        if (list.length > FEW) this.fewV4[map] = undefined;
      }
    }
  }

  /** Resolves peer groups through `resolver` (see addGroup). */
  useGroups(resolver: GroupResolver): void {
    this.groupLayer = { resolver, slots: new Map() };
  }

  /** The slot matches every member address of the group. */
  addGroup(group: number, slot: number): void {
    const layer = this.groupLayer;
    if (!layer) throw new Error('addGroup needs useGroups first');
    let offset = layer.slots.get(group);
    if (offset === undefined) layer.slots.set(group, (offset = this.store.allocate()));
    this.store.set(offset, slot);
  }

  addPort(protocol: Protocol, port: number, slot: number): void {
    const key = (PROTOCOL_INDEX[protocol] << 16) | port;
    let offset = this.ports.get(key);
    if (offset === undefined) this.ports.set(key, (offset = this.store.allocate()));
    this.store.set(offset, slot);
  }

  addRange(protocol: Protocol, from: number, to: number, slot: number): void {
    // Equal ranges share one bitmap: lookups scan the ranges, so fewer is faster.
    const index = PROTOCOL_INDEX[protocol];
    const same = this.ranges.find((r) => r.protocol === index && r.from === from && r.to === to);
    if (same) return this.store.set(same.offset, slot);
    const offset = this.store.allocate();
    this.store.set(offset, slot);
    this.ranges.push({ protocol: index, from, to, offset });
  }

  addProtocol(protocol: Protocol, slot: number): void {
    const index = PROTOCOL_INDEX[protocol];
    let offset = this.protocolAny[index];
    if (offset === undefined) this.protocolAny[index] = offset = this.store.allocate();
    this.store.set(offset, slot);
  }

  addL3(slot: number): void {
    if (this.l3 === undefined) this.l3 = this.store.allocate();
    this.store.set(this.l3, slot);
  }

  /** The maps' contents, for packing (see table-arena.ts). */
  packView(): PackView {
    return {
      ports: this.ports,
      protocolAny: this.protocolAny,
      l3: this.l3,
      ranges: this.ranges,
      groups: this.groupLayer?.slots ?? new Map(),
      hostsV4: this.hostsV4,
      fewV4: this.fewV4,
      tries: this.tries,
      bitmaps: this.store.used(),
    };
  }

  /**
   * The group entries (label → bitmap offset), when the table resolves groups through a
   * resolver; undefined otherwise. With the public maps above, what `render --target bitmap`
   * prints (datapaths/bitmap).
   */
  groupEntries(): [string, number][] | undefined {
    const layer = this.groupLayer;
    return layer && [...layer.slots].map(([group, offset]) => [layer.resolver.groupLabel(group), offset]);
  }

  /** Bytes held by the maps' values (tries excluded). */
  get bytes(): number {
    return this.store.bytes;
  }
}

interface PackView {
  readonly ports: ReadonlyMap<number, number>;
  readonly protocolAny: readonly (number | undefined)[];
  readonly l3: number | undefined;
  readonly ranges: readonly RangeEntry[];
  readonly groups: ReadonlyMap<number, number>;
  readonly hostsV4: ReadonlyMap<number, number>;
  readonly fewV4: Readonly<Record<CidrMap, readonly FewEntry[] | undefined>>;
  readonly tries: Readonly<Record<CidrMap, Readonly<Record<IpFamily, LpmTrie | undefined>>>>;
  /** The bitmap words in use (offsets as in the entries above). */
  readonly bitmaps: Int32Array;
}
