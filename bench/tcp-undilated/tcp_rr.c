// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_rr: TCP over loopback in the calling task's namespaces, for
 * bench/tcp-undilated/run, which boots the kernel with and without the
 * series and compares: the series must cost sockets that are not dilated
 * nothing measurable.
 *
 *   tcp_rr [-s SECONDS] [-r ROUNDS]
 *
 * Each round measures, for SECONDS each:
 *   rr:     1-byte request/response round trips on one connection
 *           (TCP_NODELAY), like netperf's TCP_RR: ns per round trip;
 *   stream: 64 KiB writes on one connection, read by the peer: Mbit/s.
 * Prints one line per round and the medians:
 *   median rr_ns=N stream_mbps=N
 * Sender and receiver are two processes, each pinned to a CPU of its own
 * when there are two, so that the scheduler does not add a variable cost.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF	(64 * 1024)
#define MAXR	64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "tcp_rr: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* A connected pair over 127.0.0.1; *srv is the accepted end */
static void connect_pair(int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		die("listen");
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	if (*cli < 0 || connect(*cli, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	*srv = accept(l, NULL, NULL);
	if (*srv < 0)
		die("accept");
	close(l);
	setsockopt(*cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*srv, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The peer on @fd: echo (rr) or drain (stream) until @other, the client end, closes */
static pid_t peer(int fd, int other, int echo)
{
	static char buf[BUF];
	pid_t pid = fork();
	ssize_t n;

	if (pid < 0)
		die("fork");
	if (pid)
		return pid;
	close(other);
	pin(1);
	while ((n = read(fd, buf, echo ? 1 : sizeof(buf))) > 0)
		if (echo && write(fd, buf, n) != n)
			break;
	_exit(0);
}

static double rr_ns(double secs)
{
	double t0, t;
	long n = 0;
	int c, s;
	char b = 'x';
	pid_t pid;

	connect_pair(&c, &s);
	pid = peer(s, c, 1);
	close(s);
	t0 = now();
	do {
		for (int i = 0; i < 100; i++, n++)
			if (write(c, &b, 1) != 1 || read(c, &b, 1) != 1)
				die("round trip");
		t = now();
	} while (t - t0 < secs);
	close(c);
	waitpid(pid, NULL, 0);
	return (t - t0) * 1e9 / n;
}

static double stream_mbps(double secs)
{
	static char buf[BUF];
	double t0, t;
	long long bytes = 0;
	int c, s;
	pid_t pid;

	connect_pair(&c, &s);
	pid = peer(s, c, 0);
	close(s);
	t0 = now();
	do {
		ssize_t n = write(c, buf, sizeof(buf));

		if (n <= 0)
			die("write");
		bytes += n;
		t = now();
	} while (t - t0 < secs);
	close(c);
	waitpid(pid, NULL, 0);
	return bytes * 8 / (t - t0) / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	double secs = 2, rr[MAXR], st[MAXR];
	int rounds = 5, o;

	while ((o = getopt(argc, argv, "s:r:")) != -1) {
		if (o == 's')
			secs = atof(optarg);
		else if (o == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (secs <= 0 || rounds < 1 || rounds > MAXR) {
		fprintf(stderr, "tcp_rr: -s SECONDS > 0, -r ROUNDS in 1..%d\n", MAXR);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	pin(0);
	for (int r = 0; r < rounds; r++) {
		rr[r] = rr_ns(secs);
		st[r] = stream_mbps(secs);
		printf("round %d rr_ns=%.0f stream_mbps=%.0f\n", r + 1, rr[r], st[r]);
	}
	printf("median rr_ns=%.0f stream_mbps=%.0f\n", median(rr, rounds), median(st, rounds));
	return 0;
}
