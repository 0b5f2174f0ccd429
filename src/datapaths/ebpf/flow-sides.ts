/**
 * The program counts each side it judges on its own (bpf/flow-events.h): a connection between two
 * pods of the node is counted once as its egress (in from_pod) and once as its ingress (there too,
 * or in to_pod). Read together, the two become one event per connection, as the nftables
 * datapath reports it: allowed when both sides allowed, denied by the side that denied. Counts
 * carry no source port, so the pairing is by numbers: per connection kind (source, destination,
 * protocol, port), each ingress count stands for connections its egress allowed, and what either
 * side has left over (its other side read at another poll) is reported as that side alone.
 */
import type { VerdictEvent } from '../../flows/types.ts';

/** One side's count of one kind of connection with one verdict, summed over its events. */
interface Tally {
  weight: number;
  first: number;
  last: number;
  sampled: boolean;
  event: VerdictEvent;
}

interface Sides {
  egressAllowed?: Tally;
  egressDenied?: Tally;
  ingressAllowed?: Tally;
  ingressDenied?: Tally;
}

/** The node's events with each connection's two sides, when both were counted, as one. */
export function mergeSides(events: readonly VerdictEvent[]): VerdictEvent[] {
  const byKind = new Map<string, Sides>();
  for (const event of events) {
    const key = `${event.protocol} ${event.src} ${event.dst} ${event.port}`;
    const sides = byKind.get(key) ?? {};
    const side = event.kernel === 'ebpf egress' ? 'egress' : 'ingress';
    const slot = `${side}${event.verdict === 'allowed' ? 'Allowed' : 'Denied'}` as keyof Sides;
    sides[slot] = add(sides[slot], event);
    byKind.set(key, sides);
  }
  const out: VerdictEvent[] = [];
  for (const sides of byKind.values()) {
    const { egressAllowed, egressDenied, ingressAllowed, ingressDenied } = sides;
    if (egressDenied) out.push(as(egressDenied, egressDenied.weight));
    if (!(egressAllowed || egressDenied) || !(ingressAllowed || ingressDenied)) {
      // One side only: this node judged one end (or the other's counts come at another read).
      for (const tally of [egressAllowed, ingressAllowed, ingressDenied])
        if (tally) out.push(as(tally, tally.weight));
      continue;
    }
    let egressLeft = egressAllowed?.weight ?? 0;
    if (ingressDenied) {
      const both = Math.min(ingressDenied.weight, egressLeft);
      egressLeft -= both;
      if (both > 0) out.push(as(ingressDenied, both, egressAllowed));
      if (ingressDenied.weight > both) out.push(as(ingressDenied, ingressDenied.weight - both));
    }
    const ingressLeft = ingressAllowed?.weight ?? 0;
    const both = Math.min(egressLeft, ingressLeft);
    if (both > 0 && ingressAllowed) out.push(as(ingressAllowed, both, egressAllowed));
    if (egressAllowed && egressLeft > both) out.push(as(egressAllowed, egressLeft - both));
    if (ingressAllowed && ingressLeft > both) out.push(as(ingressAllowed, ingressLeft - both));
  }
  return out;
}

function add(tally: Tally | undefined, event: VerdictEvent): Tally {
  const first = event.firstAt ?? event.at;
  const sampled = event.sampled === true;
  if (!tally) return { weight: event.weight ?? 1, first, last: event.at, sampled, event };
  tally.weight += event.weight ?? 1;
  tally.first = Math.min(tally.first, first);
  tally.last = Math.max(tally.last, event.at);
  tally.sampled ||= sampled;
  return tally;
}

/**
 * `weight` connections of `tally`'s kind and verdict; with `egress`, their egress side counted
 * there as well (the event names both sides, and the time both span).
 */
function as(tally: Tally, weight: number, egress?: Tally): VerdictEvent {
  const { sampled: _sampled, firstAt: _firstAt, ...event } = tally.event;
  const first = Math.min(tally.first, egress?.first ?? Infinity);
  const last = Math.max(tally.last, egress?.last ?? -Infinity);
  const sampled = tally.sampled || (egress?.sampled ?? false);
  return {
    ...event,
    at: last,
    ...(first < last ? { firstAt: first } : {}),
    weight,
    ...(sampled ? { sampled: true } : {}),
    ...(egress ? { kernel: 'ebpf egress+ingress' } : {}),
  };
}
