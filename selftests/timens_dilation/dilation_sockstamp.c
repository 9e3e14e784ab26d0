// SPDX-License-Identifier: GPL-2.0
/*
 * Socket receive timestamps in a dilated time namespace (issue 10): the
 * software stamps a task reads (SO_TIMESTAMP, SO_TIMESTAMPNS, their _NEW
 * forms, SO_TIMESTAMPING's software stamp, SIOCGSTAMP, SIOCGSTAMPNS, and
 * TCP's receive stamps) are in its namespace's CLOCK_REALTIME, so that
 * ping inside a dilated node prints perceived round trips.
 *
 * A child in a namespace at TDF 10, 1 s of host time after the factor was
 * written (its CLOCK_REALTIME is then 0.9 s behind the host's), sends a
 * datagram to itself over loopback and checks that the stamp lies between
 * its CLOCK_REALTIME read before the send and after the receive: within
 * microseconds, so that a stamp in host time (0.9 s ahead) and one dilated
 * by twice or half the factor (50 ms off) both fail. The same in the root
 * namespace: stamps there stay host time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include "dilation.h"

#ifndef SO_TIMESTAMP_NEW
# define SO_TIMESTAMP_NEW	63
# define SO_TIMESTAMPNS_NEW	64
#endif
#ifndef SIOCGSTAMP_NEW
# define SIOCGSTAMP_NEW		_IOR(0x89, 0x06, long long[2])
# define SIOCGSTAMPNS_NEW	_IOR(0x89, 0x07, long long[2])
#endif

enum { K_TS_OLD, K_TSNS_OLD, K_TS_NEW, K_TSNS_NEW, K_TSTAMPING, K_SIOCGSTAMP, K_SIOCGSTAMPNS,
       K_TCP, NKINDS };

static const char * const kind_name[NKINDS] = {
	"SO_TIMESTAMP", "SO_TIMESTAMPNS", "SO_TIMESTAMP_NEW", "SO_TIMESTAMPNS_NEW",
	"SO_TIMESTAMPING (software receive stamp)", "SIOCGSTAMP", "SIOCGSTAMPNS",
	"TCP with SO_TIMESTAMPNS",
};

struct stamp {
	int err;		/* errno, 0 if a stamp was read */
	i64 t0, t1, v;		/* CLOCK_REALTIME before the send, after the receive; the stamp */
	i64 gran;		/* the stamp's granularity */
};

static i64 realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts_ns(&ts);
}

/* The stamp in a control message of @msg, or -1 */
static i64 cmsg_stamp(struct msghdr *msg, int kind)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		void *d = CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET)
			continue;
		switch (kind) {
		case K_TS_OLD:
			if (c->cmsg_type == SO_TIMESTAMP_OLD) {
				struct timeval *tv = d;

				return (i64)tv->tv_sec * NSEC_PER_SEC + tv->tv_usec * NSEC_PER_USEC;
			}
			break;
		case K_TSNS_OLD:
		case K_TCP:
			if (c->cmsg_type == SO_TIMESTAMPNS_OLD) {
				struct timespec *ts = d;

				return ts_ns(ts);
			}
			break;
		case K_TS_NEW:
			if (c->cmsg_type == SO_TIMESTAMP_NEW) {
				long long *v = d;	/* __kernel_sock_timeval: s64 sec, s64 usec */

				return v[0] * NSEC_PER_SEC + v[1] * NSEC_PER_USEC;
			}
			break;
		case K_TSNS_NEW:
			if (c->cmsg_type == SO_TIMESTAMPNS_NEW) {
				long long *v = d;	/* __kernel_timespec */

				return v[0] * NSEC_PER_SEC + v[1];
			}
			break;
		case K_TSTAMPING:
			if (c->cmsg_type == SO_TIMESTAMPING_OLD) {
				struct timespec *ts = d;	/* scm_timestamping: ts[0] software */

				return ts_ns(&ts[0]);
			}
			break;
		}
	}
	return -1;
}

static int set_opt(int fd, int kind)
{
	int one = 1, flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;

	switch (kind) {
	case K_TS_OLD:
		return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMP_OLD, &one, sizeof(one));
	case K_TSNS_OLD:
	case K_TCP:
		return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS_OLD, &one, sizeof(one));
	case K_TS_NEW:
		return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMP_NEW, &one, sizeof(one));
	case K_TSNS_NEW:
		return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS_NEW, &one, sizeof(one));
	case K_TSTAMPING:
		return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_OLD, &flags, sizeof(flags));
	}
	/*
	 * SIOCGSTAMP*: the first ioctl turns stamping on (and fails, no
	 * packet yet); without it, the one after the receive would stamp
	 * its own time.
	 */
	{
		long long v[2];

		ioctl(fd, kind == K_SIOCGSTAMP ? SIOCGSTAMP_NEW : SIOCGSTAMPNS_NEW, v);
	}
	return 0;
}

/* A connected pair over loopback: UDP to itself, or TCP */
static int pair(int tcp, int *tx, int *rx)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l, one = 1;

	if (!tcp) {
		*rx = socket(AF_INET, SOCK_DGRAM, 0);
		if (*rx < 0 || bind(*rx, (struct sockaddr *)&a, sizeof(a)) ||
		    getsockname(*rx, (struct sockaddr *)&a, &len))
			return errno;
		*tx = socket(AF_INET, SOCK_DGRAM, 0);
		if (*tx < 0 || connect(*tx, (struct sockaddr *)&a, sizeof(a)))
			return errno;
		return 0;
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return errno;
	*tx = socket(AF_INET, SOCK_STREAM, 0);
	if (*tx < 0 || connect(*tx, (struct sockaddr *)&a, sizeof(a)))
		return errno;
	*rx = accept(l, NULL, NULL);
	close(l);
	if (*rx < 0)
		return errno;
	setsockopt(*tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* One packet through a fresh pair; the stamp the reader gets */
static struct stamp one_stamp(int kind)
{
	char buf[64], ctl[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct stamp st = { 0 };
	int tx = -1, rx = -1;

	st.gran = kind == K_TS_OLD || kind == K_TS_NEW || kind == K_SIOCGSTAMP ? NSEC_PER_USEC : 1;
	st.err = pair(kind == K_TCP, &tx, &rx);
	if (!st.err && set_opt(rx, kind))
		st.err = errno;
	if (st.err)
		goto out;
	st.t0 = realtime();
	if (send(tx, "stamp", 5, 0) != 5 || recvmsg(rx, &msg, 0) < 0) {
		st.err = errno;
		goto out;
	}
	st.t1 = realtime();
	if (kind == K_SIOCGSTAMP) {
		long long v[2];

		if (ioctl(rx, SIOCGSTAMP_NEW, v))
			st.err = errno;
		st.v = v[0] * NSEC_PER_SEC + v[1] * NSEC_PER_USEC;
	} else if (kind == K_SIOCGSTAMPNS) {
		long long v[2];

		if (ioctl(rx, SIOCGSTAMPNS_NEW, v))
			st.err = errno;
		st.v = v[0] * NSEC_PER_SEC + v[1];
	} else {
		st.v = cmsg_stamp(&msg, kind);
		if (st.v < 0)
			st.err = ENOMSG;
	}
out:
	if (tx >= 0)
		close(tx);
	if (rx >= 0)
		close(rx);
	return st;
}

static void all_stamps(struct stamp *st)
{
	int k;

	for (k = 0; k < NKINDS; k++)
		st[k] = one_stamp(k);
}

static void child(int rfd, int wfd)
{
	struct stamp st[NKINDS];
	char c;

	if (read_full(rfd, &c, 1))
		_exit(1);
	all_stamps(st);
	if (write(wfd, st, sizeof(st)) != sizeof(st))
		_exit(1);
	_exit(0);
}

/* Within the reader's CLOCK_REALTIME bracket, up to the stamp's granularity */
static int in_bracket(const struct stamp *st, const char *where, const char *what)
{
	int ok = !st->err && st->v >= st->t0 - st->gran && st->v <= st->t1;

	if (st->err)
		ksft_print_msg("%s: %s: %s\n", where, what, strerror(st->err));
	else
		ksft_print_msg("%s: %s: stamp - REALTIME before the send = %+lld us, bracket %lld us%s\n",
			       where, what, (st->v - st->t0) / NSEC_PER_USEC,
			       (st->t1 - st->t0) / NSEC_PER_USEC, ok ? "" : "  <== OUTSIDE");
	return ok;
}

#define NPOINTS	(NKINDS + 1)

int main(void)
{
	struct stamp st[NKINDS], host[NKINDS];
	int rfd, wfd, k, ok;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_dilation();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	unshare_timens_or_skip();
	ksft_set_plan(NPOINTS);
	pid = dil_fork_child("10", child, &rfd, &wfd);
	/* the namespace's CLOCK_REALTIME falls 0.9 s behind the host's */
	sleep_ns(NSEC_PER_SEC);
	if (write(wfd, "g", 1) != 1 || read_full(rfd, st, sizeof(st)))
		ksft_exit_fail_msg("the child died\n");
	waitpid(pid, NULL, 0);
	all_stamps(host);

	for (k = 0; k < NKINDS; k++)
		ksft_test_result(in_bracket(&st[k], "TDF 10", kind_name[k]),
				 "TDF 10: %s stamps are the namespace's CLOCK_REALTIME\n", kind_name[k]);
	for (ok = 1, k = 0; k < NKINDS; k++)
		ok &= in_bracket(&host[k], "root namespace", kind_name[k]);
	ksft_test_result(ok, "root namespace: every stamp is the host's CLOCK_REALTIME\n");
	ksft_finished();
	return 0;
}
