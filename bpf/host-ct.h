/*
 * Asking the host's conntrack about a connection before its packets bypass the host (handoff.h,
 * direct delivery). A packet delivered into its receiver's namespace skips the host's netfilter,
 * so it must be a packet the host would not have changed: a connection the host translates (a
 * Service's address and its replies, a port mapped on a pod's own address, masquerading) is never
 * delivered directly. And the host's entry for a connection delivered directly is expired at once,
 * for two reasons: it would no longer see the connection's packets, so it would hold a conntrack
 * slot until its timeout (days, for an established TCP connection); and its TCP window would go
 * stale, so a later packet of the connection that takes the host's path again (after an update,
 * each side is judged again there) would be out of window — INVALID, which kube-proxy's rules
 * drop. With no entry the host picks such a packet up mid-stream (nf_conntrack_tcp_loose, on by
 * default) as a new, liberal entry, which the next direct delivery expires again. Part of
 * palisade.bpf.c, included after struct packet; not a header of its own.
 */
#ifndef PALISADE_HOST_CT_H
#define PALISADE_HOST_CT_H

#define ENOENT_ 2
#define IPS_SRC_NAT_ (1 << 4)
#define IPS_DST_NAT_ (1 << 5)

/* The kernel's struct bpf_ct_opts (net/netfilter/nf_conntrack_bpf.c), 16 bytes since 6.1. */
struct bpf_ct_opts___palisade {
	__s32 netns_id;
	__s32 error;
	__u8 l4proto;
	__u8 dir;
	__u16 ct_zone_id;
	__u8 ct_zone_dir;
	__u8 reserved[3];
};

/* The one field read from the kernel's struct nf_conn, placed by its BTF when the program loads. */
struct nf_conn___palisade {
	unsigned long status;
} __attribute__((preserve_access_index));

/* The kfuncs, with the struct above for the kernel's (libbpf 1.1 matches a struct by its kind,
 * where a bare declaration of struct nf_conn would not match). */
extern struct nf_conn___palisade *bpf_skb_ct_lookup(struct __sk_buff *skb, struct bpf_sock_tuple *tuple,
						    __u32 tuple_size, struct bpf_ct_opts___palisade *opts,
						    __u32 opts_size) __ksym;
extern int bpf_ct_change_timeout(struct nf_conn___palisade *ct, __u32 timeout_ms) __ksym;
extern void bpf_ct_release(struct nf_conn___palisade *ct) __ksym;

/* Whether the host's conntrack can be asked about a protocol's connections (bpf_skb_ct_lookup
 * answers for TCP and UDP only): the only ones delivered directly, so the only ones learned for. */
static __always_inline int host_answers_for(__u8 proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

/* The packet's addresses and ports as the host's conntrack is asked for them, in either order. */
static __always_inline __u32 host_tuple(struct bpf_sock_tuple *t, const struct packet *p, __u32 reverse)
{
	const __u8 *src = reverse ? p->dst : p->src, *dst = reverse ? p->src : p->dst;
	__u16 sport = reverse ? p->dport : p->sport, dport = reverse ? p->sport : p->dport;
	if (p->family == FAMILY_V4) {
		__builtin_memcpy(&t->ipv4.saddr, src, 4);
		__builtin_memcpy(&t->ipv4.daddr, dst, 4);
		t->ipv4.sport = bpf_htons(sport);
		t->ipv4.dport = bpf_htons(dport);
		return sizeof(t->ipv4);
	}
	__builtin_memcpy(t->ipv6.saddr, src, 16);
	__builtin_memcpy(t->ipv6.daddr, dst, 16);
	t->ipv6.sport = bpf_htons(sport);
	t->ipv6.dport = bpf_htons(dport);
	return sizeof(t->ipv6);
}

/* The host's entry holding the packet's tuple, or its reverse, in either of its directions. */
static __always_inline struct nf_conn___palisade *host_entry(struct __sk_buff *skb, const struct packet *p,
							     __u32 reverse, __s32 *error)
{
	struct bpf_sock_tuple t = {};
	__u32 size = host_tuple(&t, p, reverse);
	struct bpf_ct_opts___palisade opts = { .netns_id = BPF_F_CURRENT_NETNS, .l4proto = p->proto };
	struct nf_conn___palisade *ct = bpf_skb_ct_lookup(skb, &t, size, &opts, sizeof(opts));
	*error = opts.error;
	return ct;
}

/*
 * 1: the host does not translate the packet's connection (no entry, or one without NAT, expired
 * now); 0: it does; -1: cannot tell (only TCP and UDP can be asked). With no entry for the
 * packet's own tuple, its reverse is asked too: an entry that holds it as its reply direction
 * translates (a Service's connection from the same port, to the backend's address and port), and
 * the host would have remapped this packet's port to keep the two apart — so it must see it.
 */
static __always_inline int host_bypass(struct __sk_buff *skb, const struct packet *p)
{
	__s32 error = 0;
	struct nf_conn___palisade *ct = host_entry(skb, p, 0, &error);
	if (!ct) {
		if (error != -ENOENT_)
			return -1;
		ct = host_entry(skb, p, 1, &error);
		if (!ct)
			return error == -ENOENT_ ? 1 : -1;
		/* Only its reverse: some entry holds this packet's reply tuple (an untranslated one
		 * would have held this tuple too), so the host must keep the two apart. */
		bpf_ct_release(ct);
		return 0;
	}
	int untranslated = !(ct->status & (IPS_SRC_NAT_ | IPS_DST_NAT_));
	if (untranslated)
		bpf_ct_change_timeout(ct, 0);
	bpf_ct_release(ct);
	return untranslated;
}

#endif /* PALISADE_HOST_CT_H */
