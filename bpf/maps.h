/*
 * The program's maps: the policy maps the renderer writes (palisade.h's layout), the connection
 * table, fragments, and the per-CPU verdict cache and hand-over slot. Part of palisade.bpf.c,
 * included after palisade.h; not a header of its own.
 */
#ifndef PALISADE_MAPS_H
#define PALISADE_MAPS_H

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

/* A map whose least recently used entry makes room for a new one (connections, fragments, peers). */
#define LRU_MAP(name, k, v, n)                                                                     \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);                                               \
		__uint(max_entries, n);                                                            \
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

LRU_MAP(conntrack, struct ct_key, struct ct_value, 65536);
LRU_MAP(frags, struct frag_key, struct frag_value, 4096);

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

/* Where the host forwards to local pods (struct peer), as learned: nothing deletes an entry, so the
 * least recently used (a pod gone long ago) makes room when the node has had more addresses. */
LRU_MAP(peers, struct peer_key, struct peer, 1 << 12);

/*
 * New connections' verdicts for the agent, counted (flow-events.h): two maps, the programs count
 * into the one flow_active names while the agent drains the other (bpf_map_lookup_and_delete_batch),
 * so a drain never races an update. Entries are made as used (NO_PREALLOC): 32,768 kinds of
 * connection between two drains, ~4 MiB at most each.
 */
HASH_MAP(flow_counts0, struct flow_key, struct flow_count, 1 << 15);
HASH_MAP(flow_counts1, struct flow_key, struct flow_count, 1 << 15);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} flow_active SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flow_budget);
} flow_budget SEC(".maps");

#endif /* PALISADE_MAPS_H */
