/**
 * Whether an agent is in contact with what feeds it: etcd (any answer — an event, a watch's
 * progress, a listing, a lease keepalive) and, when there is one, the upstream beyond its store
 * (direct mode: the API server). Out of contact with either for longer than the stale limit
 * makes the agent stale: it keeps enforcing what it has and says that it may be old.
 */
import type { Upstream } from './types.ts';

/** A change of staleness: now stale (out of contact with `what` for `sinceMs`), or in contact again with `what`. */
interface ContactChange {
  readonly stale: boolean;
  readonly what: string;
  readonly sinceMs: number;
}

export class ContactTracker {
  private lastContact = Date.now();
  /** What contact was lost with when it became stale (the line saying it is back names it). */
  private lostWith = 'etcd';
  private current = false;

  constructor(
    private readonly staleAfterMs: number,
    private readonly upstream?: Upstream,
  ) {}

  get stale(): boolean {
    return this.current;
  }

  /** etcd answered. */
  touch(): void {
    this.lastContact = Date.now();
  }

  /** Judges staleness now; the change, or undefined when it stays as it was. */
  judge(now = Date.now()): ContactChange | undefined {
    const upstreamSince = this.upstream?.failingSince();
    const lost = [
      ...(now - this.lastContact > this.staleAfterMs
        ? [{ what: 'etcd', sinceMs: now - this.lastContact }]
        : []),
      ...(this.upstream && upstreamSince !== undefined && now - upstreamSince > this.staleAfterMs
        ? [{ what: this.upstream.what, sinceMs: now - upstreamSince }]
        : []),
    ];
    const stale = lost.length > 0;
    if (stale === this.current) return undefined;
    this.current = stale;
    if (stale) this.lostWith = lost.map((l) => l.what).join(' or ');
    return { stale, what: this.lostWith, sinceMs: Math.max(0, ...lost.map((l) => l.sinceMs)) };
  }
}
