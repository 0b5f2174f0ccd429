/**
 * The MapState's wildcard layer: the entries of the rules that select every identity. It depends
 * on those rules alone, and every identity's entries are computed on top of it.
 */
import { type Entries, coveringEntry, diff, entryOf, refusal } from './map-entries.ts';
import { PORT_BITS, keyNumber } from './port-prefix.ts';
import type { MapChange, MapEntry, MapRule, PortPrefix, RefusedKey } from './types.ts';

export class WildcardLayer<V> {
  entries: Entries<V> = new Map();
  refused: RefusedKey[] = [];
  /** Entries per protocol, sorted by port value, for "entries inside this prefix" queries. */
  private sorted = new Map<number, MapEntry<V>[]>();

  /** The layer from the rules (in priority order; specific ones are skipped); returns what changed. */
  rebuild(rules: readonly MapRule<V>[], recordRefused: boolean): MapChange<V>[] {
    const before = this.entries;
    const entries: Entries<V> = new Map();
    const refused: RefusedKey[] = [];
    for (const rule of rules) {
      if (rule.identities !== '*') continue;
      for (const port of rule.ports) {
        const cover = coveringEntry(entries, rule.protocol, port);
        if (cover) {
          if (recordRefused) refused.push(refusal(rule, port, '*', cover));
          continue;
        }
        entries.set(keyNumber(rule.protocol, port.len, port.value), entryOf(rule, port, '*'));
      }
    }
    this.entries = entries;
    this.refused = refused;
    this.sorted = new Map();
    for (const entry of entries.values()) {
      const list = this.sorted.get(entry.protocol) ?? [];
      list.push(entry);
      this.sorted.set(entry.protocol, list);
    }
    for (const list of this.sorted.values()) list.sort((a, b) => a.port.value - b.port.value);
    return diff(before, entries);
  }

  /** Entries strictly inside a prefix. */
  inside(protocol: number, port: PortPrefix): MapEntry<V>[] {
    const found: MapEntry<V>[] = [];
    const list = this.sorted.get(protocol);
    if (!list) return found;
    const end = port.value + 2 ** (PORT_BITS - port.len);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list[mid] as MapEntry<V>).port.value < port.value) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < list.length; i++) {
      const entry = list[i] as MapEntry<V>;
      if (entry.port.value >= end) break;
      if (entry.port.len > port.len) found.push(entry);
    }
    return found;
  }
}
