/*
 * The eBPF benchmark's connection-rate client and server: new TCP connections per second between
 * two pods, with nothing between the kernel and the measurement but a tight loop. The Node pod
 * agent it replaces spent ~100 µs of JavaScript per connection on a 2-core machine shared with
 * other work, so its rate swung 4,000–11,700/s between rounds and hid what the datapath costs;
 * here the kernel's own path (the connection's packets through the veths and their programs) is
 * most of each connection, so a datapath's cost shows at least as much as it would in a real
 * client's rate, never less.
 *
 *   ebpf-connrate server PORT           accept; read; echo; close — one connection at a time
 *   ebpf-connrate client IP PORT N      N connections in turn: connect, send, read the echo, close;
 *                                       prints "<connections> <seconds> <cpu ns>": wall time
 *                                       (CLOCK_MONOTONIC) and the client's own time on a CPU
 *                                       (/proc/self/schedstat, ns: its syscalls and the softirq
 *                                       work they run, which for veth traffic is the packets'
 *                                       path through the node and its programs)
 *
 * The server exits when its parent (the benchmark) goes: prctl(PR_SET_PDEATHSIG).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char message[] = "palisade-probe";

static int serve(int port)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int listener = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(listener, 1024) < 0) {
		perror("ebpf-connrate server");
		return 1;
	}
	/* Ready: the benchmark waits for this line before it starts a client. */
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		int s = accept(listener, NULL, NULL);
		if (s < 0) {
			if (errno == EINTR)
				continue;
			perror("accept");
			return 1;
		}
		char buffer[64];
		ssize_t n = read(s, buffer, sizeof(buffer));
		if (n > 0)
			(void)!write(s, buffer, n);
		close(s);
	}
}

/* This thread's time on a CPU in ns (the first field of /proc/self/schedstat), 0 if unreadable. */
static unsigned long long cpu_ns(void)
{
	unsigned long long ns = 0;
	FILE *f = fopen("/proc/self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static int client(const char *ip, int port, long count)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) {
		fprintf(stderr, "ebpf-connrate: not an IPv4 address: %s\n", ip);
		return 2;
	}
	struct timespec start, end;
	unsigned long long cpu_start = cpu_ns();
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; i < count; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
			fprintf(stderr, "ebpf-connrate: connection %ld failed: %s\n", i, strerror(errno));
			return 1;
		}
		char buffer[64];
		if (write(s, message, sizeof(message) - 1) != sizeof(message) - 1 || read(s, buffer, sizeof(buffer)) <= 0) {
			fprintf(stderr, "ebpf-connrate: connection %ld got no echo\n", i);
			return 1;
		}
		close(s);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("%ld %.6f %llu\n", count, (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9,
	       cpu_ns() - cpu_start);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "server") == 0)
		return serve(atoi(argv[2]));
	if (argc == 5 && strcmp(argv[1], "client") == 0)
		return client(argv[2], atoi(argv[3]), atol(argv[4]));
	fprintf(stderr, "usage: ebpf-connrate server PORT | client IP PORT N\n");
	return 2;
}
