/*
 * The flows benchmark's feed: new connections through a pinned eBPF program at a given rate,
 * each a TCP SYN of a 5-tuple not seen before, by BPF_PROG_TEST_RUN — the program's whole path
 * for a new connection (lookup, judgement, connection table, the flow report with its per-CPU
 * budget and sampling) without a network in front of it. JavaScript's test runs (koffi, a frame
 * allocated per packet) reached 15,000–36,000 a second here; the figure asks for 100,000.
 *
 *   flow-feed PROG RATE SECONDS MIX CLIENTS
 *     PROG     pinned program (to_pod of the node whose pod is 10.0.0.1)
 *     MIX      steady: each client 10.1.x.y (CLIENTS of them) to port 1000, then all to 1001, …
 *              scan:   every connection to a port of its own (1000 + n mod 60,000)
 *              sweep:  every connection from an address of its own outside the cluster
 *                      (172.16.0.0/12, the n-th address) to port 1000
 *   prints "<connections> <seconds> <allowed>"
 *
 * It runs on the CPU it starts on (sched_setaffinity): the programs' budget is per CPU.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: flow-feed PROG RATE SECONDS steady|scan|sweep CLIENTS\n");
		return 2;
	}
	int fd = bpf_obj_get(argv[1]);
	if (fd < 0) {
		perror("bpf_obj_get");
		return 1;
	}
	double rate = atof(argv[2]), seconds = atof(argv[3]);
	int scan = strcmp(argv[4], "scan") == 0;
	int sweep = strcmp(argv[4], "sweep") == 0;
	unsigned clients = (unsigned)atoi(argv[5]);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	sched_setaffinity(0, sizeof(set), &set);

	/* Ethernet, IPv4 (10.1.x.y -> 10.0.0.1), TCP SYN: the frame frames.ts builds. */
	unsigned char frame[54];
	memset(frame, 0, sizeof(frame));
	memset(frame, 0x02, 12);
	frame[12] = 0x08;
	frame[14] = 0x45;
	frame[17] = 40;
	frame[22] = 64;
	frame[23] = 6;
	frame[26] = 10, frame[27] = 1;
	frame[30] = 10, frame[33] = 1;
	frame[46] = 5 << 4;
	frame[47] = 0x02;

	unsigned long made = 0, allowed = 0;
	double start = now();
	for (;;) {
		double elapsed = now() - start;
		if (elapsed >= seconds)
			break;
		/* As many as are due by now (at most a millisecond's worth at once), then wait. */
		unsigned long due = (unsigned long)(elapsed * rate);
		if (made >= due) {
			struct timespec nap = { 0, 100000 };
			nanosleep(&nap, NULL);
			continue;
		}
		for (; made < due; made++) {
			unsigned client = made % clients;
			unsigned port = scan ? 1000 + made % 60000 : 1000 + (made / clients) % 2;
			unsigned source = 1024 + (made / clients) % 64000;
			if (sweep) {
				frame[26] = 172, frame[27] = 16 + ((made >> 16) & 0xf);
				frame[28] = (made >> 8) & 0xff, frame[29] = made & 0xff;
			} else {
				frame[28] = client / 250;
				frame[29] = client % 250 + 1;
			}
			frame[34] = source >> 8, frame[35] = source & 0xff;
			frame[36] = port >> 8, frame[37] = port & 0xff;
			LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame),
				    .repeat = 1);
			if (bpf_prog_test_run_opts(fd, &opts) != 0) {
				perror("bpf_prog_test_run_opts");
				return 1;
			}
			if (opts.retval == 0)
				allowed++;
		}
	}
	printf("%lu %.3f %lu\n", made, now() - start, allowed);
	return 0;
}
