/*
 * New connections' verdicts for the agent (`--flow-log`): one event per side judged for a new
 * connection, into the flow_events ring buffer, only with CFG_FLOW_EVENTS. Tracked packets never
 * get here (they leave at the connection table), so established traffic pays nothing. Under load
 * each CPU sends at most FLOW_EVENTS_PER_WINDOW events per FLOW_WINDOW_NS; past that one
 * connection in FLOW_SAMPLE is sent, weighted FLOW_SAMPLE, so counts stay right on average and
 * the ring buffer's work stays bounded. A full ring buffer drops the event (counted in `lost`),
 * never the packet. Part of palisade.bpf.c; not a header of its own.
 */
#ifndef PALISADE_FLOW_EVENTS_H
#define PALISADE_FLOW_EVENTS_H

#define FLOW_WINDOW_NS 100000000ULL /* 100 ms */
#define FLOW_EVENTS_PER_WINDOW 2000 /* per CPU: 20,000 events/s */
#define FLOW_SAMPLE 64

static __noinline void report_flow(const struct packet *p, __u32 dir, __u32 allowed)
{
	__u32 zero = 0;
	struct flow_budget *b = bpf_map_lookup_elem(&flow_budget, &zero);
	if (!b)
		return;
	__u64 now = bpf_ktime_get_ns();
	if (now - b->window > FLOW_WINDOW_NS) {
		b->window = now;
		b->sent = 0;
	}
	__u32 weight = 1;
	b->sent++;
	if (b->sent > FLOW_EVENTS_PER_WINDOW) {
		if (b->sent % FLOW_SAMPLE)
			return;
		weight = FLOW_SAMPLE;
	}
	struct flow_event *e = bpf_ringbuf_reserve(&flow_events, sizeof(*e), 0);
	if (!e) {
		b->lost++;
		return;
	}
	__builtin_memcpy(e->src, p->src, 16);
	__builtin_memcpy(e->dst, p->dst, 16);
	e->sport = p->sport;
	e->dport = p->dport;
	e->family = p->family;
	e->proto = p->proto;
	e->dir = dir;
	e->allowed = allowed;
	e->weight = weight;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
}

#endif /* PALISADE_FLOW_EVENTS_H */
