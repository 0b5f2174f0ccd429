/*
 * The hand-over of a receiver's verdict from the sender's from_pod to the receiver's to_pod, for
 * a packet between two pods of this node (struct handoff in palisade.h says why it is sound), and
 * the delivery of such a packet straight into the receiver's namespace where `peers` names it
 * (struct peer says when that is sound), with where to deliver learned from the host's own frames.
 * Part of palisade.bpf.c, included after struct packet, the maps and host-ct.h; not a header of
 * its own.
 */
#ifndef PALISADE_HANDOFF_H
#define PALISADE_HANDOFF_H

#define HANDOFF_MARK (1ULL << 33)
#define HANDOFF_HASH_BITS (~0ULL << 34)

static __always_inline __u64 handoff_ports(const struct packet *p)
{
	return (__u64)p->sport | (__u64)p->dport << 16 | (__u64)p->proto << 32 | (__u64)p->family << 40;
}

/* Hash bits of a hand-over's fields, which its check word carries. */
static __always_inline __u64 handoff_hash(const __u64 *s, const __u64 *d, __u64 ports, __u64 ident)
{
	__u64 h = (s[0] ^ ports) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ (h >> 31) ^ s[1]) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 29) ^ d[0]) * 0x94d049bb133111ebULL;
	h = (h ^ (h >> 32) ^ d[1] ^ ident) * 0x9e3779b97f4a7c15ULL;
	return (h ^ (h >> 29)) & HANDOFF_HASH_BITS;
}

/* from_pod: this packet's receiver's verdict in this epoch, for the to_pod that runs next. */
static __always_inline void handoff_give(const struct packet *p, __u32 epoch, __u32 allowed)
{
	__u32 zero = 0;
	struct handoff *h = bpf_map_lookup_elem(&handoffs, &zero);
	if (!h)
		return;
	/* The addresses as two words each, read in place (8-byte aligned in struct packet): copies
	 * would take stack the deepest call chain has no room for. */
	const __u64 *s = (const __u64 *)p->src, *d = (const __u64 *)p->dst;
	__u64 ports = handoff_ports(p);
	/* Emptied first, so a reader between these stores finds no check of these fields. */
	*(volatile __u64 *)&h->check = 0;
	__builtin_memcpy(h->src, s, 16);
	__builtin_memcpy(h->dst, d, 16);
	h->ports = ports;
	h->ident = p->ident;
	*(volatile __u64 *)&h->check =
		(__u64)epoch | (__u64)(allowed & 1) << 32 | HANDOFF_MARK | handoff_hash(s, d, ports, p->ident);
}

/* to_pod: the verdict handed over for exactly this packet in this epoch (0 or 1), or -1. */
static __always_inline int handoff_take(const struct packet *p, __u32 epoch)
{
	__u32 zero = 0;
	struct handoff *h = bpf_map_lookup_elem(&handoffs, &zero);
	if (!h)
		return -1;
	__u64 check = *(volatile __u64 *)&h->check;
	if (!check)
		return -1;
	/* Emptied whether it matches or not: a to_pod between a give and its take runs for another
	 * packet, which means the packet it was given for went elsewhere or comes later (dropped,
	 * queued, redirected); that hand-over is lost either way, and a slot lives no longer than the
	 * next to_pod on its CPU. */
	*(volatile __u64 *)&h->check = 0;
	const __u64 *s = (const __u64 *)p->src, *d = (const __u64 *)p->dst;
	const __u64 *hs = (const __u64 *)h->src, *hd = (const __u64 *)h->dst;
	__u64 ports = handoff_ports(p);
	if ((hs[0] ^ s[0]) | (hs[1] ^ s[1]) | (hd[0] ^ d[0]) | (hd[1] ^ d[1]) | (h->ports ^ ports) |
	    (h->ident ^ p->ident) | ((check ^ epoch) & 0xffffffffULL))
		return -1;
	if ((check & (HANDOFF_MARK | HANDOFF_HASH_BITS)) != (HANDOFF_MARK | handoff_hash(s, d, ports, p->ident)))
		return -1;
	return (check >> 32) & 1;
}

/* What deliver_directly returns when it does not deliver (it returns a tc action when it does). */
#define NOT_DELIVERED -1
#define HOST_TRANSLATES -2 /* the host's conntrack translates the connection: never deliver it */

/*
 * from_pod, a packet both of whose sides are current and allowed: delivered into the receiver's
 * namespace when `peers` holds where the host forwarded to it in this epoch (struct peer) and the
 * host does not translate the connection (host-ct.h, asked unless `bypassed`: asked since the
 * connection last passed the host), framed as the host would have framed it. Only TCP and UDP:
 * the host's conntrack answers for no other protocol. A global function: its key, frame bytes and the
 * conntrack query on its own stack, off the hooks' frame.
 */
__noinline int deliver_directly(struct __sk_buff *skb, const struct packet *p, __u32 epoch, __u32 bypassed)
{
	if (!skb || !p)
		return NOT_DELIVERED;
	if (!host_answers_for(p->proto))
		return NOT_DELIVERED;
	struct peer_key k = { .family = p->family };
	__builtin_memcpy(k.addr, p->dst, 16);
	struct peer *peer = bpf_map_lookup_elem(&peers, &k);
	if (!peer || peer->epoch != epoch)
		return NOT_DELIVERED;
	if (!bypassed) {
		int host = host_bypass(skb, p);
		if (host <= 0)
			return host == 0 ? HOST_TRANSLATES : NOT_DELIVERED;
	}
	__u8 macs[12];
	__builtin_memcpy(macs, peer->dst_mac, 6);
	__builtin_memcpy(macs + 6, peer->src_mac, 6);
	if (bpf_skb_store_bytes(skb, 0, macs, 12, 0) < 0)
		return NOT_DELIVERED;
	return bpf_redirect_peer(peer->ifindex, 0);
}

/*
 * to_pod, a packet from a pod of this node that the host forwarded (a taken hand-over): where the
 * host sends the destination's packets — this interface, this frame's MAC addresses — noted in
 * `peers` for this epoch, written only when it differs from what is there. Learned from the host's
 * own forwarding rather than written by user space: the host's routes and neighbours are what a
 * directly delivered packet must agree with, and a frame the host built says exactly that.
 */
__noinline int learn_peer(struct __sk_buff *skb, __u32 family, __u64 d0, __u64 d1, __u32 epoch)
{
	if (!skb)
		return 0;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + 12 > data_end)
		return 0;
	struct peer_key k = { .family = family };
	__builtin_memcpy(k.addr, &d0, 8);
	__builtin_memcpy(k.addr + 8, &d1, 8);
	__u32 ifindex = skb->ifindex;
	struct peer learned = { .ifindex = ifindex, .epoch = epoch };
	__builtin_memcpy(learned.dst_mac, data, 6);
	__builtin_memcpy(learned.src_mac, data + 6, 6);
	struct peer *known = bpf_map_lookup_elem(&peers, &k);
	if (known && known->epoch == epoch && known->ifindex == ifindex) {
		/* The two MAC addresses as one 8-byte and one 4-byte word (struct peer keeps them adjacent). */
		__u64 was0, now0;
		__u32 was1, now1;
		__builtin_memcpy(&was0, known->dst_mac, 8);
		__builtin_memcpy(&was1, known->src_mac + 2, 4);
		__builtin_memcpy(&now0, learned.dst_mac, 8);
		__builtin_memcpy(&now1, learned.src_mac + 2, 4);
		if (was0 == now0 && was1 == now1)
			return 0;
	}
	bpf_map_update_elem(&peers, &k, &learned, BPF_ANY);
	return 1;
}

#endif /* PALISADE_HANDOFF_H */
