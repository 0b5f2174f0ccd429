/*
 * The verdict cache: one per-CPU slot per (local, remote, direction, protocol, port) judgement,
 * valid in the epoch it was made in (judge() in palisade.bpf.c reads and fills it). Part of
 * palisade.bpf.c, included where struct query and the verdicts map are defined; not a header of
 * its own.
 */
#ifndef PALISADE_VERDICT_CACHE_H
#define PALISADE_VERDICT_CACHE_H

/* What a judgement is on besides its two addresses, as one word (struct verdict_slot's `query`). */
static __always_inline __u64 verdict_query(const struct query *q, __u32 family)
{
	return (__u64)(q->port & 0xffff) | (__u64)(q->proto & 0xff) << 16 | (__u64)(q->dir & 0xff) << 24 |
	       (__u64)(family & 0xff) << 32 | (__u64)(q->cfg & 0xffffff) << 40;
}

/* A judgement's hash: its slot (the low bits) and the bits its slot's check holds (the top 30). */
static __always_inline __u64 verdict_hash(const __u64 *l, const __u64 *r, __u64 query)
{
	__u64 h = l[0] * 0x9e3779b97f4a7c15ULL;
	h = (h ^ (h >> 31) ^ l[1]) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 29) ^ r[0]) * 0x94d049bb133111ebULL;
	h = (h ^ (h >> 32) ^ r[1]) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ (h >> 29) ^ query) * 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

#define VERDICT_MARK (1ULL << 33)
#define VERDICT_HASH_BITS (~0ULL << 34)

/* The verdict (0 or 1) this CPU's slot holds for the judgement in this epoch, or -1. Few branches:
 * each would multiply the states the verifier walks on the way to decide(). */
static __always_inline int verdict_cached(__u64 h, const __u64 *l, const __u64 *r, __u64 query, __u32 epoch)
{
	__u32 at = h & (VERDICT_SLOTS - 1);
	struct verdict_slot *v = bpf_map_lookup_elem(&verdicts, &at);
	if (!v)
		return -1;
	__u64 check = *(volatile __u64 *)&v->check;
	__u64 expect = (__u64)epoch | VERDICT_MARK | (h & VERDICT_HASH_BITS);
	__u64 a[2], b[2];
	__builtin_memcpy(a, v->local, 16);
	__builtin_memcpy(b, v->remote, 16);
	__u64 diff = ((check ^ expect) & ~(1ULL << 32)) | (a[0] ^ l[0]) | (a[1] ^ l[1]) | (b[0] ^ r[0]) |
		     (b[1] ^ r[1]) | (v->query ^ query);
	if (diff)
		return -1;
	return (check >> 32) & 1;
}

static __always_inline void verdict_store(__u64 h, const __u64 *l, const __u64 *r, __u64 query, __u32 epoch,
					  __u32 allowed)
{
	__u32 at = h & (VERDICT_SLOTS - 1);
	struct verdict_slot *v = bpf_map_lookup_elem(&verdicts, &at);
	if (!v)
		return;
	/* Emptied first, so a reader between these stores finds no check of this key. */
	*(volatile __u64 *)&v->check = 0;
	__builtin_memcpy(v->local, l, 16);
	__builtin_memcpy(v->remote, r, 16);
	v->query = query;
	*(volatile __u64 *)&v->check =
		(__u64)epoch | (__u64)(allowed & 1) << 32 | VERDICT_MARK | (h & VERDICT_HASH_BITS);
}

#endif /* PALISADE_VERDICT_CACHE_H */
