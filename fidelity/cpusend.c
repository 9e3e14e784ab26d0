// SPDX-License-Identifier: GPL-2.0
/*
 * cpusend: a CPU-bound TCP sender and its sink, for the CPU scaling
 * experiment (fidelity/experiments/cpu_scaling.py).
 *
 *   cpusend sink PORT
 *	accept one connection, read until EOF
 *   cpusend send ADDR PORT SECONDS INTERVAL_MS WORK
 *	for SECONDS, mix each 16 KiB chunk WORK times, then write it; every
 *	INTERVAL_MS print "ELAPSED_S BYTES" (cumulative); at the end print
 *	"cpu USER_S SYS_S VOLUNTARY INVOLUNTARY" on stderr: the CPU time it was
 *	charged and its context switches (voluntary ones are waits for the
 *	socket, which a CPU-bound sender should not do)
 *
 * The sender's rate is bound by the CPU it gets, not by the network. Its
 * times come from CLOCK_MONOTONIC, which in a dilated node is the node's
 * perceived time, so the printed curve is the one the program perceives.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 16384

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	perror(what);
	return 1;
}

static int sink(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	static char buf[65536];
	int one = 1, ls, s;
	long long total = 0;
	ssize_t n;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		return die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1))
		return die("bind/listen");
	s = accept(ls, NULL, NULL);
	if (s < 0)
		return die("accept");
	while ((n = read(s, buf, sizeof(buf))) > 0)
		total += n;
	printf("%lld\n", total);
	return n < 0 ? die("read") : 0;
}

static void report_usage(int s)
{
	struct tcp_info ti = { 0 };
	socklen_t len = sizeof(ti);
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return;
	getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &len);
	fprintf(stderr, "cpu %ld.%06ld %ld.%06ld %ld %ld %u %u\n",
		(long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec,
		ru.ru_nvcsw, ru.ru_nivcsw, ti.tcpi_total_retrans, ti.tcpi_snd_cwnd);
}

/* xorshift over the chunk: cheap per byte, impossible to skip */
static void mix(uint64_t *w, int rounds)
{
	uint64_t x = w[CHUNK / 8 - 1] | 1;
	int r, i;

	for (r = 0; r < rounds; r++)
		for (i = 0; i < CHUNK / 8; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			w[i] ^= x;
		}
}

static int sender(const char *addr, int port, double secs, int interval_ms, int work)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	static uint64_t chunk[CHUNK / 8];
	double t0, next, t;
	long long total = 0;
	int s;

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		fprintf(stderr, "cpusend: bad address %s\n", addr);
		return 2;
	}
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		return die("connect");
	t0 = now();
	next = t0 + interval_ms / 1e3;
	for (;;) {
		mix(chunk, work);
		if (write(s, chunk, CHUNK) != CHUNK)
			return die("write");
		total += CHUNK;
		t = now();
		if (t >= next) {
			printf("%.6f %lld\n", t - t0, total);
			next += interval_ms / 1e3;
		}
		if (t - t0 >= secs)
			break;
	}
	report_usage(s);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "sink"))
		return sink(atoi(argv[2]));
	if (argc == 7 && !strcmp(argv[1], "send"))
		return sender(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: cpusend sink PORT | cpusend send ADDR PORT SECONDS INTERVAL_MS WORK\n");
	return 2;
}
