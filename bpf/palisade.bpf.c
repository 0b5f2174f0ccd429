// SPDX-License-Identifier: GPL-2.0
/*
 * Palisade's eBPF datapath: NetworkPolicy and ordered cluster policy enforced at the node side of
 * each pod's veth, with the in-process classifier's maps (see palisade.h and
 * docs/ARCHITECTURE.md). Two programs: `from_pod` on the interface's tc ingress (packets the pod
 * sends: its egress side) and `to_pod` on its tc egress (packets to the pod: its ingress side).
 * Each judges the one side of a connection that belongs to its pod, the way the classifier's
 * verdict splits by side, so a packet between two pods is judged by the source's node for egress
 * and by the destination's node for ingress.
 *
 * Per packet: the headers, read in place when they are plain (parse_direct); the epoch (one array
 * element); a tracked connection — one entry per connection on the node, which its replies and
 * both its ends' hooks share, with a side per local end — follows its end's verdict when that was
 * judged in this epoch, with nothing else read (the path established traffic takes). Otherwise the epoch picks the record side, the local pod's record (none: dropped — fail
 * closed) gives its tables, and a tracked connection is judged again by its first packet's
 * direction and port (so a connection a new policy denies is cut at its next packet); a new one is
 * judged by the tables: tier tables by their lowest matching slot, NetworkPolicy tables by any.
 * Between two pods of this node the sender's from_pod settles the receiver's side too and hands
 * its verdict on the packet to the receiver's to_pod, which runs next on the same CPU (handoff.h).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "palisade.h"

#define NO_PREALLOC BPF_F_NO_PREALLOC

#define HASH_MAP(name, k, v, n)                                                                    \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__uint(max_entries, n);                                                            \
		__uint(map_flags, NO_PREALLOC);                                                    \
		__type(key, k);                                                                    \
		__type(value, v);                                                                  \
	} name SEC(".maps")

#define LPM_MAP(name, k, v, n)                                                                     \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, n);                                                            \
		__uint(map_flags, NO_PREALLOC);                                                    \
		__type(key, k);                                                                    \
		__type(value, v);                                                                  \
	} name SEC(".maps")

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen);
} gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

/*
 * A hash map's bucket array has max_entries buckets whatever it holds (16 bytes each, in 4 KiB
 * pages), and a lookup of a key not read lately costs a TLB miss and a cache miss in it: per
 * packet, the entries of the remote's policies (ports, groups) are such keys when every client
 * has its own. So per-table maps are sized for what a node holds (shape (a) node-0: 300 port
 * and group entries) with a wide margin, not for the most a machine could: 1<<20 buckets made
 * each of those lookups cost about what all the program's other work does (docs/BENCHMARKS.md).
 */
#define TABLE_ENTRIES (1 << 16)
#define ADDRESS_ENTRIES (1 << 20)

HASH_MAP(records, struct addr_key, struct record, ADDRESS_ENTRIES);
HASH_MAP(record_groups, struct group_chunk_key, struct group_chunk, 1 << 18);
HASH_MAP(tables, __u32, struct table, TABLE_ENTRIES);
HASH_MAP(ports, struct port_key, struct entry, TABLE_ENTRIES);
LPM_MAP(ranges, struct range_key, struct entry, 1 << 18);
LPM_MAP(cidrs, struct cidr_key, struct entry, 1 << 20);
HASH_MAP(groups, struct group_key, struct entry, TABLE_ENTRIES);
HASH_MAP(bits, struct bits_key, __u64, 1 << 20);
HASH_MAP(actions, struct action_key, __u32, TABLE_ENTRIES);
HASH_MAP(group_names, __u32, struct group_name, TABLE_ENTRIES);

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ct_key);
	__type(value, struct ct_value);
} conntrack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct frag_key);
	__type(value, struct frag_value);
} frags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VERDICT_SLOTS);
	__type(key, __u32);
	__type(value, struct verdict_slot);
} verdicts SEC(".maps");

/* One slot per CPU: a receiver's verdict handed from from_pod to to_pod (struct handoff). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct handoff);
} handoffs SEC(".maps");

/* A table lookup's working state (too large for the 512-byte stack): one per CPU. */
struct side_entry {
	struct entry e; /* narrow tables: only e.w[0] (word 0) */
	__u32 present;
};

#define P_PORT 0
#define P_ANY 1
#define P_L3 2
#define P_RANGE 3
#define ALL_WORDS 0xffffffff
#define MAX_STRIDE 1024

struct match_state {
	__u32 table;
	__u32 words;
	__u32 stride;
	__u32 first;
	struct side_entry p[4];
	struct side_entry prim, supp, except;
	struct addr_key remote;
	__u32 group_count;
	__u32 restricted; /* the remote's groups are its previous ones (record_groups, RESTRICT_CHUNK) */
	__u32 word; /* the word the group pass computes, or ALL_WORDS for summaries and first words */
	__u64 gsum;
	__u64 gacc;
	/*
	 * A wide table's group words by number, gathered by the first group pass from the words the
	 * group entries hold (gmask: which are set), so the candidate word needs no second pass —
	 * when every word number fits (at most 64 words) and no group entry keeps words in `bits`.
	 */
	__u32 direct;
	__u64 gmask;
	__u64 gw[64];
	__u32 rgroups[INLINE_GROUPS]; /* the remote's first groups (its record's), copied by side() */
	__u64 candidates; /* summary bits not visited yet */
	__u32 base;       /* the first word of the current summary bit */
	__u32 next;       /* the next word of it, from base */
	__u64 acc;
	__u64 ports;
	__u64 peers;
	__s32 result;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct match_state);
} scratch SEC(".maps");

/* De Bruijn: the lowest set bit's index without branches (each branch would double the states
 * the verifier explores). */
static const __u8 debruijn64[64] = {
	0,  1,  48, 2,  57, 49, 28, 3,  61, 58, 50, 42, 38, 29, 17, 4,  62, 55, 59, 36, 53, 51,
	43, 22, 45, 39, 33, 30, 24, 18, 12, 5,  63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21,
	44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,  6,
};

static __always_inline __u32 ctz64(__u64 x)
{
	return debruijn64[((x & -x) * 0x03f79d71b4cb0a89ULL) >> 58];
}

/*
 * Word `w` of an entry's bitmap: one of the words it holds (unused ones are zero, so they add
 * nothing whatever their number), else, past the last it holds, from `bits` when it has more.
 */
static __always_inline __u64 word_of(__u32 table, const struct entry *e, __u32 w)
{
	__u64 v = 0;
#pragma unroll
	for (int j = 0; j < ENTRY_WORDS; j++)
		v |= e->w[j] & -(__u64)(e->at[j] == w);
	if (e->count > ENTRY_WORDS && w > e->at[ENTRY_WORDS - 1]) {
		struct bits_key k = { .table = table, .index = e->index, .word = w };
		__u64 *spilled = bpf_map_lookup_elem(&bits, &k);
		if (spilled)
			v = *spilled;
	}
	return v;
}

/* Notes an entry's summary; copies it when the table is wide (a narrow one needs word 0 only). */
static __always_inline void take(struct side_entry *to, const struct entry *e, __u64 *summary, __u32 wide)
{
	if (!e || !e->summary) {
		to->present = 0;
		to->e.w[0] = 0;
		return;
	}
	to->present = 1;
	if (wide)
		__builtin_memcpy(&to->e, e, sizeof(to->e));
	else
		to->e.w[0] = e->w[0];
	*summary |= e->summary;
}

static __always_inline void visit_group(struct match_state *s, __u32 group)
{
	struct group_key k = { .table = s->table, .group = group };
	struct entry *e = bpf_map_lookup_elem(&groups, &k);
	if (!e)
		return;
	if (s->word == ALL_WORDS) {
		s->gsum |= e->summary;
		s->gacc |= e->w[0]; /* word 0 in a narrow table, the only one read there */
		if (e->count > ENTRY_WORDS)
			s->direct = 0;
		/* Without branches (each would double the verifier's states): an unused word is zero at
		 * number 0, which leaves gw[0] as it was when gmask marks it, else zero (unread). */
#pragma unroll
		for (int j = 0; j < ENTRY_WORDS; j++) {
			__u64 w = e->w[j];
			__u32 at = e->at[j] & 63;
			__u64 held = -((s->gmask >> at) & 1);
			s->gw[at] = (s->gw[at] & held) | w;
			s->gmask |= ((w | -w) >> 63) << at;
		}
	} else {
		s->gacc |= word_of(s->table, e, s->word);
	}
}

/* The remote address's group i: the record holds the first ones, chunks of `record_groups` the rest. */
static long group_cb(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct match_state *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	__u32 group;
	if (s->restricted) {
		/* The previous policy's groups: all in chunks. */
		struct group_chunk_key k = { .chunk = RESTRICT_CHUNK | (i / GROUP_CHUNK) };
		__builtin_memcpy(&k.addr, &s->remote, sizeof(k.addr));
		struct group_chunk *chunk = bpf_map_lookup_elem(&record_groups, &k);
		if (!chunk)
			return 1;
		__u32 j = i;
		barrier_var(j);
		group = chunk->groups[j & (GROUP_CHUNK - 1)];
	} else if (i < INLINE_GROUPS) {
		__u32 at = i;
		barrier_var(at); /* keeps the mask below: the verifier needs it, the compiler would drop it */
		group = s->rgroups[at & (INLINE_GROUPS - 1)];
	} else {
		__u32 j = i - INLINE_GROUPS;
		struct group_chunk_key k = { .chunk = j / GROUP_CHUNK };
		__builtin_memcpy(&k.addr, &s->remote, sizeof(k.addr));
		struct group_chunk *chunk = bpf_map_lookup_elem(&record_groups, &k);
		if (!chunk)
			return 1;
		barrier_var(j);
		group = chunk->groups[j & (GROUP_CHUNK - 1)];
	}
	visit_group(s, group);
	return 0;
}

static __always_inline void group_pass(struct match_state *s, __u32 word)
{
	s->word = word;
	s->gsum = 0;
	s->gacc = 0;
	__u32 count = s->group_count;
	if (count > INLINE_GROUPS + MAX_GROUP_CHUNKS * GROUP_CHUNK)
		count = INLINE_GROUPS + MAX_GROUP_CHUNKS * GROUP_CHUNK;
	if (count > 0)
		bpf_loop(count, group_cb, NULL, 0);
}

/* ORs word `w` of an entry into the accumulator (in map memory, so paths join with equal states). */
static __always_inline void or_word(struct match_state *s, const struct side_entry *e, __u32 w)
{
	if (e->present)
		s->acc |= word_of(s->table, &e->e, w);
}

/*
 * One candidate word of a wide table, in ascending order: the candidate summary bits are taken
 * lowest first and each covers `stride` words. Stops at the first word where a slot matches.
 */
static long word_cb(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct match_state *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	if (s->next >= s->stride) {
		if (!s->candidates)
			return 1;
		s->base = ctz64(s->candidates) * s->stride;
		s->candidates &= s->candidates - 1;
		s->next = 0;
	}
	__u32 w = s->base + s->next;
	s->next++;
	if (w >= s->words)
		return 0;
	s->acc = 0;
	or_word(s, &s->p[P_PORT], w);
	or_word(s, &s->p[P_ANY], w);
	or_word(s, &s->p[P_L3], w);
	or_word(s, &s->p[P_RANGE], w);
	s->ports = s->acc;
	if (!s->ports)
		return 0;
	s->acc = 0;
	or_word(s, &s->except, w);
	s->peers = s->acc;
	s->acc = 0;
	or_word(s, &s->supp, w);
	s->peers = s->acc & ~s->peers;
	s->acc = 0;
	or_word(s, &s->prim, w);
	s->peers |= s->acc;
	/* Tier tables need the lowest matching slot, so groups count even when a prefix matched. */
	if (s->first || !(s->ports & s->peers)) {
		if (s->direct) {
			__u32 at = w & 63;
			s->peers |= (s->gmask >> at) & 1 ? s->gw[at] : 0;
		} else {
			group_pass(s, w);
			s->peers |= s->gacc;
		}
	}
	__u64 m = s->ports & s->peers;
	if (!m)
		return 0;
	s->result = (__s32)(w * 64 + ctz64(m));
	return 1;
}

static __always_inline void fill_addr(__u8 *to, const __u8 *from)
{
	__builtin_memcpy(to, from, 16);
}

/* What a side is judged on: the packet's (original) direction, protocol index and port. */
struct query {
	__u32 dir;
	__u32 proto;
	__u32 port;
	__u32 cfg;
	__u32 group_count; /* the remote address's groups */
	__u32 node_of;     /* the node the remote address belongs to, 0 none */
	__u32 previous;    /* judge with the previous policy (restrict_tables, previous groups) */
	__u32 restricted_groups; /* ... and the remote's groups are its previous ones */
};

/*
 * The slot of `table` that matches a packet to or from `remote` on (protocol index, port): the
 * lowest for tier tables (`first`), any for NetworkPolicy tables; -1 when none matches.
 */
static __noinline int match(__u32 table, const struct addr_key *remote, const struct query *q, __u32 first)
{
	__u32 proto = q->proto;
	__u32 port = q->port;
	__u32 zero = 0;
	struct match_state *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return -1;
	struct table *t = bpf_map_lookup_elem(&tables, &table);
	if (!t)
		return -1; /* a table being written or gone matches nothing: fail closed */
	s->table = table;
	s->words = t->words;
	s->stride = t->stride;
	s->first = first;
	s->result = -1;
	__builtin_memcpy(&s->remote, remote, sizeof(s->remote));
	s->group_count = q->group_count;
	s->restricted = q->restricted_groups;
	s->gsum = 0;
	s->gacc = 0;
	s->gmask = 0;
	s->direct = s->words <= 64;

	__u32 wide = s->words > 1;
	__u64 psum = 0;
	take(&s->p[P_L3], &t->l3, &psum, wide);
	if (proto < PROTO_OTHER) {
		take(&s->p[P_ANY], &t->any[proto & 3], &psum, wide);
		struct entry *e = NULL;
		if (t->flags & HAS_PORTS) {
			struct port_key pk = { .table = table, .port = port, .proto = proto };
			e = bpf_map_lookup_elem(&ports, &pk);
		}
		take(&s->p[P_PORT], e, &psum, wide);
		e = NULL;
		if (t->flags & HAS_RANGES) {
			struct range_key rk = { .prefixlen = 56, .table = table, .proto = proto };
			rk.port[0] = port >> 8;
			rk.port[1] = port & 0xff;
			e = bpf_map_lookup_elem(&ranges, &rk);
		}
		take(&s->p[P_RANGE], e, &psum, wide);
	} else {
		take(&s->p[P_ANY], NULL, &psum, wide);
		take(&s->p[P_PORT], NULL, &psum, wide);
		take(&s->p[P_RANGE], NULL, &psum, wide);
	}
	if (!psum)
		return -1;

	__u64 qsum = 0;
	__u64 except_summary = 0;
	struct entry *prim = NULL, *supp = NULL, *except = NULL;
	if (t->flags & HAS_CIDRS) {
		struct cidr_key ck = { .table = table, .family = remote->family };
		ck.prefixlen = 48 + (remote->family == FAMILY_V4 ? 32 : 128);
		fill_addr(ck.addr, remote->addr);
		ck.kind = CIDR_PRIM;
		prim = bpf_map_lookup_elem(&cidrs, &ck);
		if (t->flags & HAS_SUPP) {
			ck.kind = CIDR_SUPP;
			supp = bpf_map_lookup_elem(&cidrs, &ck);
		}
		if (supp && (t->flags & HAS_EXCEPT)) {
			ck.kind = CIDR_EXCEPT;
			except = bpf_map_lookup_elem(&cidrs, &ck);
		}
	}
	take(&s->prim, prim, &qsum, wide);
	take(&s->supp, supp, &qsum, wide);
	take(&s->except, except, &except_summary, wide);
	if (t->flags & HAS_GROUPS) {
		group_pass(s, ALL_WORDS);
		qsum |= s->gsum;
	}
	__u64 candidates = psum & qsum;
	if (!candidates)
		return -1;

	if (s->words == 1) {
		/* Absent entries hold zero words. */
		__u64 ports = s->p[P_PORT].e.w[0] | s->p[P_ANY].e.w[0] | s->p[P_L3].e.w[0] | s->p[P_RANGE].e.w[0];
		__u64 peers = s->prim.e.w[0] | s->gacc | (s->supp.e.w[0] & ~s->except.e.w[0]);
		__u64 m = ports & peers;
		if (!m)
			return -1;
		return first ? (int)ctz64(m) : 0;
	}

	/* Candidate words: each summary bit covers `stride` words (one when the table has <= 64). */
	__u64 c = candidates;
	c = c - ((c >> 1) & 0x5555555555555555ULL);
	c = (c & 0x3333333333333333ULL) + ((c >> 2) & 0x3333333333333333ULL);
	c = (((c + (c >> 4)) & 0x0f0f0f0f0f0f0f0fULL) * 0x0101010101010101ULL) >> 56;
	__u32 stride = s->stride;
	if (stride > MAX_STRIDE)
		stride = MAX_STRIDE;
	s->stride = stride;
	s->candidates = candidates;
	s->next = stride;
	bpf_loop((__u32)c * stride, word_cb, NULL, 0);
	return s->result;
}

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

#include "packet.h"
#include "handoff.h"

static __always_inline __u32 proto_index(__u8 proto)
{
	if (proto == IPPROTO_TCP)
		return PROTO_TCP;
	if (proto == IPPROTO_UDP)
		return PROTO_UDP;
	if (proto == IPPROTO_SCTP)
		return PROTO_SCTP;
	return PROTO_OTHER;
}

/* A first fragment that passes leaves its ports for the fragments after it (which carry none). */
static __always_inline int verdict(const struct packet *p, __u32 dir, __u32 allowed)
{
	if (allowed && p->first_fragment) {
		struct frag_key fk = { .dir = dir, .proto = p->proto, .family = p->family, .id = p->frag_id };
		fill_addr(fk.src, p->src);
		fill_addr(fk.dst, p->dst);
		struct frag_value fv = { .sport = p->sport, .dport = p->dport };
		bpf_map_update_elem(&frags, &fk, &fv, BPF_ANY);
	}
	return allowed ? TC_ACT_OK : TC_ACT_SHOT;
}

/* Whether (local, lport) comes before (remote, rport) in the connection key's canonical order
 * (any fixed total order does: both ends' hooks compute the same one). */
static __always_inline int local_first(const __u8 *local, __u16 lport, const __u8 *remote, __u16 rport)
{
	__u64 l0, l1, r0, r1;
	__builtin_memcpy(&l0, local, 8);
	__builtin_memcpy(&l1, local + 8, 8);
	__builtin_memcpy(&r0, remote, 8);
	__builtin_memcpy(&r1, remote + 8, 8);
	if (l0 != r0)
		return l0 < r0;
	if (l1 != r1)
		return l1 < r1;
	return lport <= rport;
}

/* One end's side, written with one 8-byte store (see struct ct_side). */
static __always_inline void write_side(struct ct_side *to, __u32 epoch, __u32 allowed, __u32 dir)
{
	struct ct_side s = { .epoch = epoch, .allowed = allowed, .dir = dir, .judged = 1 };
	__u64 whole;
	__builtin_memcpy(&whole, &s, sizeof(whole));
	*(volatile __u64 *)to = whole;
}

/*
 * One end's side, read with one 8-byte load: read field by field (as a struct copy compiles), a
 * side rewritten on another CPU between the loads could pair an old verdict with a new epoch.
 */
static __always_inline struct ct_side read_side(const struct ct_side *from)
{
	__u64 whole = *(const volatile __u64 *)from;
	struct ct_side s;
	__builtin_memcpy(&s, &whole, sizeof(s));
	return s;
}

/* A side to write beside the packet's own end's: the other end's, when this hook judged it too. */
struct other_side {
	__s32 allowed; /* -1: none */
	__u32 dir;
};

/*
 * Writes this end's side of the connection (and the other end's, when from_pod judged it for a
 * receiver on this node): in place when the entry exists (judged again, or this end's first
 * packet of a connection the other end — a pod of this node too — inserted), else a new entry
 * with the sides judged.
 */
static __always_inline void record_side(struct ct_key *k, __u32 mine, __u32 epoch, __u32 allowed, __u32 dir,
					__u32 found, struct other_side other)
{
	/* An entry the packet's first lookup did not find is inserted at once (no second lookup). */
	struct ct_value *v = found ? bpf_map_lookup_elem(&conntrack, k) : NULL;
	if (!v) {
		struct ct_value nv = {};
		nv.end[mine & 1] = (struct ct_side){ .epoch = epoch, .allowed = allowed, .dir = dir, .judged = 1 };
		if (other.allowed >= 0)
			nv.end[(mine & 1) ^ 1] = (struct ct_side){
				.epoch = epoch, .allowed = other.allowed, .dir = other.dir, .judged = 1
			};
		if (bpf_map_update_elem(&conntrack, k, &nv, BPF_NOEXIST) == 0)
			return;
		/* The other end inserted it meanwhile (on another CPU): keep its side, write ours. */
		v = bpf_map_lookup_elem(&conntrack, k);
		if (!v)
			return;
	}
	write_side(&v->end[mine & 1], epoch, allowed, dir);
	if (other.allowed >= 0)
		write_side(&v->end[(mine & 1) ^ 1], epoch, other.allowed, other.dir);
}

/*
 * from_pod, a packet its sender's side passes whose receiver may be a pod of this node: the
 * receiver's side, for its to_pod (the hand-over) and, when judged here, for the entry. Its side
 * is current in the entry (read by the caller), or judged here as its to_pod would judge it — a
 * new side as the receiver's ingress on the destination port, an earlier epoch's by its own first
 * packet's direction and port; none when the destination is not a pod this node renders.
 */
static __always_inline struct other_side receiver_side(struct judgement *j, const struct packet *p,
						       struct ct_side theirs, __u32 cfg)
{
	struct other_side out = { .allowed = -1 };
	if (theirs.judged && !(cfg & CFG_RECHECK_FLOWS))
		return out; /* its verdict stays, after its to_pod finds its record live: left to it */
	__u32 dir = theirs.judged ? theirs.dir : DIR_INGRESS;
	fill_addr(j->local.addr, p->dst);
	fill_addr(j->remote.addr, p->src);
	j->q.dir = dir;
	/* The receiver's remote port is the sender's: its destination port when it opened the connection. */
	j->q.port = dir == DIR_EGRESS ? p->sport : p->dport;
	int allowed = judge(j);
	if (allowed < 0)
		return out;
	out.allowed = allowed > 0;
	out.dir = dir;
	return out;
}

/*
 * Established traffic takes the shortest path: parse, the epoch, one connection-table lookup.
 * An entry judged in the current epoch was written after its local pod's record was found live
 * in that epoch, and the live side does not change within an epoch, so neither the record nor the
 * configuration is read again until the epoch moves. Everything policy-related comes after.
 * Between two pods of this node, to_pod takes shorter still: the verdict from_pod handed over for
 * this very packet (handoff.h), from the entry's receiver side or judged there.
 */
static __always_inline int handle(struct __sk_buff *skb, __u32 dir)
{
	struct packet p = {};
	if (!parse_direct(skb, &p)) {
		int parsed = parse(skb, &p);
		if (parsed > 0 || p.pass)
			return TC_ACT_OK;
		if (parsed < 0)
			return TC_ACT_SHOT;
	}

	__u32 zero = 0;
	struct gen *g = bpf_map_lookup_elem(&gen, &zero);
	if (!g)
		return TC_ACT_SHOT;
	__u32 epoch = *(volatile __u32 *)&g->epoch;
	__u32 side = epoch & 1;
	__u32 egress = dir == DIR_EGRESS;

	if (!egress && p.direct) {
		int handed = handoff_take(&p, epoch);
		if (handed >= 0)
			return handed ? TC_ACT_OK : TC_ACT_SHOT;
	}

	if (p.nonfirst) {
		struct frag_key fk = { .dir = dir, .proto = p.proto, .family = p.family, .id = p.frag_id };
		fill_addr(fk.src, p.src);
		fill_addr(fk.dst, p.dst);
		struct frag_value *fv = bpf_map_lookup_elem(&frags, &fk);
		if (!fv)
			return TC_ACT_SHOT;
		p.sport = fv->sport;
		p.dport = fv->dport;
		p.tracked = 1;
	}

	/* The connection's entry: its ends in canonical order, this hook's local end at `mine`. */
	__u16 lport = egress ? p.sport : p.dport;
	__u16 rport = egress ? p.dport : p.sport;
	const __u8 *laddr = egress ? p.src : p.dst;
	const __u8 *raddr = egress ? p.dst : p.src;
	struct ct_key k = { .proto = p.proto, .family = p.family };
	__u32 rejudge = 0; /* this end judged the connection in an earlier epoch */
	__u32 first_dir = dir;
	__u32 found = 0; /* the connection has an entry (the other end's side, or this end's of an earlier epoch) */
	__u32 mine = 0;
	struct ct_side theirs = {}; /* the other end's side (from_pod: the receiver's) */
	if (p.tracked) {
		mine = !local_first(laddr, lport, raddr, rport);
		k.port_a = mine ? rport : lport;
		k.port_b = mine ? lport : rport;
		fill_addr(k.a, mine ? raddr : laddr);
		fill_addr(k.b, mine ? laddr : raddr);
		struct ct_value *v = bpf_map_lookup_elem(&conntrack, &k);
		if (v) {
			found = 1;
			struct ct_side own = read_side(&v->end[mine & 1]);
			if (egress && p.direct)
				theirs = read_side(&v->end[(mine & 1) ^ 1]);
			if (own.judged) {
				if (own.epoch == epoch) {
					/* Sent to a pod of this node whose side is current: hand it over. */
					if (own.allowed && theirs.judged && theirs.epoch == epoch) {
						struct config *c = bpf_map_lookup_elem(&config, &zero);
						if (c && !(c->flags & CFG_NO_HANDOFF))
							handoff_give(&p, epoch, theirs.allowed);
					}
					return verdict(&p, dir, own.allowed);
				}
				rejudge = 1 + own.allowed; /* 1: denied, 2: allowed */
				first_dir = own.dir;
			}
		}
	}

	struct config *c = bpf_map_lookup_elem(&config, &zero);
	if (!c)
		return TC_ACT_SHOT;
	__u32 cfg = c->flags;
	struct judgement *j = bpf_map_lookup_elem(&judging, &zero);
	if (!j)
		return TC_ACT_SHOT;
	j->epoch = epoch;
	j->family = p.family;
	j->local.side = j->remote.side = side;
	j->local.family = j->remote.family = p.family;
	fill_addr(j->local.addr, laddr);
	fill_addr(j->remote.addr, raddr);
	j->q = (struct query){ .dir = dir, .proto = proto_index(p.proto), .port = p.dport, .cfg = cfg };
	if (rejudge) {
		if (!(cfg & CFG_RECHECK_FLOWS)) {
			struct record *local = bpf_map_lookup_elem(&records, &j->local);
			if (!local || !(local->flags & REC_ENDPOINT))
				return TC_ACT_SHOT;
			return verdict(&p, dir, rejudge == 2);
		}
		/* Judged as its first packet was: a reply's original destination port is the remote's
		 * when the local pod opened the connection, its own when it accepted it. */
		j->q.dir = first_dir;
		j->q.port = first_dir == DIR_EGRESS ? rport : lport;
	}
	__u32 judged_dir = j->q.dir;
	int allowed = judge(j);
	if (allowed < 0)
		return TC_ACT_SHOT;
	allowed = allowed > 0;
	if (!p.tracked)
		return allowed ? TC_ACT_OK : TC_ACT_SHOT;
	struct other_side other = { .allowed = -1 };
	if (egress && allowed && p.direct && !(cfg & CFG_NO_HANDOFF)) {
		if (theirs.judged && theirs.epoch == epoch) {
			handoff_give(&p, epoch, theirs.allowed);
		} else {
			other = receiver_side(j, &p, theirs, cfg);
			if (other.allowed >= 0)
				handoff_give(&p, epoch, other.allowed);
		}
	}
	record_side(&k, mine, epoch, allowed, judged_dir, found, other);
	return verdict(&p, dir, allowed);
}

SEC("tc")
int from_pod(struct __sk_buff *skb)
{
	return handle(skb, DIR_EGRESS);
}

SEC("tc")
int to_pod(struct __sk_buff *skb)
{
	return handle(skb, DIR_INGRESS);
}

char LICENSE[] SEC("license") = "GPL";
