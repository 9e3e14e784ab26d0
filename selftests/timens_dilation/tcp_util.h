/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TCP (or MPTCP) over loopback in a network namespace of the test's own,
 * for the selftests that measure TCP in namespace time (dilation_tcp,
 * dilation_tcp_tsval). A child reports its first setup failure in the
 * buffer tu_err points to, which it sends to the parent with its results.
 */
#ifndef TCP_UTIL_H
#define TCP_UTIL_H

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/tcp.h>
#include "dilation.h"

#define TC		"/usr/sbin/tc"
#define IP		"/usr/sbin/ip"
#define TU_ERR_LEN	200

static char *tu_err;	/* TU_ERR_LEN bytes, "" until the first failure */
/* The protocol of the stream sockets the tests open: 0 (TCP) or IPPROTO_MPTCP */
static int tu_proto;

/* This namespace's CLOCK_MONOTONIC, ns */
static inline i64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_ns(&ts);
}

static __printf(1, 2) int fail(const char *fmt, ...)
{
	int e = errno, n;
	va_list ap;

	if (tu_err[0])
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(tu_err, TU_ERR_LEN, fmt, ap);
	va_end(ap);
	if (n >= 0 && n < TU_ERR_LEN)
		snprintf(tu_err + n, TU_ERR_LEN - n, ": %s", strerror(e));
	return -1;
}

/* TCP_INFO of @fd; a failure is the child's setup failure */
static inline int tinfo(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len))
		return fail("TCP_INFO");
	return 0;
}

/* Run the shell command @cmd; its failure is the child's setup failure */
static inline int run_cmd(const char *cmd)
{
	int st = system(cmd);

	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		errno = EIO;
		return fail("%s (status %#x)", cmd, st);
	}
	return 0;
}

static inline int tc(const char *args)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), TC " qdisc %s", args);
	return run_cmd(cmd);
}

static inline double ms(i64 ns)
{
	return (double)ns / NSEC_PER_MSEC;
}

/*
 * An age TCP_INFO or MPTCP_INFO reports, @v ms, against the bracket [@lo,
 * @hi] (ns) the task measured: +- a host tick (@tick_ms of its time) and
 * 1 ms of rounding
 */
static inline int last_ok(unsigned int v, i64 lo, i64 hi, double tick_ms)
{
	return v >= ms(lo) - tick_ms - 1 && v <= ms(hi) + tick_ms + 1;
}

/* Write @val to the sysctl file @path */
static inline int sysctl_set(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = fd < 0 ? -1 : write(fd, val, strlen(val));

	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)strlen(val))
		return fail("%s=%s", path, val);
	return 0;
}

/* A counter of /proc/net/netstat (this network namespace): -1 if not found */
static inline long long netstat_counter(const char *group, const char *name)
{
	char names[4096], vals[4096], *ns, *vs, *n, *v;
	long long ret = -1;
	FILE *f = fopen("/proc/net/netstat", "r");
	size_t glen = strlen(group);

	if (!f)
		return -1;
	while (fgets(names, sizeof(names), f) && fgets(vals, sizeof(vals), f)) {
		if (strncmp(names, group, glen) || names[glen] != ':')
			continue;
		n = strtok_r(names + glen + 1, " \n", &ns);
		v = strtok_r(vals + glen + 1, " \n", &vs);
		for (; n && v; n = strtok_r(NULL, " \n", &ns), v = strtok_r(NULL, " \n", &vs))
			if (!strcmp(n, name)) {
				ret = atoll(v);
				break;
			}
	}
	fclose(f);
	return ret;
}

/* A network namespace of our own, lo up, no TCP metrics carried between connections */
static inline int netns_setup(void)
{
	struct ifreq ifr = { 0 };
	int sfd;

	if (unshare(CLONE_NEWNET))
		return fail("unshare(CLONE_NEWNET)");
	sfd = socket(AF_INET, SOCK_DGRAM, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (sfd < 0 || ioctl(sfd, SIOCGIFFLAGS, &ifr))
		return fail("SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(sfd, SIOCSIFFLAGS, &ifr))
		return fail("SIOCSIFFLAGS lo up");
	close(sfd);
	return sysctl_set("/proc/sys/net/ipv4/tcp_no_metrics_save", "1");
}

static inline int listener(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int l;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, tu_proto);
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof(*a)) || listen(l, 8) ||
	    getsockname(l, (struct sockaddr *)a, &len))
		return fail("listening socket");
	return l;
}

/* The local (@peer 0) or remote port of @fd; -1 if unknown */
static inline int port_of(int fd, int peer)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	if (peer ? getpeername(fd, (struct sockaddr *)&a, &len) :
		   getsockname(fd, (struct sockaddr *)&a, &len))
		return -1;
	return ntohs(a.sin_port);
}

/* Connect socket @c to listener @l at @a: *s the accepted end */
static inline int connect_accept(int l, const struct sockaddr_in *a, int c, int *s)
{
	int one = 1;

	*s = -1;
	if (c < 0 || connect(c, (const struct sockaddr *)a, sizeof(*a)))
		return fail("connect");
	*s = accept(l, NULL, NULL);
	if (*s < 0)
		return fail("accept");
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* A connection to listener @l at @a: *c the client end, *s the accepted one */
static inline int conn(int l, const struct sockaddr_in *a, int *c, int *s)
{
	*c = socket(AF_INET, SOCK_STREAM, tu_proto);
	return connect_accept(l, a, *c, s);
}

/* A request written in [w0, w1] and its answer read at r1, this namespace's ns */
struct exchange_times {
	i64 w0, w1, r1;
};

/* One byte from @c answered by one from @s (both blocking), timed in @x */
static inline int exchange(int c, int s, struct exchange_times *x)
{
	char b;

	x->w0 = now_ns();
	if (write(c, "q", 1) != 1)
		return fail("write request");
	x->w1 = now_ns();
	if (read(s, &b, 1) != 1 || write(s, "r", 1) != 1)
		return fail("serve request");
	if (read(c, &b, 1) != 1)
		return fail("read answer");
	x->r1 = now_ns();
	return 0;
}

/* lo's MTU: 1500 gives segments of an Ethernet link instead of 64 KiB */
static inline int lo_mtu(int mtu)
{
	struct ifreq ifr = { 0 };
	int sfd = socket(AF_INET, SOCK_DGRAM, 0), ret;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ifr.ifr_mtu = mtu;
	ret = sfd < 0 || ioctl(sfd, SIOCSIFMTU, &ifr) ? fail("lo mtu %d", mtu) : 0;
	if (sfd >= 0)
		close(sfd);
	return ret;
}

/* close with a reset: nothing left retransmitting into the next measurement */
static inline void drop(int fd)
{
	struct linger lg = { 1, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/*
 * A child's setup failure @err ("" if none) for the @n points of run @w:
 * printed, and the points failed. 1 if there was one, 0 if not.
 */
static inline int setup_failed(const char *err, const char *w, int n)
{
	if (!err[0])
		return 0;
	ksft_print_msg("%s: %s\n", w, err);
	fail_points(n, "setup failed");
	return 1;
}

/*
 * The end of a measurement under a root qdisc on lo: remove it, reset both
 * ends (-1: none); @ret, or -1 if the qdisc could not be removed.
 */
static inline int lo_qdisc_done(int ret, int c, int s)
{
	if (tc("del dev lo root"))
		ret = -1;
	drop(c);
	drop(s);
	return ret;
}

/*
 * One step of moving bytes from @c to @s (both non-blocking) after poll()
 * filled @p[0] (@c, POLLOUT) and @p[1] (@s, POLLIN): write up to @want
 * bytes, read what has come. Returns the bytes read, -1 on a failure.
 */
static inline ssize_t pump_step(const struct pollfd *p, int c, int s, size_t want,
				long long *sent, long long *got)
{
	static char buf[65536];
	ssize_t r, n = 0;

	if (p[0].revents & POLLOUT) {
		r = write(c, buf, want < sizeof(buf) ? want : sizeof(buf));
		if (r < 0 && errno != EAGAIN)
			return fail("write");
		*sent += r > 0 ? r : 0;
	}
	if (p[1].revents & POLLIN) {
		r = read(s, buf, sizeof(buf));
		if (!r)
			errno = EPIPE;
		if (!r || (r < 0 && errno != EAGAIN))
			return fail("read");
		n = r > 0 ? r : 0;
		*got += n;
	}
	return n;
}

/*
 * Fork @child into the namespace at @factor (dil_fork_child()), read its
 * result, @len bytes, into @res and reap it: 0, or -1 with @res zeroed if
 * the child died before sending it.
 */
static inline int tcp_child_result(const char *factor, void (*child)(int rfd, int wfd),
				   void *res, size_t len)
{
	int rfd, wfd, ret = 0;
	pid_t pid = dil_fork_child(factor, child, &rfd, &wfd);

	if (read_full(rfd, res, len)) {
		memset(res, 0, len);
		ret = -1;
	}
	close(rfd);
	close(wfd);
	waitpid(pid, NULL, 0);
	return ret;
}

/* The start of a TCP test's main(): the plan, and what it needs to run */
static inline void tcp_test_start(int npoints)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_dilation();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	if (access(TC, X_OK))
		ksft_exit_fail_msg("%s not found (iproute2)\n", TC);
	ksft_set_plan(npoints);
}

#endif /* TCP_UTIL_H */
