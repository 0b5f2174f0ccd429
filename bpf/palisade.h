/*
 * The eBPF datapath's maps: the in-process classifier's layout (src/classifier) in BPF map types.
 * Shared by the program (palisade.bpf.c) and mirrored, field by field, by src/ebpf/layout.ts;
 * the loader compares every map's key and value size with that file before it writes anything.
 *
 * Two kinds of state:
 * - Tables, immutable once written: a table id is never reused while the maps hold it, so new
 *   tables are written beside the old ones and old ones deleted after nothing can read them.
 *   A table is the classifier's DirectionTable (or tier table): a header with the L3 and
 *   any-port-of-protocol entries, port entries, port-range and CIDR tries (each stored prefix
 *   carries the union of the bitmaps of every prefix of its map containing it, so one
 *   longest-prefix lookup gives what the classifier collects along the trie path), group entries,
 *   the bitmap words beyond the first, and the actions of tier slots.
 * - Address records, versioned: each record exists once per side (0, 1); the program reads the
 *   side `epoch & 1` of the epoch in `gen`. An update writes the side no packet reads, switches
 *   the epoch (one array element), and only after a grace period brings the other side level.
 *
 * A bitmap is a list of 64-bit words (one bit per rule slot); an entry carries its summary (bit
 * k set when any of words [k*stride, (k+1)*stride) is non-zero) and its first ENTRY_WORDS
 * non-zero words with their numbers, so the value a lookup has already read holds the words it
 * needs: a rule's port or peer is set in few words, whatever the table's width. Only a bitmap
 * with more non-zero words keeps the rest in `bits` (by its number in the table). A lookup ANDs
 * the summaries first and reads only the words both sides mark: 1,000 policies on an endpoint
 * cost what one does.
 */
#ifndef PALISADE_H
#define PALISADE_H

#include <linux/types.h>

#define PALISADE_LAYOUT_VERSION 1

/* Record sides: the live side is epoch & 1. */
#define SIDES 2

/* Address families as keys hold them. */
#define FAMILY_V4 4
#define FAMILY_V6 6

/* Protocol indexes (the classifier's PROTOCOL_INDEX); anything else has only the L3 entry. */
#define PROTO_TCP 0
#define PROTO_UDP 1
#define PROTO_SCTP 2
#define PROTO_OTHER 3

/* Table slots in a record. */
#define T_INGRESS 0
#define T_EGRESS 1
#define T_ADMIN_INGRESS 2
#define T_ADMIN_EGRESS 3
#define T_BASELINE_INGRESS 4
#define T_BASELINE_EGRESS 5
#define TABLE_SLOTS 6

/* record.flags */
#define REC_ENDPOINT 1 /* a local endpoint: its tables are enforced on its interface */
/*
 * While several nodes move to a new policy (two phases: every node restricted before any relaxes),
 * a local endpoint's side must pass both its tables and `restrict_tables` (the previous policy's),
 * and an address whose groups differ between the two holds the previous ones too, judged with them.
 */
#define REC_RESTRICT 2
#define REC_RESTRICT_GROUPS 4
/* Chunks of the previous groups (all in chunks) are keyed with this bit in the chunk number. */
#define RESTRICT_CHUNK 0x80000000

/* Groups held in the record itself; the rest in chunks of GROUP_CHUNK in `record_groups`. */
#define INLINE_GROUPS 16 /* a power of two: indexes are masked */
#define GROUP_CHUNK 32
/* The most groups one address may be in among this node's tables (the renderer refuses more). */
#define MAX_GROUP_CHUNKS 64

/* table.flags: which lookups a table needs (the others are skipped). */
#define HAS_PORTS 1
#define HAS_RANGES 2
#define HAS_CIDRS 4
#define HAS_GROUPS 8
#define HAS_SUPP 16
#define HAS_EXCEPT 32
#define TIER_TABLE 64

/* Tier actions (absent from `actions`: allow). */
#define ACTION_ALLOW 0
#define ACTION_DENY 1
#define ACTION_PASS 2

/* cidr_key.kind */
#define CIDR_PRIM 0
#define CIDR_SUPP 1
#define CIDR_EXCEPT 2

/* config.flags */
#define CFG_ALLOW_NODE_LOCAL 1 /* NetworkPolicy always allows a pod's own node (the default) */
#define CFG_RECHECK_FLOWS 2    /* tracked flows are judged again after an update */
#define CFG_NO_VERDICT_CACHE 4 /* judge every first packet by the tables (benchmarks: the judging cost) */
#define CFG_NO_HANDOFF 8       /* from_pod hands no verdict to to_pod (benchmarks: each hook on its own) */
#define CFG_NO_DIRECT 16       /* nothing is delivered directly (struct peer): every packet takes the host's path */
#define CFG_FLOW_EVENTS 32     /* new connections' verdicts are counted in flow_counts0/1 (struct flow_key) */

/* Flow directions, from the local pod's point of view. */
#define DIR_EGRESS 0  /* from the pod: tc ingress of its host-side veth */
#define DIR_INGRESS 1 /* to the pod: tc egress of its host-side veth */

struct addr_key {
	__u32 side;
	__u32 family;
	__u8 addr[16]; /* network order; IPv4 in the first 4 bytes, the rest zero */
};

struct record {
	__u32 flags;
	__u32 node;            /* a local endpoint's node number */
	__u32 node_address_of; /* the node whose address this is, 0 none */
	__u32 group_count;
	__u32 tables[TABLE_SLOTS]; /* table ids, 0 none */
	__u32 groups[INLINE_GROUPS]; /* the first group ids, ascending */
	__u32 restrict_tables[TABLE_SLOTS];
	__u32 restrict_group_count;
};

struct group_chunk_key {
	struct addr_key addr;
	__u32 chunk;
};

struct group_chunk {
	__u32 groups[GROUP_CHUNK];
};

/* Non-zero words an entry holds itself (a 56-byte value); a bitmap with more keeps the rest in `bits`. */
#define ENTRY_WORDS 4

struct entry {
	__u64 summary;
	__u64 w[ENTRY_WORDS];  /* the bitmap's first non-zero words, ascending; unused: zero */
	__u16 at[ENTRY_WORDS]; /* their word numbers (unused: zero) */
	__u32 count;           /* non-zero words in the bitmap */
	__u32 index; /* the bitmap's number in its table: words after at[ENTRY_WORDS - 1] are bits[table, index, word] */
};

struct table {
	__u32 words;  /* 64-bit words per bitmap */
	__u32 stride; /* words per summary bit */
	__u32 flags;
	__u32 slots;
	struct entry l3;     /* every protocol, every port (a rule without ports) */
	struct entry any[3]; /* every port of TCP, UDP, SCTP */
};

struct port_key {
	__u32 table;
	__u16 port;
	__u8 proto;
	__u8 pad;
};

/* LPM: prefixlen = 40 + port prefix; port big-endian. */
struct range_key {
	__u32 prefixlen;
	__u32 table;
	__u8 proto;
	__u8 port[2];
	__u8 pad;
};

/* LPM: prefixlen = 48 + address prefix. */
struct cidr_key {
	__u32 prefixlen;
	__u32 table;
	__u8 kind;
	__u8 family;
	__u8 addr[16];
	__u8 pad[2];
};

struct group_key {
	__u32 table;
	__u32 group;
};

struct bits_key {
	__u32 table;
	__u32 index;
	__u32 word;
};

struct action_key {
	__u32 table;
	__u32 slot;
};

struct gen {
	__u32 epoch;
};

struct config {
	__u32 flags;
};

/*
 * New connections of one kind, as counted (flow-events.h): the first packet's addresses, its
 * destination port and protocol, the side judged (DIR_*) and the verdict. The source port is left
 * out, so a client's connections to one service are one entry however many it opens.
 */
struct flow_key {
	__u8 src[16];
	__u8 dst[16];
	__u16 dport;
	__u8 family;
	__u8 proto;
	__u8 dir;
	__u8 allowed;
	__u16 pad;
};

/*
 * How many (sampled ones weighted: `sampled` set), and bpf_ktime_get_ns() of the first and the
 * last.
 */
struct flow_count {
	__u64 count;
	__u64 first;
	__u64 last;
	__u32 sampled;
	__u32 pad;
};

/*
 * Per CPU: the current window's start and the new entries made in it, the connections that
 * could not be counted (the map full), and the entries ever made in each of the two count maps
 * (wrapping): the reader drains a map only when entries were made in it since its last drain —
 * a drain walks every bucket of the map, full or empty.
 */
struct flow_budget {
	__u64 window;
	__u32 sent;
	__u32 lost;
	__u32 made[2];
};

/*
 * A connection on this node: one entry whichever of its ends are local pods, found with one
 * lookup by every packet of it in either direction on either end's hooks. Its two ends are in a
 * canonical order (the lower address, then port, first: `a`), so the key does not depend on the
 * packet's direction; each end that is a local pod judges its own side in `end[]`. A connection
 * between two pods of this node is inserted once, by its first packet at the opener's hook; the
 * acceptor's hook finds the entry and writes its side in place (an LRU insert costs ~300–450 ns,
 * about as much as judging the packet: docs/BENCHMARKS.md).
 */
struct ct_key {
	__u8 proto; /* IP protocol number */
	__u8 family;
	__u16 port_a;
	__u16 port_b;
	__u16 pad;
	__u8 a[16];
	__u8 b[16];
};

/*
 * One end's side of a connection: the epoch it was last judged in (its local record was live then
 * too), its verdict, and the direction of the first packet it judged (DIR_EGRESS: this end opened
 * the connection), by which it is judged again. Written and read whole (one 8-byte store, one
 * 8-byte load), so a packet on another CPU reads an old side or a new one, never a mix.
 */
struct ct_side {
	__u32 epoch;
	__u8 allowed;
	__u8 dir;
	__u8 judged; /* 0: this end has not judged the connection (not local, or not reached yet) */
	__u8 host;   /* HOST_*: what the host's conntrack said of the packets this end sends (host-ct.h) */
};

/*
 * ct_side.host. Zero whenever the side is written whole (judged again), and both sides' zeroed
 * whenever a packet of the connection passes the host (palisade.bpf.c): the host may track it
 * again, so its conntrack is asked again before the next direct delivery.
 */
#define HOST_BYPASSED 1   /* asked (by either end: both are noted): no translation, the host's entry expired */
#define HOST_TRANSLATED 2 /* asked: the host translates the connection: never delivered directly */

struct ct_value {
	struct ct_side end[2]; /* end[0]: a's side, end[1]: b's */
};

/*
 * A verdict judged in an epoch, by what it was judged on: the local and remote address, the
 * direction, protocol index and destination port (struct query) — within an epoch the live
 * records, the tables and so every such verdict are fixed, so a second connection between the
 * same pods on the same port is decided by one slot instead of the records and tables. One slot
 * per hash in a per-CPU array (direct-mapped: a collision replaces the slot; no LRU insert, no
 * lock). `check` is written last, in one 8-byte store: the epoch, the verdict and hash bits of
 * the key it belongs to, so a slot rewritten halfway (a program interrupting a test run on the
 * same CPU) cannot lend its verdict to another key.
 */
#define VERDICT_SLOTS 8192 /* a power of two */

struct verdict_slot {
	__u8 local[16];
	__u8 remote[16];
	__u64 query; /* port | protocol index << 16 | direction << 24 | family << 32 | config.flags << 40 */
	__u64 check; /* epoch | allowed << 32 | 1 << 33 | the hash's top 30 bits; 0: empty */
	__u64 pad[2];
};

/*
 * The receiver's verdict on one packet between two pods of this node, handed by the sender's
 * from_pod to the receiver's to_pod (handoff.h). For a veth pair the receiver's tc egress runs
 * on the same CPU right after the sender's tc ingress, in the same softirq, so a per-CPU slot
 * written by the one and compared in full by the other — the packet's addresses, ports,
 * protocol, its next 8 L4 header bytes (TCP: sequence and acknowledgement), the epoch — carries
 * the verdict without the receiver's connection lookup or judgement. Anything that does not
 * match exactly (a rewritten packet, another packet between, an update between) finds no
 * verdict there and takes the ordinary path. `check` is written last, in one 8-byte store: the
 * epoch, the verdict, and hash bits of the rest, so a slot rewritten halfway (a test run
 * interrupted on its CPU) lends nothing; to_pod empties it when it takes it (one packet, one use).
 */
struct handoff {
	__u8 src[16];
	__u8 dst[16];
	__u64 ports; /* sport | dport << 16 | protocol << 32 | family << 40 */
	__u64 ident; /* the L4 header's bytes 4..12 */
	__u64 check; /* epoch | allowed << 32 | 1 << 33 | hash bits; 0: empty */
	__u64 pad;
};

/*
 * Where the host forwards packets to a local pod's address (`peers`), as the program learned it
 * from a frame the host itself sent to the pod (to_pod, on a taken hand-over: handoff.h): the
 * host-side veth and the frame's two MAC addresses, in the epoch it was learned in. A packet
 * between two pods of this node whose both sides are current and allowed goes from the sender's
 * from_pod straight into the receiver's namespace (bpf_redirect_peer), exactly as the host would
 * have framed it, when the entry is of the current epoch — every update moves the epoch, and
 * each connection's next packet takes the host's path, so an entry is learned again from the
 * host's current forwarding — and when the host's conntrack does not translate the connection
 * (host-ct.h). One hook instead of two, and none of the host's routing, netfilter and queueing.
 */
struct peer_key {
	__u32 family;
	__u8 addr[16];
};

struct peer {
	__u32 ifindex; /* the pod's host-side veth, in the node's namespace */
	__u8 dst_mac[6]; /* the frame's destination: the pod's own interface */
	__u8 src_mac[6]; /* its source: the host-side veth (the pod's gateway) */
	__u32 epoch;     /* learned in this epoch; used in no other */
};

/* A first fragment's ports, for the fragments after it (which carry none). */
struct frag_key {
	__u8 dir;
	__u8 proto;
	__u8 family;
	__u8 pad;
	__u32 id;
	__u8 src[16];
	__u8 dst[16];
};

struct frag_value {
	__u16 sport;
	__u16 dport;
	__u32 pad;
};

/* What the renderer names a group by (a hash of its reference), for reading maps back. */
struct group_name {
	__u8 hash[16];
};

#endif
