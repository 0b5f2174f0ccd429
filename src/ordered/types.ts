/**
 * Contracts of ordered-policy maps (Cilium's ordered network policy CFP, seed 004): a datapath
 * that only knows longest-prefix match — no priorities — keyed by (protocol, destination-port
 * prefix, peer identity or wildcard). Precedence in such a map: the longer port prefix wins;
 * at equal port prefixes a specific identity beats the wildcard. Rules come with priorities
 * (lower first); the MapState holds the entries that make the map's answer equal, for every
 * packet, the verdict of the highest-priority rule that matches it.
 */

/** A destination-port prefix: `len` leading bits of a 16-bit port (len 0: every port). */
export interface PortPrefix {
  readonly value: number;
  readonly len: number;
}

/** The peer side of a key: one identity, or every identity. */
export type IdentityKey = number | '*';

export interface MapRule<V> {
  /** Unique per rule; lower goes first. Palisade uses the dense precedence key of model/precedence.ts. */
  readonly priority: number;
  /** IANA protocol number (6 TCP, 17 UDP, 132 SCTP). */
  readonly protocol: number;
  readonly ports: readonly PortPrefix[];
  /** Identities the rule's peers select, or every identity. */
  readonly identities: ReadonlySet<number> | '*';
  readonly verdict: V;
  /** For people and goldens: which rule this is. */
  readonly label: string;
}

export interface MapEntry<V> {
  readonly protocol: number;
  readonly port: PortPrefix;
  readonly identity: IdentityKey;
  readonly verdict: V;
  /** Priority of the rule whose verdict this is. */
  readonly priority: number;
  readonly rule: string;
  /**
   * Set on a covering entry: the rule's verdict re-inserted under a lower-priority wildcard entry
   * that would otherwise override it (the CFP's example 2b). Names that wildcard rule.
   */
  readonly coveredBy?: string;
}

/** A key of a rule that was not inserted because a higher-priority entry covers it (examples 1a, 1b, 2a). */
export interface RefusedKey {
  readonly rule: string;
  readonly protocol: number;
  readonly port: PortPrefix;
  readonly identity: IdentityKey;
  /** The rule of the covering entry. */
  readonly coveredBy: string;
}

export type MapChange<V> =
  | { readonly op: 'add'; readonly entry: MapEntry<V> }
  | { readonly op: 'delete'; readonly entry: MapEntry<V> };
