// SPDX-License-Identifier: GPL-2.0
/*
 * Attaches the datapath's programs with tcx links (Linux 6.6+) where the kernel has them: a link
 * runs its program straight from the device's ingress or egress hook, without the clsact qdisc and
 * the cls_bpf classifier around it — per packet about what an empty program costs on tc, a few
 * percent of a short connection's CPU (docs/BENCHMARKS.md). Neither this machine's bpftool nor tc
 * creates tcx links, hence this small tool, compiled on first use like the program itself
 * (src/ebpf/toolchain.ts). The link is pinned (it lives while its pin does, and goes with the
 * device); attaching again where a live link is pinned swaps its program in place (one atomic
 * replacement, no moment without a program).
 *
 *   tcx-link attach NETNS|- DEVICE PROGRAM_PIN ingress|egress LINK_PIN
 *   tcx-link query NETNS|- DEVICE ingress|egress     prints the names of the programs attached
 *
 * NETNS is a network namespace's path (/run/netns/NAME); "-" is the caller's. Exit 0: done;
 * 3: the kernel has no tcx links (the caller attaches with tc instead); 1: anything else, with
 * one line on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Not in the uapi headers of Debian 12's libbpf-dev (Linux 6.1); the values are ABI. */
#define TCX_INGRESS 46
#define TCX_EGRESS 47
#define LINK_TYPE_TCX 11

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int fail(const char *what)
{
	fprintf(stderr, "tcx-link: %s: %s\n", what, strerror(errno));
	return 1;
}

static int obj_get(const char *path)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.pathname = (unsigned long)path;
	return sys_bpf(BPF_OBJ_GET, &a);
}

/* The ifindex a pinned link is attached to, 0 when it is defunct (its device is gone) or not tcx. */
static unsigned link_ifindex(int link)
{
	/* struct bpf_link_info's tcx member (ifindex, attach_type) follows type, id and prog_id. */
	__u32 info[16];
	memset(info, 0, sizeof(info));
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = link;
	a.info.info_len = sizeof(info);
	a.info.info = (unsigned long)info;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0 || info[0] != LINK_TYPE_TCX)
		return 0;
	return info[4];
}

static int attach(unsigned ifindex, const char *program_pin, int type, const char *link_pin)
{
	int program = obj_get(program_pin);
	if (program < 0)
		return fail(program_pin);
	int link = obj_get(link_pin);
	if (link >= 0) {
		if (link_ifindex(link) == ifindex) {
			union bpf_attr a;
			memset(&a, 0, sizeof(a));
			a.link_update.link_fd = link;
			a.link_update.new_prog_fd = program;
			if (sys_bpf(BPF_LINK_UPDATE, &a) < 0)
				return fail("replacing the program of the pinned link");
			return 0;
		}
		/* A link left from an earlier device of that name: it runs nothing any more. */
		close(link);
		unlink(link_pin);
	}
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = program;
	a.link_create.target_ifindex = ifindex;
	a.link_create.attach_type = type;
	link = sys_bpf(BPF_LINK_CREATE, &a);
	if (link < 0)
		return errno == EINVAL ? 3 : fail("creating the tcx link");
	memset(&a, 0, sizeof(a));
	a.pathname = (unsigned long)link_pin;
	a.bpf_fd = link;
	if (sys_bpf(BPF_OBJ_PIN, &a) < 0)
		return fail(link_pin);
	return 0;
}

static int query(unsigned ifindex, int type)
{
	__u32 ids[64];
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.query.target_fd = ifindex;
	a.query.attach_type = type;
	a.query.prog_ids = (unsigned long)ids;
	a.query.prog_cnt = 64;
	if (sys_bpf(BPF_PROG_QUERY, &a) < 0)
		return errno == EINVAL ? 3 : fail("querying the tcx hook");
	for (__u32 i = 0; i < a.query.prog_cnt && i < 64; i++) {
		union bpf_attr g;
		memset(&g, 0, sizeof(g));
		g.prog_id = ids[i];
		int fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &g);
		if (fd < 0)
			continue;
		struct bpf_prog_info info;
		memset(&info, 0, sizeof(info));
		memset(&g, 0, sizeof(g));
		g.info.bpf_fd = fd;
		g.info.info_len = sizeof(info);
		g.info.info = (unsigned long)&info;
		if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &g) == 0)
			printf("%s\n", info.name);
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int attaching = argc == 7 && strcmp(argv[1], "attach") == 0;
	int querying = argc == 5 && strcmp(argv[1], "query") == 0;
	if (!attaching && !querying) {
		fprintf(stderr, "usage: tcx-link attach NETNS|- DEVICE PROGRAM_PIN ingress|egress LINK_PIN\n"
				"       tcx-link query NETNS|- DEVICE ingress|egress\n");
		return 2;
	}
	if (strcmp(argv[2], "-") != 0) {
		int ns = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (ns < 0 || setns(ns, CLONE_NEWNET) < 0)
			return fail(argv[2]);
		close(ns);
	}
	unsigned ifindex = if_nametoindex(argv[3]);
	if (ifindex == 0)
		return fail(argv[3]);
	const char *hook = argv[attaching ? 5 : 4];
	int type = strcmp(hook, "ingress") == 0 ? TCX_INGRESS : TCX_EGRESS;
	return attaching ? attach(ifindex, argv[4], type, argv[6]) : query(ifindex, type);
}
