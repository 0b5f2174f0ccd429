/*
 * Reading a packet's addresses, protocol and ports (IPv4, IPv6 with its extension headers,
 * fragments) into struct packet. Part of palisade.bpf.c, which includes it after the helpers'
 * headers; not a header of its own.
 */
#ifndef PALISADE_PACKET_H
#define PALISADE_PACKET_H

struct packet {
	__u8 family;
	__u8 proto; /* IP protocol number */
	__u8 tracked; /* has a flow key: TCP, UDP, SCTP, ICMP echo */
	__u8 nonfirst; /* a fragment after the first: ports come from the first */
	__u8 first_fragment;
	__u8 pass; /* neighbour discovery and other traffic no policy speaks of */
	__u8 direct; /* read in place, with `ident`: a packet a hand-over (handoff.h) may carry */
	__u16 sport;
	__u16 dport;
	__u32 frag_id;
	__u8 src[16] __attribute__((aligned(8))); /* read as two words each (handoff.h) */
	__u8 dst[16];
	__u64 ident; /* the L4 header's bytes 4..12 (TCP: sequence and acknowledgement numbers) */
};

#define IPPROTO_ICMPV6_ 58
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_AUTH 51
#define NEXTHDR_DEST 60
#define MAX_EXT_HEADERS 6

static __always_inline int load_ports(struct __sk_buff *skb, __u32 off, struct packet *p)
{
	if (p->nonfirst)
		return 0;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP || p->proto == IPPROTO_SCTP) {
		__u16 ports[2];
		if (bpf_skb_load_bytes(skb, off, ports, 4) < 0)
			return -1;
		p->sport = bpf_ntohs(ports[0]);
		p->dport = bpf_ntohs(ports[1]);
		p->tracked = 1;
		return 0;
	}
	if (p->proto == IPPROTO_ICMP || p->proto == IPPROTO_ICMPV6_) {
		__u8 head[8];
		if (bpf_skb_load_bytes(skb, off, head, 8) < 0)
			return -1;
		__u8 type = head[0];
		if (p->proto == IPPROTO_ICMPV6_ && type >= 133 && type <= 137) {
			p->pass = 1; /* router and neighbour discovery */
			return 0;
		}
		int echo = p->proto == IPPROTO_ICMP ? (type == 8 || type == 0) : (type == 128 || type == 129);
		if (echo) {
			/* An echo and its reply are one flow: the identifier stands for both ports. */
			p->sport = p->dport = ((__u16)head[4] << 8) | head[5];
			p->tracked = 1;
		}
	}
	return 0;
}

/*
 * 0: parsed; 1: not IP (passes); -1: malformed IP (dropped). A global function: its header copies
 * (up to 40 bytes) live on its own stack, not on the hooks', whose frame is part of the deepest
 * call chain (the hooks, judge, side, match, the loops' callbacks: 512 bytes in all); and the
 * verifier walks it once. Only what parse_direct leaves comes here.
 */
__noinline int parse(struct __sk_buff *skb, struct packet *p)
{
	if (!p)
		return -1;
	__u32 off = ETH_HLEN;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		__u8 h[20];
		if (bpf_skb_load_bytes(skb, off, h, 20) < 0)
			return -1;
		__u32 ihl = (h[0] & 0xf) * 4;
		if (ihl < 20)
			return -1;
		p->family = FAMILY_V4;
		p->proto = h[9];
		__u16 frag = ((__u16)h[6] << 8) | h[7];
		p->nonfirst = (frag & 0x1fff) != 0;
		p->first_fragment = !p->nonfirst && (frag & 0x2000);
		p->frag_id = ((__u16)h[4] << 8) | h[5];
		__builtin_memcpy(p->src, &h[12], 4);
		__builtin_memcpy(p->dst, &h[16], 4);
		return load_ports(skb, off + ihl, p);
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		__u8 h[40];
		if (bpf_skb_load_bytes(skb, off, h, 40) < 0)
			return -1;
		p->family = FAMILY_V6;
		__builtin_memcpy(p->src, &h[8], 16);
		__builtin_memcpy(p->dst, &h[24], 16);
		__u8 next = h[6];
		off += 40;
		for (int i = 0; i < MAX_EXT_HEADERS; i++) {
			__u8 ext[8];
			if (next == NEXTHDR_HOP || next == NEXTHDR_ROUTING || next == NEXTHDR_DEST) {
				if (bpf_skb_load_bytes(skb, off, ext, 2) < 0)
					return -1;
				next = ext[0];
				off += ((__u32)ext[1] + 1) * 8;
			} else if (next == NEXTHDR_AUTH) {
				if (bpf_skb_load_bytes(skb, off, ext, 2) < 0)
					return -1;
				next = ext[0];
				off += ((__u32)ext[1] + 2) * 4;
			} else if (next == NEXTHDR_FRAGMENT) {
				if (bpf_skb_load_bytes(skb, off, ext, 8) < 0)
					return -1;
				next = ext[0];
				__u16 frag = ((__u16)ext[2] << 8) | ext[3];
				p->nonfirst = (frag & 0xfff8) != 0;
				p->first_fragment = !p->nonfirst && (frag & 1);
				p->frag_id = ((__u32)ext[4] << 24) | ((__u32)ext[5] << 16) | ((__u32)ext[6] << 8) | ext[7];
				off += 8;
			} else {
				break;
			}
		}
		p->proto = next;
		return load_ports(skb, off, p);
	}
	return 1;
}

/*
 * The common case read in place: an unfragmented TCP, UDP or SCTP packet without IP options or
 * IPv6 extension headers, its headers in the packet's linear part (what a pod's stack and the
 * forwarding path hand the veth). Fills exactly what parse() would; 0 sends anything else to
 * parse(), whose copies (bpf_skb_load_bytes) cost about half of a tracked packet's run time.
 */
static __always_inline int parse_direct(struct __sk_buff *skb, struct packet *p)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u8 *h = data + ETH_HLEN;
	__u16 *ports;
	__u8 proto;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (data + ETH_HLEN + 20 + 4 > data_end)
			return 0;
		proto = h[9];
		/* No options; neither a fragment nor the first of several (MF and offset zero). */
		if (h[0] != 0x45 || (h[6] & 0x3f) || h[7])
			return 0;
		p->family = FAMILY_V4;
		p->frag_id = ((__u16)h[4] << 8) | h[5];
		__builtin_memcpy(p->src, &h[12], 4);
		__builtin_memcpy(p->dst, &h[16], 4);
		ports = (__u16 *)(h + 20);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (data + ETH_HLEN + 40 + 4 > data_end)
			return 0;
		proto = h[6];
		p->family = FAMILY_V6;
		__builtin_memcpy(p->src, &h[8], 16);
		__builtin_memcpy(p->dst, &h[24], 16);
		ports = (__u16 *)(h + 40);
	} else {
		return 0;
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_SCTP)
		return 0;
	p->proto = proto;
	p->sport = bpf_ntohs(ports[0]);
	p->dport = bpf_ntohs(ports[1]);
	p->tracked = 1;
	/* The next 8 bytes name this packet among its connection's (a hand-over is one packet's). */
	if ((void *)ports + 12 <= data_end) {
		__builtin_memcpy(&p->ident, (__u8 *)ports + 4, 8);
		p->direct = 1;
	}
	return 1;
}

#endif /* PALISADE_PACKET_H */
