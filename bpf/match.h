/*
 * Matching one table: the slot of a table that matches a packet to or from a remote address on a
 * protocol and port (match()), through the port, range, CIDR and group entries and their bitmap
 * words, with a lookup's working state in a per-CPU scratch slot. Part of palisade.bpf.c, included
 * after maps.h; not a header of its own.
 */
#ifndef PALISADE_MATCH_H
#define PALISADE_MATCH_H

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
	/* The key of a chunk of the remote's groups, here rather than on group_cb's stack: the deepest
	 * call chain (from_pod, judge, side, match, word_cb, group_cb) has 512 bytes of stack in all. */
	struct group_chunk_key chunk_key;
	struct cidr_key cidr_key; /* match()'s CIDR lookups' key, for the same reason */
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
		s->chunk_key.chunk = RESTRICT_CHUNK | (i / GROUP_CHUNK);
		__builtin_memcpy(&s->chunk_key.addr, &s->remote, sizeof(s->chunk_key.addr));
		struct group_chunk *chunk = bpf_map_lookup_elem(&record_groups, &s->chunk_key);
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
		s->chunk_key.chunk = j / GROUP_CHUNK;
		__builtin_memcpy(&s->chunk_key.addr, &s->remote, sizeof(s->chunk_key.addr));
		struct group_chunk *chunk = bpf_map_lookup_elem(&record_groups, &s->chunk_key);
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
		/* In the scratch slot, not on the stack (the deepest call chain's 512 bytes). */
		struct cidr_key *ck = &s->cidr_key;
		__builtin_memset(ck, 0, sizeof(*ck));
		ck->table = table;
		ck->family = remote->family;
		ck->prefixlen = 48 + (remote->family == FAMILY_V4 ? 32 : 128);
		fill_addr(ck->addr, remote->addr);
		ck->kind = CIDR_PRIM;
		prim = bpf_map_lookup_elem(&cidrs, ck);
		if (t->flags & HAS_SUPP) {
			ck->kind = CIDR_SUPP;
			supp = bpf_map_lookup_elem(&cidrs, ck);
		}
		if (supp && (t->flags & HAS_EXCEPT)) {
			ck->kind = CIDR_EXCEPT;
			except = bpf_map_lookup_elem(&cidrs, ck);
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

#endif /* PALISADE_MATCH_H */
