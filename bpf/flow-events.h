/*
 * New connections' verdicts for the agent (`--flow-log`), counted here rather than sent one by
 * one: each side judged for a new TCP, UDP or SCTP connection adds one to its entry (struct
 * flow_key: addresses, destination port, protocol, side, verdict — not the source port) in the
 * map flow_active names, and the agent drains the other map every poll with one batch call, so
 * its work follows the kinds of connection a node has, not their number. Only with
 * CFG_FLOW_EVENTS; tracked packets never get here (they leave at the connection table), so
 * established traffic pays nothing. A connection of a known kind costs a lookup and an add; a new
 * kind, an insert, and under load (a scan: every connection a new kind) each CPU makes at most
 * FLOW_NEW_PER_WINDOW entries per FLOW_WINDOW_NS, past that one in FLOW_SAMPLE, weighted
 * FLOW_SAMPLE, so counts stay right on average and the map's and the agent's work stay bounded.
 * A full map counts the connection in `lost`; the packet's verdict is never touched. Part of
 * palisade.bpf.c; not a header of its own.
 */
#ifndef PALISADE_FLOW_EVENTS_H
#define PALISADE_FLOW_EVENTS_H

#define FLOW_WINDOW_NS 100000000ULL /* 100 ms */
#define FLOW_NEW_PER_WINDOW 2000 /* per CPU: 20,000 new kinds of connection/s */
#define FLOW_SAMPLE 64
#define FLOW_EEXIST 17

/* Adds `weight` connections to an entry another CPU (or this one) made. */
static __always_inline void flow_add(struct flow_count *c, __u64 weight, __u64 now)
{
	__sync_fetch_and_add(&c->count, weight);
	c->last = now;
	if (weight > 1)
		c->sampled = 1;
}

static __noinline void report_flow(const struct packet *p, __u32 dir, __u32 allowed)
{
	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP && p->proto != IPPROTO_SCTP)
		return;
	__u32 zero = 0;
	struct flow_budget *b = bpf_map_lookup_elem(&flow_budget, &zero);
	__u32 *active = bpf_map_lookup_elem(&flow_active, &zero);
	if (!b || !active)
		return;
	struct flow_key k = {
		.dport = p->dport, .family = p->family, .proto = p->proto, .dir = dir, .allowed = allowed
	};
	__builtin_memcpy(k.src, p->src, 16);
	__builtin_memcpy(k.dst, p->dst, 16);
	__u32 which = *active & 1;
	void *counts = which ? (void *)&flow_counts1 : (void *)&flow_counts0;
	__u64 now = bpf_ktime_get_ns();
	struct flow_count *c = bpf_map_lookup_elem(counts, &k);
	if (c) {
		flow_add(c, 1, now);
		return;
	}
	if (now - b->window > FLOW_WINDOW_NS) {
		b->window = now;
		b->sent = 0;
	}
	__u64 weight = 1;
	b->sent++;
	if (b->sent > FLOW_NEW_PER_WINDOW) {
		if (b->sent % FLOW_SAMPLE)
			return;
		weight = FLOW_SAMPLE;
	}
	struct flow_count fresh = { .count = weight, .first = now, .last = now, .sampled = weight > 1 };
	long err = bpf_map_update_elem(counts, &k, &fresh, BPF_NOEXIST);
	if (!err) {
		b->made[which]++;
		return;
	}
	if (err == -FLOW_EEXIST) {
		/* Another CPU made it between the lookup and the insert. */
		c = bpf_map_lookup_elem(counts, &k);
		if (c) {
			flow_add(c, weight, now);
			return;
		}
	}
	b->lost += weight;
}

#endif /* PALISADE_FLOW_EVENTS_H */
