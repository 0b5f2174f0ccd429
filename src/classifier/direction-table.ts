/**
 * One endpoint's maps for one direction, as the seed defines them: the primary CIDR map, the
 * supplementary map (blocks that have excepts), the except map, and the protocol/port map with
 * its L3 ("any traffic") entry — plus an "any port of this protocol" entry per protocol and a
 * short list of port ranges (endPort), which the seed's single-port map cannot hold. Each value
 * is a bitmap of the endpoint's rule slots; a packet is allowed when
 * `(prim | (supp & ~except)) & ports` has a bit set. Lookups allocate nothing.
 */
import type { Cidr, IpAddress, IpFamily } from '../net/ip.ts';
import type { Protocol } from '../model/types.ts';
import { BitmapStore, wordsFor } from './bitmaps.ts';
import { addressWords, LpmTrie } from './lpm-trie.ts';

export type CidrMap = 'prim' | 'supp' | 'except';
const FEW = 8;

/** Scratch arrays shared by every table's lookups. */
const scratch = {
  words: new Uint32Array(4),
  trieWords: new Uint32Array(4),
  prim: new Uint32Array(32),
  supp: new Uint32Array(32),
  except: new Uint32Array(32),
  portOffsets: new Int32Array(16) as Int32Array<ArrayBufferLike>,
  grow(width: number): void {
    this.prim = new Uint32Array(width);
    this.supp = new Uint32Array(width);
    this.except = new Uint32Array(width);
  },
};
function growInts(
  space: { portOffsets: Int32Array<ArrayBufferLike> },
  used: number,
): Int32Array<ArrayBufferLike> {
  const grown = new Int32Array(used * 2);
  grown.set(space.portOffsets);
  return grown;
}
const PROTOCOL_INDEX: Record<Protocol, number> = { TCP: 0, UDP: 1, SCTP: 2 };

/**
 * Peer groups resolved outside a table and shared by all tables (cluster-policy peers): an
 * address → the groups it belongs to. A table then holds one bitmap per group it uses instead of
 * one per member address, so building it costs its rules, not their members.
 */
export interface GroupResolver {
  groupsOfV4(address: number): readonly number[] | undefined;
  groupsOfV6(words: Uint32Array): readonly number[] | undefined;
  groupLabel(group: number): string;
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
  private readonly fewV4: Record<CidrMap, { base: number; mask: number; offset: number }[] | undefined> = {
    prim: [],
    supp: [],
    except: [],
  };
  /** Primary-map /32 entries, by address. */
  private readonly hostsV4 = new Map<number, number>();
  readonly protocolAny: (number | undefined)[] = [undefined, undefined, undefined];
  l3: number | undefined;
  readonly ranges: RangeEntry[] = [];
  /** Per map, the prefixes stored (for rendering). */
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

  /** Whether some rule slot allows traffic with the remote address, protocol and port. */
  allows(remote: IpAddress, protocol: Protocol, port: number): boolean {
    const words = addressWords(remote.family, remote.value, scratch.words);
    return this.matchWords(remote.family, words, protocol, port, false) >= 0;
  }

  /** The same for an IPv4 address given as a number (no bigint on the packet path). */
  allowsV4(remote: number, protocol: Protocol, port: number): boolean {
    scratch.words[0] = remote;
    return this.matchWords(4, scratch.words, protocol, port, false) >= 0;
  }

  /**
   * The lowest rule slot matching the packet, or -1. Ordered tables (cluster policy tiers) give
   * slots in precedence order, so this is the deciding rule: a find-first-set over the words.
   */
  firstMatch(remote: IpAddress, protocol: Protocol, port: number): number {
    return this.matchWords(
      remote.family,
      addressWords(remote.family, remote.value, scratch.words),
      protocol,
      port,
      true,
    );
  }

  firstMatchV4(remote: number, protocol: Protocol, port: number): number {
    scratch.words[0] = remote;
    return this.matchWords(4, scratch.words, protocol, port, true);
  }

  /** The first matching slot (or, when `first` is false, any matching slot's word index × 32), -1 for none. */
  private matchWords(
    family: IpFamily,
    words: Uint32Array,
    protocol: Protocol,
    port: number,
    first: boolean,
  ): number {
    // The port map first: it is one probe, and a port no rule names settles the packet without
    // touching the address maps (most denied packets end here).
    const p = PROTOCOL_INDEX[protocol];
    const exact = this.ports.get((p << 16) | port);
    const any = this.protocolAny[p];
    if (this.l3 === undefined && exact === undefined && any === undefined && !this.inRange(p, port))
      return -1;
    const width = this.width;
    // Lookups never overlap (one thread): every table shares the same scratch space.
    if (scratch.prim.length < width) scratch.grow(width);
    const { prim, supp, except } = scratch;
    const store = this.store.words;
    for (let w = 0; w < width; w++) prim[w] = supp[w] = except[w] = 0;
    const tries = this.tries;
    if (family === 4) {
      const address = words[0] as number;
      this.lookupV4('prim', address, store, width, prim);
      const host = this.hostsV4.get(address);
      if (host !== undefined)
        for (let w = 0; w < width; w++) prim[w] = (prim[w] as number) | (store[host + w] as number);
      if (tries.supp[4] && this.lookupV4('supp', address, store, width, supp))
        this.lookupV4('except', address, store, width, except);
      if (this.groupLayer) this.orGroups(this.groupLayer.resolver.groupsOfV4(address), store, width, prim);
    } else {
      if (this.groupLayer) this.orGroups(this.groupLayer.resolver.groupsOfV6(words), store, width, prim);
      tries.prim[6]?.orInto(words, store, width, prim);
      // Most tables have no block with excepts: skip those walks.
      if (tries.supp[6]?.orInto(words, store, width, supp))
        tries.except[6]?.orInto(words, store, width, except);
    }
    // The port bitmaps that apply, found once (not per word).
    const portOffsets = scratch.portOffsets;
    let n = 0;
    if (this.l3 !== undefined) portOffsets[n++] = this.l3;
    if (exact !== undefined) portOffsets[n++] = exact;
    if (any !== undefined) portOffsets[n++] = any;
    for (const range of this.ranges) {
      if (range.protocol !== p || port < range.from || port > range.to) continue;
      if (n === scratch.portOffsets.length) scratch.portOffsets = growInts(scratch, n);
      scratch.portOffsets[n++] = range.offset;
    }
    const offsets = scratch.portOffsets;
    for (let w = 0; w < width; w++) {
      const peers = ((prim[w] as number) | ((supp[w] as number) & ~(except[w] as number))) >>> 0;
      if (peers === 0) continue;
      let ports = 0;
      for (let i = 0; i < n; i++) ports |= store[(offsets[i] as number) + w] as number;
      const matched = (peers & ports) >>> 0;
      if (matched === 0) continue;
      if (!first) return w * 32;
      // Lowest set bit: isolate it, then count the zeros above it.
      return w * 32 + (31 - Math.clz32((matched & -matched) >>> 0));
    }
    return -1;
  }

  /** The maps as the seed's schema shows them: key → bitmap (hex, most significant word first). */
  render(ip: string): Record<string, unknown[]> {
    const hex = (offset: number): string => {
      let text = '';
      for (let w = this.width - 1; w >= 0; w--)
        text += (this.store.words[offset + w] as number).toString(16).padStart(8, '0');
      return `0x${text}`;
    };
    const cidrs = (map: CidrMap) =>
      [...this.prefixes[map]].map(([cidr, offset]) => ({ vni: 0, ip, cidr, bitmap: hex(offset) }));
    const names = ['tcp', 'udp', 'sctp'];
    const ppo: unknown[] = [];
    if (this.l3 !== undefined) ppo.push({ vni: 0, ip, proto: 0, port: 0, bitmap: hex(this.l3) });
    this.protocolAny.forEach((offset, p) => {
      if (offset !== undefined) ppo.push({ vni: 0, ip, proto: names[p], port: 0, bitmap: hex(offset) });
    });
    for (const [key, offset] of this.ports)
      ppo.push({ vni: 0, ip, proto: names[key >>> 16], port: key & 0xffff, bitmap: hex(offset) });
    for (const r of this.ranges)
      ppo.push({ vni: 0, ip, proto: names[r.protocol], port: `${r.from}-${r.to}`, bitmap: hex(r.offset) });
    const layer = this.groupLayer;
    const groups = layer
      ? [...layer.slots].map(([group, offset]) => ({
          vni: 0,
          ip,
          group: layer.resolver.groupLabel(group),
          bitmap: hex(offset),
        }))
      : [];
    return {
      enforce: [{ vni: 0, ip, value: 1 }],
      prim: cidrs('prim'),
      ...(layer ? { groups } : {}),
      supp: cidrs('supp'),
      except: cidrs('except'),
      ppo,
      slots: this.labels.map((label, bit) => ({ bit, rule: label })),
    };
  }

  private orGroups(
    groups: readonly number[] | undefined,
    store: Uint32Array,
    width: number,
    acc: Uint32Array,
  ): void {
    if (!groups || !this.groupLayer) return;
    const slots = this.groupLayer.slots;
    for (const group of groups) {
      const offset = slots.get(group);
      if (offset === undefined) continue;
      for (let w = 0; w < width; w++) acc[w] = (acc[w] as number) | (store[offset + w] as number);
    }
  }

  private inRange(protocol: number, port: number): boolean {
    for (const range of this.ranges)
      if (range.protocol === protocol && port >= range.from && port <= range.to) return true;
    return false;
  }

  private lookupV4(
    map: CidrMap,
    address: number,
    store: Uint32Array,
    width: number,
    acc: Uint32Array,
  ): boolean {
    const few = this.fewV4[map];
    if (!few) {
      scratch.trieWords[0] = address;
      return this.tries[map][4]?.orInto(scratch.trieWords, store, width, acc) ?? false;
    }
    let matched = false;
    for (const entry of few) {
      if ((address & entry.mask) >>> 0 !== entry.base) continue;
      matched = true;
      for (let w = 0; w < width; w++) acc[w] = (acc[w] as number) | (store[entry.offset + w] as number);
    }
    return matched;
  }

  /** Bytes held by the maps' values (tries excluded). */
  get bytes(): number {
    return this.store.bytes;
  }
}
