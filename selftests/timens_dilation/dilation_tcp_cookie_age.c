// SPDX-License-Identifier: GPL-2.0
/*
 * The age of TCP's SYN cookies on the listener's clock. A cookie encodes
 * the minute it was sent in and is valid while the minute it comes back in
 * is less than MAX_SYNCOOKIE_AGE (2) later; a listener of a dilated time
 * namespace counts those minutes on its namespace's clock (that of its
 * timestamp option: CLOCK_MONOTONIC less the monotonic offset, 0 here).
 * Before the kernel did so, they were host minutes: at TDF 1/100 a cookie
 * lived 100-200 minutes of the namespace's time.
 *
 * Each child has a network namespace of its own (lo up) with
 * net.ipv4.tcp_syncookies=2 (every SYN is answered with a cookie) and
 * listeners on 127.0.0.1 and ::1. It plays the client by hand, through a
 * raw socket: a SYN, the SYN-ACK's cookie, and an ACK of it sent when the
 * point says. Accepted: accept() returns the connection and TcpExt
 * SyncookiesRecv goes up; rejected: no connection, TcpExt SyncookiesFailed
 * goes up and the listener answers with a reset.
 *
 * For IPv4 and IPv6:
 *  root namespace: the ACK 1.35 s after the SYN is accepted (the control).
 *  TDF 1/100 (the namespace's clock runs 100 times as fast as the host's):
 *   the start M of a minute of the listener's cookie clock is found from
 *   the cookies themselves: SYNs from one port with one sequence number,
 *   2 s apart, get the same cookie until the minute changes, which
 *   brackets M in (lo, hi] of the namespace's time (the kernel's choice of
 *   the minutes' phase does not matter). A SYN from another port then
 *   gets a cookie of that minute (its SYN-ACK within 15 s after lo).
 *   A. The ACK at lo + 100 s, less than 100 s after M, is accepted.
 *   B. The ACK at hi + 135 s, at least 135 s after M, is rejected. Another
 *      SYN at hi + 100 s renews the listener's overflow window, so that
 *      the cookie's age alone rejects it.
 * A kernel that ages cookies in host minutes shows no new minute within
 * 150 s of the namespace's time (1.5 s of host time); one whose cookie
 * clock runs at twice the namespace's rate rejects A (at least 170 s
 * old on that clock: the bracket is at most 15 s), at half its rate
 * accepts B (at most 75 s old). A run whose SYN-ACK or ACK misses its
 * window (a stall of the emulator) is repeated, up to TRIES times.
 */
#define _GNU_SOURCE
#include <netinet/ip.h>
#include <poll.h>
#include "tcp_util.h"

#define NFAM		2		/* IPv4, IPv6 */
#define NPOINTS		(NFAM * 3)
#define PROBE_NS	(2 * NSEC_PER_SEC)	/* between SYNs that watch the minute */
#define PROBE_MAX_NS	(150 * NSEC_PER_SEC)	/* a minute changes sooner than this */
#define SYN_WIN_NS	(15 * NSEC_PER_SEC)	/* the minute's bracket..SYN-ACK */
#define ACK_OK_NS	(100 * NSEC_PER_SEC)	/* point A's ACK after the bracket's start */
#define ACK_LATE_NS	(115 * NSEC_PER_SEC)	/* A: sent later is no measurement */
#define ACK_OLD_NS	(135 * NSEC_PER_SEC)	/* point B's ACK after the bracket's end */
#define ROOT_AGE_NS	(1350 * NSEC_PER_MSEC)	/* the control's ACK after its SYN */
#define WAIT_HOST_MS	1000		/* for a segment or a connection, host ms */
#define TRIES		3
#define CLI_PORT	40000		/* the raw client's ports start here */
#define ISN		1000000u	/* the raw client's initial sequence number */

enum { RES_NONE, RES_ACCEPTED, RES_REJECTED };

struct point {
	int res;		/* RES_* */
	int tries;		/* runs it took */
	int no_minute;		/* the cookie's minute did not change (TDF 1/100) */
	int rst;		/* the listener reset the ACK */
	long long recv, failed;	/* SyncookiesRecv, SyncookiesFailed increases */
	i64 win;		/* the bracket of the minute's start (TDF 1/100) */
	i64 syn, synack, ack;	/* after the bracket's start (TDF 1/100) or the SYN, ns */
};

struct meas {
	char err[TU_ERR_LEN];
	struct point p[NFAM][2];	/* root: [f][0]; TDF 1/100: A, B */
};

static double tdf;		/* the child's factor */
static int next_port = CLI_PORT;

/* ------------------------------------------------------------------ */

union addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct fam {
	int af;
	union addr lo;		/* the loopback address, listener's port */
	socklen_t len;
	int l, raw;
};

/* The namespace's time equal to @host_ms of host time, for poll() */
static int ns_ms(int host_ms)
{
	return host_ms / tdf > 1 ? (int)(host_ms / tdf) : 1;
}

static unsigned short csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static uint32_t csum_add(uint32_t sum, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += b[n - 1] << 8;
	return sum;
}

/*
 * Send a segment from the raw client's @port to the listener: a SYN with
 * an MSS option (@ack 0) or the ACK of the SYN-ACK whose sequence number
 * is @ack - 1. IPv6's checksum is the kernel's (IPV6_CHECKSUM).
 */
static int send_seg(struct fam *f, int port, uint32_t ack)
{
	unsigned char seg[24] = { 0 };
	struct tcphdr *th = (void *)seg;
	size_t len = ack ? 20 : 24;
	union addr dst;
	uint32_t sum;

	th->source = htons(port);
	th->dest = f->af == AF_INET ? f->lo.in.sin_port : f->lo.in6.sin6_port;
	th->seq = htonl(ack ? ISN + 1 : ISN);
	th->ack_seq = htonl(ack);
	th->doff = len / 4;
	th->syn = !ack;
	th->ack = !!ack;
	th->window = htons(65535);
	if (!ack) {
		seg[20] = 2;	/* MSS, 4 bytes: 1460 */
		seg[21] = 4;
		seg[22] = 1460 >> 8;
		seg[23] = 1460 & 0xff;
	}
	if (f->af == AF_INET) {
		/* pseudo header: source, destination (both 127.0.0.1), protocol, length */
		sum = csum_add(0, &f->lo.in.sin_addr, 4);
		sum = csum_add(sum, &f->lo.in.sin_addr, 4);
		sum += IPPROTO_TCP + len;
		th->check = htons(csum_fold(csum_add(sum, seg, len)));
	}
	/* a raw socket's port is its protocol: the address without one */
	dst = f->lo;
	if (f->af == AF_INET)
		dst.in.sin_port = 0;
	else
		dst.in6.sin6_port = 0;
	if (sendto(f->raw, seg, len, 0, &dst.sa, f->len) != (ssize_t)len)
		return fail("sendto (raw TCP)");
	return 0;
}

/*
 * Wait up to WAIT_HOST_MS of host time for a segment from the listener to
 * the raw client's @port with all of @flags set; its sequence number in
 * *@seq. 0 if it came, 1 if not, -1 on an error.
 */
static int recv_seg(struct fam *f, int port, unsigned char flags, uint32_t *seq)
{
	struct pollfd pfd = { .fd = f->raw, .events = POLLIN };
	unsigned char buf[1500];
	i64 end = now_ns() + WAIT_HOST_MS * NSEC_PER_MSEC / tdf;
	const struct tcphdr *th;
	ssize_t n;
	size_t off;

	for (;;) {
		i64 left = end - now_ns();

		if (left <= 0)
			return 1;
		pfd.revents = 0;
		if (poll(&pfd, 1, left / NSEC_PER_MSEC + 1) < 0)
			return fail("poll (raw TCP)");
		n = recv(f->raw, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN)
				continue;
			return fail("recv (raw TCP)");
		}
		/* an IPv4 raw socket reads the IP header, an IPv6 one does not */
		off = f->af == AF_INET ? (buf[0] & 0xf) * 4 : 0;
		if ((size_t)n < off + sizeof(*th))
			continue;
		th = (const void *)(buf + off);
		if (ntohs(th->dest) != port ||
		    th->source != (f->af == AF_INET ? f->lo.in.sin_port : f->lo.in6.sin6_port) ||
		    (buf[off + 13] & flags) != flags)
			continue;
		*seq = ntohl(th->seq);
		return 0;
	}
}

/* A SYN from @port; *@cookie the SYN-ACK's sequence number */
static int handshake_start(struct fam *f, int port, uint32_t *cookie)
{
	int r;

	if (send_seg(f, port, 0))
		return -1;
	r = recv_seg(f, port, 0x12 /* SYN, ACK */, cookie);
	if (r > 0) {
		errno = ETIMEDOUT;
		return fail("no SYN-ACK from the listener");
	}
	return r;
}

/* Send the ACK of @cookie from @port at the namespace's time @at; the outcome into @p */
static int handshake_end(struct fam *f, int port, uint32_t cookie, i64 at, struct point *p)
{
	struct pollfd pfd = { .fd = f->l, .events = POLLIN };
	long long recv0 = netstat_counter("TcpExt", "SyncookiesRecv");
	long long failed0 = netstat_counter("TcpExt", "SyncookiesFailed");
	uint32_t seq;
	int s, r;

	if (recv0 < 0 || failed0 < 0)
		return fail("TcpExt SyncookiesRecv/SyncookiesFailed in /proc/net/netstat");
	sleep_until(at);
	if (send_seg(f, port, cookie + 1))
		return -1;
	p->ack = now_ns();
	r = poll(&pfd, 1, ns_ms(WAIT_HOST_MS));
	if (r < 0)
		return fail("poll (listener)");
	if (r > 0) {
		s = accept4(f->l, NULL, NULL, SOCK_NONBLOCK);
		if (s < 0)
			return fail("accept");
		drop(s);
		p->res = RES_ACCEPTED;
	} else {
		p->res = RES_REJECTED;
		p->rst = !recv_seg(f, port, 0x04 /* RST */, &seq);
	}
	p->recv = netstat_counter("TcpExt", "SyncookiesRecv") - recv0;
	p->failed = netstat_counter("TcpExt", "SyncookiesFailed") - failed0;
	return 0;
}

/* The control, in host time: the ACK ROOT_AGE_NS after the SYN */
static int measure_root(struct fam *f, struct point *p)
{
	int port = next_port++;
	uint32_t cookie;
	i64 t0 = now_ns();

	if (handshake_start(f, port, &cookie))
		return -1;
	p->syn = 0;
	p->synack = now_ns() - t0;
	p->tries = 1;
	if (handshake_end(f, port, cookie, t0 + ROOT_AGE_NS, p))
		return -1;
	p->ack -= t0;
	return 0;
}

/*
 * Wait for the next minute of the listener's cookie clock, seen as the
 * cookie itself: SYNs from one port with one sequence number, one every
 * PROBE_NS, get the same cookie until its minute changes. *@lo and *@hi
 * (the namespace's time) bracket the change: the send of the last probe
 * before it and the SYN-ACK that showed it. 1 if it did not come within
 * PROBE_MAX_NS.
 */
static int next_cookie_minute(struct fam *f, i64 *lo, i64 *hi)
{
	int port = next_port++;
	uint32_t first, c;
	i64 t0 = now_ns(), sent;

	*lo = t0;
	if (handshake_start(f, port, &first))
		return -1;
	do {
		sleep_ns(PROBE_NS);
		sent = now_ns();
		if (handshake_start(f, port, &c))
			return -1;
		if (c != first) {
			*hi = now_ns();
			return 0;
		}
		*lo = sent;
	} while (sent - t0 < PROBE_MAX_NS);
	return 1;
}

/*
 * Point A (@old 0) or B (@old 1) at TDF 1/100: a cookie of the minute that
 * began at M, in (lo, hi], acknowledged at lo + ACK_OK_NS (less than that
 * after M) or hi + ACK_OLD_NS (at least that after M). Times are kept
 * from lo.
 */
static int measure_dilated(struct fam *f, int old, struct point *p)
{
	uint32_t cookie, c2;
	i64 lo, hi;
	int r;

	for (p->tries = 1; p->tries <= TRIES; p->tries++) {
		int port = next_port++;

		r = next_cookie_minute(f, &lo, &hi);
		if (r < 0)
			return -1;
		if (r) {
			p->no_minute = 1;
			return 0;
		}
		p->win = hi - lo;
		p->syn = now_ns() - lo;
		if (handshake_start(f, port, &cookie))
			return -1;
		p->synack = now_ns() - lo;
		if (p->synack > SYN_WIN_NS)
			continue;	/* a stall: the bracket says too little */
		if (old) {
			/* renew the overflow window: this cookie alone is too old */
			sleep_until(hi + ACK_OK_NS);
			if (handshake_start(f, next_port++, &c2))
				return -1;
		}
		if (handshake_end(f, port, cookie, old ? hi + ACK_OLD_NS : lo + ACK_OK_NS, p))
			return -1;
		p->ack -= lo;
		if (old || p->ack <= ACK_LATE_NS)
			return 0;
	}
	p->tries = TRIES;
	return 0;
}

static int fam_open(struct fam *f, int af)
{
	int one = 1, off = 16;	/* the TCP checksum's offset, IPV6_CHECKSUM */

	memset(f, 0, sizeof(*f));
	f->af = af;
	f->l = f->raw = -1;
	if (af == AF_INET) {
		f->len = sizeof(f->lo.in);
		f->lo.in.sin_family = AF_INET;
		f->lo.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else {
		f->len = sizeof(f->lo.in6);
		f->lo.in6.sin6_family = AF_INET6;
		f->lo.in6.sin6_addr = in6addr_loopback;
	}
	f->l = socket(af, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (f->l < 0 || (af == AF_INET6 &&
			 setsockopt(f->l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(f->l, &f->lo.sa, f->len) || listen(f->l, 8) ||
	    getsockname(f->l, &f->lo.sa, &f->len))
		return fail("listener on %s", af == AF_INET ? "127.0.0.1" : "::1");
	f->raw = socket(af, SOCK_RAW, IPPROTO_TCP);
	if (f->raw < 0)
		return fail("raw TCP socket");
	if (af == AF_INET6 && setsockopt(f->raw, IPPROTO_IPV6, IPV6_CHECKSUM, &off, sizeof(off)))
		return fail("IPV6_CHECKSUM");
	return 0;
}

static void child(int rfd, int wfd)
{
	static const int afs[NFAM] = { AF_INET, AF_INET6 };
	struct meas m = { 0 };
	struct fam f;
	int k;

	(void)rfd;
	tu_err = m.err;
	if (netns_setup() || sysctl_set("/proc/sys/net/ipv4/tcp_syncookies", "2"))
		goto out;
	for (k = 0; k < NFAM; k++) {
		if (fam_open(&f, afs[k]))
			goto out;
		if (tdf == 1) {
			if (measure_root(&f, &m.p[k][0]))
				goto out;
		} else if (measure_dilated(&f, 0, &m.p[k][0]) ||
			   measure_dilated(&f, 1, &m.p[k][1])) {
			goto out;
		}
		close(f.l);
		close(f.raw);
	}
out:
	if (write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(1);
	_exit(0);
}

/* ------------------------------------------------------------------ */

static const char *const fam_name[NFAM] = { "IPv4", "IPv6" };

static int show(const char *w, int k, const char *what, const struct point *p, int want)
{
	if (p->no_minute) {
		ksft_print_msg("%s %s %s: the cookie's minute did not change in %lld s of the namespace's time\n",
			       w, fam_name[k], what, PROBE_MAX_NS / NSEC_PER_SEC);
		return 0;
	}
	if (p->win)
		ksft_print_msg("%s %s %s: the cookie's minute changed within %.2f s\n",
			       w, fam_name[k], what, (double)p->win / NSEC_PER_SEC);
	ksft_print_msg("%s %s %s: SYN at %.2f s, SYN-ACK at %.2f s, ACK at %.2f s (run %d): %s%s; SyncookiesRecv +%lld, SyncookiesFailed +%lld\n",
		       w, fam_name[k], what, (double)p->syn / NSEC_PER_SEC,
		       (double)p->synack / NSEC_PER_SEC, (double)p->ack / NSEC_PER_SEC, p->tries,
		       p->res == RES_ACCEPTED ? "accepted" :
		       p->res == RES_REJECTED ? "rejected" : "not measured",
		       p->res == RES_REJECTED ? (p->rst ? ", reset" : ", no reset") : "",
		       p->recv, p->failed);
	if (want == RES_ACCEPTED)
		return p->res == RES_ACCEPTED && p->recv == 1 && p->failed == 0;
	return p->res == RES_REJECTED && p->rst && p->failed == 1 && p->recv == 0;
}

static void report_root(const struct meas *m)
{
	int k;

	for (k = 0; k < NFAM; k++) {
		if (m->err[0]) {
			ksft_test_result_fail("root namespace %s: %s\n", fam_name[k], m->err);
			continue;
		}
		ksft_test_result(show("root namespace", k, "(times after the SYN)", &m->p[k][0],
				      RES_ACCEPTED),
				 "root namespace %s: a SYN cookie acknowledged %.2f s after the SYN is accepted\n",
				 fam_name[k], (double)ROOT_AGE_NS / NSEC_PER_SEC);
	}
}

static void report_dilated(const struct meas *m)
{
	const char *w = "TDF 1/100";
	int k, ok;

	/* one child measures every family: its failure fails all their points */
	if (setup_failed(m->err, w, 2 * NFAM))
		return;
	for (k = 0; k < NFAM; k++) {
		ok = show(w, k, "A (times after the bracket's start)", &m->p[k][0], RES_ACCEPTED) &&
		     m->p[k][0].synack <= SYN_WIN_NS && m->p[k][0].ack <= ACK_LATE_NS;
		ksft_test_result(ok, "%s %s: a SYN cookie of minute M acknowledged before M + %lld s is accepted\n",
				 w, fam_name[k], ACK_OK_NS / NSEC_PER_SEC);
		ok = show(w, k, "B (times after the bracket's start)", &m->p[k][1], RES_REJECTED) &&
		     m->p[k][1].synack <= SYN_WIN_NS;
		ksft_test_result(ok, "%s %s: a SYN cookie of minute M acknowledged after M + %lld s is rejected as too old\n",
				 w, fam_name[k], ACK_OLD_NS / NSEC_PER_SEC);
	}
}

int main(void)
{
	static struct meas host, down;

	tcp_test_start(NPOINTS);

	tdf = 1;
	if (tcp_child_result(NULL, child, &host, sizeof(host)))
		snprintf(host.err, TU_ERR_LEN, "the child died");
	unshare_timens_or_skip();
	tdf = 0.01;
	if (tcp_child_result("1/100", child, &down, sizeof(down)))
		snprintf(down.err, TU_ERR_LEN, "the child died");

	report_root(&host);
	report_dilated(&down);
	ksft_finished();
	return 0;
}
