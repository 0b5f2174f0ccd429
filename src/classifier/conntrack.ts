/**
 * Connection tracking for the classifier (seed: Mizar §2): a bounded table of connections by
 * 5-tuple, least recently used evicted first. The first packet of a connection is judged by the
 * classifier and its verdict remembered; later packets of either direction follow it, so replies
 * of an allowed connection pass even where the reverse direction is denied. UDP "connections"
 * are the same 5-tuples. Each entry remembers the policy generation it was judged under; after
 * an update (a new classifier) its next packet is judged again by the connection's original
 * direction, so a connection the new policy denies stops at once — the proposal's "terminate
 * and block the existing connection".
 */
import type { Protocol } from '../model/types.ts';
import type { Classifier } from './classifier.ts';

interface FlowPacket {
  /** IPv4 addresses as numbers (the classifier's packet path). */
  readonly src: number;
  readonly dst: number;
  readonly protocol: Protocol;
  readonly srcPort: number;
  readonly dstPort: number;
}

interface Entry {
  /** The original direction: who opened the connection. */
  readonly client: number;
  readonly server: number;
  readonly serverPort: number;
  allowed: boolean;
  generation: number;
}

export class TrackedClassifier {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;

  constructor(
    private classifier: Classifier,
    readonly capacity = 65536,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Swaps in the classifier of a new policy version; tracked connections are judged again. */
  update(classifier: Classifier): void {
    this.classifier = classifier;
    this.generation++;
  }

  /** Whether a packet passes; the first packet of a connection opens its entry. */
  packet(p: FlowPacket): boolean {
    const forward = `${p.protocol}|${p.src}|${p.srcPort}|${p.dst}|${p.dstPort}`;
    const reverse = `${p.protocol}|${p.dst}|${p.dstPort}|${p.src}|${p.srcPort}`;
    const key = this.entries.has(forward) ? forward : this.entries.has(reverse) ? reverse : undefined;
    if (key !== undefined) {
      const entry = this.entries.get(key) as Entry;
      // Most recently used last: delete and re-insert keeps Map order as the LRU order.
      this.entries.delete(key);
      this.entries.set(key, entry);
      if (entry.generation !== this.generation) {
        entry.allowed = this.classifier.allowsV4(entry.client, entry.server, p.protocol, entry.serverPort);
        entry.generation = this.generation;
      }
      return entry.allowed;
    }
    const allowed = this.classifier.allowsV4(p.src, p.dst, p.protocol, p.dstPort);
    this.entries.set(forward, {
      client: p.src,
      server: p.dst,
      serverPort: p.dstPort,
      allowed,
      generation: this.generation,
    });
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    return allowed;
  }
}
