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
 *
 * This file has the two hooks; the rest is in the files it includes, in this order: maps.h (the
 * maps), match.h (matching one table), judge.h (a side's verdict, with verdict-cache.h), packet.h
 * (parsing), handoff.h, conntrack.h (the connection table's entries).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "palisade.h"
#include "maps.h"
#include "match.h"
#include "judge.h"
#include "packet.h"
#include "host-ct.h"
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

#include "conntrack.h"
#include "flow-events.h"

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
		if (handed > 0 && host_answers_for(p.proto)) {
			/* A frame the host forwarded from a pod of this node: where it sends to this one. */
			struct config *c = bpf_map_lookup_elem(&config, &zero);
			if (c && !(c->flags & CFG_NO_DIRECT)) {
				const __u64 *d = (const __u64 *)p.dst;
				learn_peer(skb, p.family, d[0], d[1], epoch);
			}
		}
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
			theirs = read_side(&v->end[(mine & 1) ^ 1]);
			if (own.judged) {
				if (own.epoch == epoch) {
					/* Sent to a pod of this node whose side is current: delivered into its
					 * namespace, or handed over to its to_pod. */
					if (egress && p.direct && own.allowed && theirs.judged && theirs.epoch == epoch) {
						struct config *c = bpf_map_lookup_elem(&config, &zero);
						if (c && !(c->flags & CFG_NO_HANDOFF)) {
							if (theirs.allowed && !(c->flags & CFG_NO_DIRECT) &&
							    !(own.host & HOST_TRANSLATED)) {
								__u32 bypassed = own.host & HOST_BYPASSED;
								int delivered = deliver_directly(skb, &p, epoch, bypassed);
								if (delivered >= 0) {
									if (!bypassed)
										mark_connection(v, HOST_BYPASSED);
									return delivered;
								}
								if (delivered == HOST_TRANSLATES)
									mark_host(&v->end[mine & 1], HOST_TRANSLATED);
							}
							handoff_give(&p, epoch, theirs.allowed);
						}
					}
					/* This packet takes the host's path (from_pod), or came by it unmatched by a
					 * hand-over (to_pod: the host forwarded this tuple itself, maybe translated —
					 * a Service's connection reusing a delivered one's ports): the host may track
					 * the connection again, so it is asked again before the next direct delivery
					 * either way (host-ct.h). */
					if ((own.host | theirs.host) & HOST_BYPASSED)
						mark_connection(v, 0);
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
	if ((cfg & CFG_FLOW_EVENTS) && !rejudge && !p.nonfirst)
		report_flow(&p, dir, allowed);
	if (!p.tracked)
		return allowed ? TC_ACT_OK : TC_ACT_SHOT;
	struct other_side other = { .allowed = -1 };
	if (egress && allowed && p.direct && !(cfg & CFG_NO_HANDOFF)) {
		if (theirs.judged && theirs.epoch == epoch) {
			handoff_give(&p, epoch, theirs.allowed);
		} else {
			other = receiver_side(j, &p, theirs, cfg);
			if (other.allowed >= 0) {
				handoff_give(&p, epoch, other.allowed);
				if ((cfg & CFG_FLOW_EVENTS) && !theirs.judged)
					report_flow(&p, DIR_INGRESS, other.allowed);
			}
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
