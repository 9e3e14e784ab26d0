// SPDX-License-Identifier: GPL-2.0
/*
 * TCP's timestamp option on the socket's clock. A socket of a dilated time
 * namespace sends its namespace's CLOCK_MONOTONIC (less the namespace's
 * monotonic offset, 0 here) as TSval, so that its peer, PAWS and a capture
 * see the clock its owner perceives; an echoed TSval is compared with
 * TCP's own stamps, and turned into RTT samples, on that clock. Before the
 * kernel did so, TSval advanced in host milliseconds: 10 per perceived ms
 * at TDF 10, 1 per 4 at TDF 1/4.
 *
 * Three children, each in a network namespace of its own (lo up, no other
 * traffic) with net.ipv4.tcp_timestamps=2 (TSval in ms and no random
 * offset: TSval is the clock itself): one in the root time namespace (the
 * control, host time), one at TDF 10, one at TDF 1/4. Each watches the
 * segments on lo with a packet socket and measures with its
 * CLOCK_MONOTONIC, in ms:
 *
 *  1. TSval: over a connection on 127.0.0.1, one byte written in [a0, a1]
 *     goes out with a TSval in [a0, a1]; the same 200 ms later; the
 *     answer's TSecr echoes the second TSval. A TSval clock at twice or
 *     half the namespace's rate is 200 or 100 ms out of the second bracket.
 *  2. TCP_TIMESTAMP (getsockopt) read in [t0, t1] is in [t0, t1].
 *  3. SYN cookies (net.ipv4.tcp_syncookies=2: every connection): the
 *     SYN-ACK carries the cookie in its TSval, the listener's clock at
 *     [c0, c1] rounded down to a multiple of 64 ms, with the client's
 *     window scale in its low 4 bits and SACK in bit 4: TSval in
 *     [c0 - 64, c1] and those bits as the client sent them; the server's
 *     socket, rebuilt from the cookie, has timestamps, SACK and the window
 *     scale, and its data goes out with a TSval in its bracket.
 *  4. The receiver's RTT estimate from timestamps (tcpi_rcv_rtt, reported
 *     in the reader's time): lo at MTU 1500 (so that full segments are
 *     smaller than the receive window's estimate), `netem delay D` on lo
 *     (each segment crosses it once: a round trip of 2D of host time;
 *     D = 100 ms: 200, 20 and 800 ms perceived), 256 KiB from client to
 *     server: the server's tcpi_rcv_rtt within 5% of 2D / TDF. The samples
 *     are whole ms of the socket's clock (at TDF 10, 20 or 21 ms). A sample
 *     also holds the time the sender took to answer an ACK, which the
 *     estimator averages in (it takes a smaller sample at once, a larger
 *     one by an eighth): about 3 ms of host time in the TCG guest (a clean
 *     CI run, 2026-11-28, with D = 20 ms in the root namespace and at TDF
 *     1/10: 43 ms for 40, 428 for 400). D = 100 ms makes 5% of every
 *     round trip 10 ms of host time. The third factor is 1/4, not 1/10:
 *     at 1/10 a 200 ms round trip of host time is 2 s of the socket's
 *     time, more than the initial RTO of its SYN (1 s).
 *
 * Points 1-3 fail at TDF 10 and 1/4 on a kernel whose TSval is host time;
 * point 4 fails on a kernel that converts an echoed span by twice or half
 * the factor (tcpi_rcv_rtt 40 or 10 ms at TDF 10, 400 or 1600 at 1/4).
 */
#define _GNU_SOURCE
#include "tcp_sniff.h"

#define NPOINTS_RUN	4
#define NRUNS		3
#define NPOINTS		(NRUNS * NPOINTS_RUN)
#define GAP_MS		200		/* between the two TSval samples */
#define BULK		(256 * 1024)	/* bytes, point 4 */
#define BULK_WAIT_MS	60000		/* give up on point 4 (expected: < 10 s host) */
#define NSEG		256		/* segments kept per capture */
#define TS_COOKIE_BITS	6		/* low TSval bits a SYN cookie uses */

/* The parts a child measures; a failure in one fails only its points */
enum { PART_TSVAL, PART_COOKIE, PART_RCV_RTT, NPARTS };

struct meas {
	char err[NPARTS][TU_ERR_LEN];	/* a part's setup failure, "" if none */
	/* 1: the byte's TSval and its bracket, twice; the answer's TSecr */
	unsigned int ts[2], tsecr;
	i64 a0[2], a1[2];
	/* 2 */
	unsigned int tsopt;
	i64 t0, t1;
	/* 3: the SYN-ACK's TSval and bracket; client's window scale; server */
	unsigned int synack_ts, cli_wscale, srv_options, srv_snd_wscale, srv_ts;
	i64 c0, c1, d0, d1;
	/* 4 */
	unsigned int rcv_rtt, cli_rtt, delay_ms;
	i64 bulk_ns;
};

static struct meas *M;

static int measure_tsval(int l, const struct sockaddr_in *a, struct seg *segs)
{
	socklen_t len = sizeof(M->tsopt);
	int c, s, ret = -1, k;
	struct seg got;
	i64 w0, w1;

	if (conn(l, a, &c, &s))
		return -1;
	for (k = 0; k < 2; k++) {
		if (k)
			sleep_ns(GAP_MS * NSEC_PER_MSEC);
		if (send_byte(c, s, &M->a0[k], &M->a1[k], segs, NSEG, &got))
			goto out;
		M->ts[k] = got.tsval;
	}
	if (send_byte(s, c, &w0, &w1, segs, NSEG, &got))
		goto out;
	M->tsecr = got.tsecr;
	M->t0 = now_ns();
	if (getsockopt(c, IPPROTO_TCP, TCP_TIMESTAMP, &M->tsopt, &len)) {
		fail("getsockopt(TCP_TIMESTAMP)");
		goto out;
	}
	M->t1 = now_ns();
	ret = 0;
out:
	drop(c);
	drop(s);
	return ret;
}

static int measure_cookie(struct seg *segs)
{
	struct sockaddr_in a;
	const struct seg *sa;
	struct tcp_info ti;
	struct seg got;
	int l, c = -1, s = -1, n, ret = -1;
	i64 w0, w1;

	if (sysctl_set("/proc/sys/net/ipv4/tcp_syncookies", "2"))
		return -1;
	l = listener(&a);
	if (l < 0)
		goto out;
	sniff(segs, NSEG);
	M->c0 = now_ns();
	if (conn(l, &a, &c, &s))
		goto out;
	M->c1 = now_ns();
	n = sniff(segs, NSEG);
	sa = sniff_find(segs, n, ntohs(a.sin_port), port_of(c, 0), 1);
	if (!sa) {
		errno = ENOENT;
		fail("no SYN-ACK with timestamps seen");
		goto out;
	}
	M->synack_ts = sa->tsval;
	if (tinfo(c, &ti))
		goto out;
	M->cli_wscale = ti.tcpi_rcv_wscale;
	if (tinfo(s, &ti))
		goto out;
	M->srv_options = ti.tcpi_options;
	M->srv_snd_wscale = ti.tcpi_snd_wscale;
	if (send_byte(c, s, &w0, &w1, segs, NSEG, &got) ||
	    send_byte(s, c, &M->d0, &M->d1, segs, NSEG, &got))
		goto out;
	M->srv_ts = got.tsval;
	ret = 0;
out:
	drop(c);
	drop(s);
	if (l >= 0)
		close(l);
	if (sysctl_set("/proc/sys/net/ipv4/tcp_syncookies", "1"))
		ret = -1;
	return ret;
}

/* Move BULK bytes from @c to @s */
static int bulk(int c, int s)
{
	long long sent = 0, got = 0;
	i64 t0 = now_ns();

	if (fcntl(c, F_SETFL, O_NONBLOCK) || fcntl(s, F_SETFL, O_NONBLOCK))
		return fail("O_NONBLOCK");
	while (got < BULK) {
		struct pollfd p[2] = {
			{ .fd = c, .events = sent < BULK ? POLLOUT : 0 },
			{ .fd = s, .events = POLLIN },
		};

		if (poll(p, 2, 1000) < 0)
			return fail("poll");
		if (pump_step(p, c, s, BULK - sent, &sent, &got) < 0)
			return -1;
		if (now_ns() - t0 > BULK_WAIT_MS * NSEC_PER_MSEC) {
			errno = ETIMEDOUT;
			return fail("%lld of %d bytes in %d ms", got, BULK, BULK_WAIT_MS);
		}
	}
	M->bulk_ns = now_ns() - t0;
	return 0;
}

static int measure_rcv_rtt(int l, const struct sockaddr_in *a, unsigned int delay_ms)
{
	struct tcp_info ti;
	char args[64];
	int c = -1, s = -1, ret = -1;

	M->delay_ms = delay_ms;
	if (lo_mtu(1500))
		return -1;
	snprintf(args, sizeof(args), "add dev lo root netem delay %ums limit 10000", delay_ms);
	if (tc(args))
		return -1;
	if (conn(l, a, &c, &s) || bulk(c, s))
		goto out;
	if (tinfo(s, &ti))
		goto out;
	M->rcv_rtt = ti.tcpi_rcv_rtt;
	if (tinfo(c, &ti))
		goto out;
	M->cli_rtt = ti.tcpi_rtt;
	ret = 0;
out:
	return lo_qdisc_done(ret, c, s);
}

static unsigned int bulk_delay_ms;	/* point 4's netem delay, host ms each way */

static void child(int rfd, int wfd)
{
	static struct seg segs[NSEG];
	struct sockaddr_in a;
	struct meas m = { 0 };
	int l, k;

	(void)rfd;
	M = &m;
	tu_err = m.err[PART_TSVAL];
	if (netns_setup() || sysctl_set("/proc/sys/net/ipv4/tcp_timestamps", "2") ||
	    sniff_open() || (l = listener(&a)) < 0) {
		for (k = 1; k < NPARTS; k++)
			memcpy(m.err[k], m.err[0], TU_ERR_LEN);
		goto out;
	}
	measure_tsval(l, &a, segs);
	tu_err = m.err[PART_COOKIE];
	measure_cookie(segs);
	tu_err = m.err[PART_RCV_RTT];
	measure_rcv_rtt(l, &a, bulk_delay_ms);
out:
	if (write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(1);
	_exit(0);
}

/* ------------------------------------------------------------------ */

static void report(const struct meas *m, double tdf, const char *w)
{
	double want = 2.0 * m->delay_ms * 1000 / tdf;
	unsigned int bits, want_opts;
	int k, ok;

	if (setup_failed(m->err[PART_TSVAL], w, 2))
		goto cookie;
	for (ok = 1, k = 0; k < 2; k++) {
		ksft_print_msg("%s: byte %d written in [%u, %u] ms, sent with TSval %u\n",
			       w, k + 1, ms_of(m->a0[k]), ms_of(m->a1[k]), m->ts[k]);
		ok &= in_ms(m->ts[k], m->a0[k], m->a1[k], 0);
	}
	ksft_print_msg("%s: TSval advanced %u ms over %.1f ms of this namespace's clock; the answer's TSecr %u\n",
		       w, m->ts[1] - m->ts[0], (double)(m->a0[1] - m->a0[0]) / NSEC_PER_MSEC,
		       m->tsecr);
	ksft_test_result(ok && m->tsecr == m->ts[1],
			 "%s: TSval is the namespace's CLOCK_MONOTONIC in ms, %d ms apart too; TSecr echoes it\n",
			 w, GAP_MS);
	/* bit 0 says "usec resolution": the kernel clears it in ms mode */
	ksft_test_result(in_ms(m->tsopt, m->t0, m->t1, 1) && !(m->tsopt & 1),
			 "%s: TCP_TIMESTAMP %u in [%u, %u] ms (ms resolution)\n",
			 w, m->tsopt, ms_of(m->t0), ms_of(m->t1));

cookie:
	if (setup_failed(m->err[PART_COOKIE], w, 1))
		goto rcv_rtt;
	bits = m->synack_ts & ((1U << TS_COOKIE_BITS) - 1);
	want_opts = m->cli_wscale | 0x10;
	ksft_print_msg("%s: SYN cookie: connect() in [%u, %u] ms, SYN-ACK TSval %u (low bits %#x, want %#x: wscale %u, SACK); server's tcpi_options %#x, tcpi_snd_wscale %u; its data TSval %u in [%u, %u]\n",
		       w, ms_of(m->c0), ms_of(m->c1), m->synack_ts, bits, want_opts, m->cli_wscale,
		       m->srv_options, m->srv_snd_wscale, m->srv_ts, ms_of(m->d0), ms_of(m->d1));
	ksft_test_result(in_ms(m->synack_ts, m->c0, m->c1, 1U << TS_COOKIE_BITS) &&
			 bits == want_opts &&
			 (m->srv_options & (TCPI_OPT_TIMESTAMPS | TCPI_OPT_SACK | TCPI_OPT_WSCALE)) ==
			 (TCPI_OPT_TIMESTAMPS | TCPI_OPT_SACK | TCPI_OPT_WSCALE) &&
			 m->srv_snd_wscale == m->cli_wscale && in_ms(m->srv_ts, m->d0, m->d1, 0),
			 "%s: SYN cookie in the SYN-ACK's TSval on the namespace's clock; options and TSval kept\n",
			 w);

rcv_rtt:
	if (setup_failed(m->err[PART_RCV_RTT], w, 1))
		return;
	ksft_print_msg("%s: %d KiB with netem delay %u ms (host) each way in %.1f ms: server's tcpi_rcv_rtt %u us, client's tcpi_rtt %u us, want %.0f\n",
		       w, BULK / 1024, m->delay_ms, (double)m->bulk_ns / NSEC_PER_MSEC, m->rcv_rtt,
		       m->cli_rtt, want);
	ksft_test_result(m->rcv_rtt >= want * 0.95 && m->rcv_rtt <= want * 1.05,
			 "%s: tcpi_rcv_rtt (from timestamps) %u us within 5%% of %.0f us\n",
			 w, m->rcv_rtt, want);
}

static void run(const char *factor, unsigned int delay_ms, struct meas *m)
{
	int k;

	bulk_delay_ms = delay_ms;
	if (tcp_child_result(factor, child, m, sizeof(*m))) {
		for (k = 0; k < NPARTS; k++)
			snprintf(m->err[k], TU_ERR_LEN, "the child died");
	}
}

int main(void)
{
	static struct meas host, up, down;

	tcp_test_start(NPOINTS);

	run(NULL, 100, &host);
	unshare_timens_or_skip();
	run("10", 100, &up);
	run("1/4", 100, &down);

	report(&host, 1, "root namespace");
	report(&up, 10, "TDF 10");
	report(&down, 0.25, "TDF 1/4");
	ksft_finished();
	return 0;
}
