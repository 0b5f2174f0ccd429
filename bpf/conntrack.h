/*
 * The connection table's entries as the hooks read and write them: the canonical order of a
 * connection's ends, one end's side read and written whole, the insert of a new entry, and the
 * receiver's side from_pod settles for a packet to a pod of this node. Part of palisade.bpf.c,
 * included after judge.h, packet.h and handoff.h; not a header of its own.
 */
#ifndef PALISADE_CONNTRACK_H
#define PALISADE_CONNTRACK_H

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

/*
 * What the host's conntrack said of the packets this end sends (ct_side.host): one byte written
 * alone, so the side's epoch and verdict are never touched. A side rewritten whole on another CPU
 * between this hook's read and this store gets this note instead of its zero: at worst a note of
 * HOST_BYPASSED leaves the host entry its packet made (picked up mid-stream: liberal, never
 * INVALID) to its own timeout, and HOST_TRANSLATED keeps it on the host's path until it is judged
 * again.
 */
static __always_inline void mark_host(struct ct_side *side, __u8 host)
{
	*(volatile __u8 *)&side->host = host;
}

/* Both sides' notes: what the host's conntrack said holds for the connection's two directions
 * (its entry is one for both: host-ct.h asks for both tuples). */
static __always_inline void mark_connection(struct ct_value *v, __u8 host)
{
	mark_host(&v->end[0], host);
	mark_host(&v->end[1], host);
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

#endif /* PALISADE_CONNTRACK_H */
