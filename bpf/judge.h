/*
 * Judging one side of a connection: the tiers and NetworkPolicy tables of the local pod (side(),
 * decide()), and judge(), the global function the hooks call, with the verdict cache in front.
 * Part of palisade.bpf.c, included after match.h; not a header of its own.
 */
#ifndef PALISADE_JUDGE_H
#define PALISADE_JUDGE_H

#define UNDECIDED (-1)

/* A tier table's answer: ACTION_ALLOW or ACTION_DENY, or UNDECIDED (nothing matched, or Pass). */
static __always_inline int tier(__u32 table, const struct addr_key *remote, const struct query *q)
{
	int slot = match(table, remote, q, 1);
	if (slot < 0)
		return UNDECIDED;
	struct action_key k = { .table = table, .slot = slot };
	__u32 *action = bpf_map_lookup_elem(&actions, &k);
	if (!action)
		return ACTION_ALLOW;
	return *action == ACTION_DENY ? ACTION_DENY : UNDECIDED;
}

/*
 * The local pod's side of a connection (the classifier's decide, one side): its Admin tier, then
 * its NetworkPolicy table when isolated (which allows its own node), else its Baseline tier.
 */
static __noinline int side(const struct record *local, const struct addr_key *remote, const struct record *r,
			   struct query *q)
{
	__u32 previous_groups = q->previous && r && (r->flags & REC_RESTRICT_GROUPS);
	if (r && !previous_groups) {
		/* The remote's first groups, for every group pass of this side (no record lookup each). */
		__u32 zero = 0;
		struct match_state *s = bpf_map_lookup_elem(&scratch, &zero);
		if (!s)
			return 0;
		__builtin_memcpy(s->rgroups, r->groups, sizeof(s->rgroups));
	}
	q->restricted_groups = previous_groups;
	q->group_count = r ? (previous_groups ? r->restrict_group_count : r->group_count) : 0;
	q->node_of = r ? r->node_address_of : 0;
	__u32 egress = q->dir == DIR_EGRESS;
	const __u32 *tables = q->previous && (local->flags & REC_RESTRICT) ? local->restrict_tables : local->tables;
	__u32 admin = tables[egress ? T_ADMIN_EGRESS : T_ADMIN_INGRESS];
	__u32 np = tables[egress ? T_EGRESS : T_INGRESS];
	__u32 baseline = tables[egress ? T_BASELINE_EGRESS : T_BASELINE_INGRESS];
	__u32 node = local->node;
	if (admin) {
		int a = tier(admin, remote, q);
		if (a == ACTION_ALLOW)
			return 1;
		if (a == ACTION_DENY)
			return 0;
	}
	if (np) {
		if ((q->cfg & CFG_ALLOW_NODE_LOCAL) && node != 0 && q->node_of == node)
			return 1;
		return match(np, remote, q, 0) >= 0;
	}
	if (baseline)
		return tier(baseline, remote, q) != ACTION_DENY;
	return 1;
}

/*
 * The side's verdict. Between the two phases of an update across nodes, an endpoint whose tables
 * changed holds its previous ones too, and an address whose groups changed its previous groups:
 * then the previous policy must allow the packet as well (old and new, never more than either).
 */
static __always_inline int decide(const struct record *local, const struct addr_key *remote, struct query *q)
{
	/* The remote's record (its groups, its node), read once for both passes. */
	struct record *r = bpf_map_lookup_elem(&records, remote);
	q->previous = 0;
	int allowed = side(local, remote, r, q);
	if (!allowed)
		return 0;
	if ((local->flags & REC_RESTRICT) || (r && (r->flags & REC_RESTRICT_GROUPS))) {
		q->previous = 1;
		allowed = side(local, remote, r, q);
	}
	return allowed;
}

#include "verdict-cache.h"

/* A judgement's inputs, which the global function judge() reads: in a per-CPU slot, not on the
 * caller's stack (the call chain's stacks together may not pass 512 bytes). */
struct judgement {
	struct addr_key local;
	struct addr_key remote;
	struct query q;
	__u32 epoch;
	__u32 family;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct judgement);
} judging SEC(".maps");

#define JUDGE_NO_POD (-1)

/*
 * The local side's verdict on a packet (0 or 1), or JUDGE_NO_POD when no pod this node renders
 * has the local address (fail closed): from the verdict cache when this judgement was made in
 * this epoch already, else by the tables. A global function, so the verifier walks it once,
 * not once per path the packet parser leaves (it walks a static function again for each).
 */
__noinline int judge(struct judgement *j)
{
	if (!j)
		return JUDGE_NO_POD;
	/* The addresses as two words each (8-byte aligned in struct judgement). */
	const __u64 *l = (const __u64 *)j->local.addr, *r = (const __u64 *)j->remote.addr;
	/* The local pod's record first, cached verdict or not: a pod without one is isolated at once,
	 * whatever was judged for its address (fail closed, even when its record goes in place). */
	struct record *local = bpf_map_lookup_elem(&records, &j->local);
	if (!local || !(local->flags & REC_ENDPOINT))
		return JUDGE_NO_POD; /* not an address of a pod this node renders: fail closed */
	__u64 query = verdict_query(&j->q, j->family);
	__u64 h = verdict_hash(l, r, query);
	/* A cached verdict was judged in this epoch, on this epoch's live side, which does not change
	 * within an epoch: the tables and the remote's record are what they were. */
	if (!(j->q.cfg & CFG_NO_VERDICT_CACHE)) {
		int cached = verdict_cached(h, l, r, query, j->epoch);
		if (cached >= 0)
			return cached;
	}
	int allowed = decide(local, &j->remote, &j->q);
	verdict_store(h, l, r, query, j->epoch, allowed);
	return allowed;
}

#endif /* PALISADE_JUDGE_H */
