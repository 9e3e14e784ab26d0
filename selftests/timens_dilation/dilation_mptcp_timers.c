// SPDX-License-Identifier: GPL-2.0
/*
 * MPTCP's own timers in the time of the socket's namespace. An MPTCP
 * socket's subflows are TCP sockets on its time (dilation_tcp measures
 * their RTO); MPTCP's timers above them fix durations of their own, which
 * are the socket's owner's time too (kernel patch 33): the DATA_FIN's
 * retransmissions, which back off from TCP_RTO_MIN (200 ms), the ADD_ADDR
 * retransmission (net.mptcp.add_addr_timeout), the close timeout of an
 * orphaned socket (TCP_TIMEWAIT_LEN, 60 s); and MPTCP_INFO reports its
 * ages in the reader's time, as TCP_INFO does (patch 34). The patch scales
 * the retransmission timer's floor, the MP_FAIL timeout and the third-ACK
 * retransmission the same way; they are not timed here.
 *
 * A child in a network namespace of its own (lo up), over IPPROTO_MPTCP
 * sockets on 127.0.0.1, both ends MPTCP (MPTCP_INFO: no fallback):
 *  - DATA_FIN: after an exchange, `tc qdisc add dev lo root netem loss
 *    100%`, shutdown(SHUT_WR) on the client; MPTCP_INFO polled every ms
 *    of the namespace's time, each retransmission bracketed by the last
 *    poll that had not seen it and the first that had. mptcpi_retransmits
 *    counts the DATA_FIN's retransmissions. The n-th sets the interval to
 *    200 ms << n, but the timer has been re-armed with the interval before
 *    it by then (the retransmission first cleans the acknowledged data,
 *    which re-arms the timer while the DATA_FIN is unacknowledged), so the
 *    next comes 200 ms << (n - 1) later: the third 400 ms after the
 *    second, the fourth 800 ms after the third (-10%, +30%: the timer
 *    wheel rounds up by at most 12.5%, the worker and the poll add a
 *    little). Two points. The first two follow the interval the timer had
 *    before the shutdown (0 once all data was acknowledged: both within a
 *    few ms).
 *  - ADD_ADDR: net.mptcp.add_addr_timeout 1 (s), the same loss, then `ip
 *    mptcp endpoint add 127.0.0.2 dev lo signal`: the path manager of each
 *    established MPTCP socket, the client's and the server's, announces
 *    the address in the command and arms its ADD_ADDR timer (MPTcpExt
 *    AddAddrTx counts the ADD_ADDRs sent; those counted 300 ms after the
 *    command started are the first ones), and, with no echo, announces it
 *    again after the timeout, from a worker: the first retransmission 1 s
 *    after the command (at least 0.9 s after it started, at most 1.3 s
 *    after it returned). A kernel whose timeout is shorter than 300 ms
 *    retransmits within them, and then too early or no more (3
 *    retransmissions at most).
 *  - MPTCP_INFO: after an exchange and 50 ms idle, mptcpi_last_data_sent,
 *    _last_data_recv and _last_ack_recv within the child's bracket of the
 *    exchange, +- a host tick and 1 ms.
 * The child runs these in the root time namespace (the control: host
 * time) and at TDF 10, with the same bounds in the namespace's time.
 *
 * At TDF 1/100 (two points): the close timeout of an orphaned socket,
 * closed under the same loss with its DATA_FIN unacknowledged: it sends
 * MP_FASTCLOSE (MPTcpExt MPFastcloseTx) 60 s of the namespace's time
 * after close() (0.6 s of host time); polled every 100 ms of its time.
 * Then again, with the factor changed to 1/50 30 s (of the namespace's
 * time) after close(): the timeout is read again when its timer fires
 * and re-armed, 60 s at the new factor from the close, 1.2 s of host
 * time: 60 s + c / 2 of the namespace's time for a change at c. (Before
 * the kernel re-armed it, the timer fired at 0.6 s of host time and found
 * the timeout not yet over; the socket stayed until the worker ran for
 * another reason, the next DATA_FIN retransmission: 99 s after close() in
 * one run, not always too late to fail.) Each no earlier than 3
 * host ticks before and at most 25% later (the timer wheel rounds up by
 * up to 12.5%, the worker and the poll add a little). The root
 * namespace's 60 s and TDF 10's 600 s are not waited for.
 *
 * Each bound rejects a kernel applying twice or half the factor.
 */
#define _GNU_SOURCE
#include <linux/mptcp.h>
#include "tcp_util.h"

#ifndef SOL_MPTCP
#define SOL_MPTCP	284
#endif

#define NFIN		4	/* DATA_FIN retransmissions timed */
#define FIN_FIRST	2	/* the first whose interval to the next is timed */
#define FIN_MS		400	/* that interval (200 ms << 1); doubled after the next */
#define FIN_WAIT_MS	3000	/* give up on the DATA_FIN (expected: ~1200 ms) */
#define ADD_ADDR_S	"1"	/* net.mptcp.add_addr_timeout, s */
#define ADD_ADDR_MS	1000
#define ADD_WAIT_MS	2500
#define ANNOUNCE_MS	300	/* the ADD_ADDRs sent by then are the first, not retransmissions */
#define CLOSE_MS	60000	/* TCP_TIMEWAIT_LEN */
#define CLOSE_WAIT_MS	150000	/* after close() or the change: 1.5 s of host time at 1/100 */
#define CHANGE_MS	30000	/* the factor change, after close() */
#define CHANGE_TO	"1/50"
#define IDLE_MS		50
#define NPOINTS_RUN	4
#define NPOINTS		(2 * NPOINTS_RUN + 2)

struct meas {
	char err[TU_ERR_LEN];	/* a setup failure, "" if none */
	/*
	 * namespace ns after shutdown(): the first poll that saw
	 * mptcpi_retransmits at k + 1 (0: none did), the last before it
	 */
	i64 fin[NFIN], fin_before[NFIN];
	/* ADD_ADDR: the command ran in [add_lo, add_hi], the first retransmission seen at add_rtx */
	i64 add_lo, add_hi, add_rtx;
	long long announced;	/* ADD_ADDRs the command sent at once */
	/* MPTCP_INFO idle in [i0, i1] after the exchange x */
	struct mptcp_info idle;
	struct exchange_times x;
	i64 i0, i1;
	/* ns from close() to MP_FASTCLOSE: last poll that had not seen it, first that had */
	i64 close_seen, close_gone;
	i64 change;		/* ns from close() to the factor change, 0: none */
};

static struct meas *M;

static int minfo(int fd, struct mptcp_info *mi)
{
	socklen_t len = sizeof(*mi);

	memset(mi, 0, sizeof(*mi));
	if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, mi, &len))
		return fail("MPTCP_INFO");
	if (len < sizeof(*mi)) {
		errno = EMSGSIZE;
		return fail("MPTCP_INFO: %u bytes, want %zu", len, sizeof(*mi));
	}
	return 0;
}

/* A connection with one exchange; both ends MPTCP, or a setup failure */
static int mptcp_conn(int l, const struct sockaddr_in *a, int *c, int *s)
{
	struct mptcp_info mi[2];

	if (conn(l, a, c, s) || exchange(*c, *s, &M->x))
		return -1;
	if (minfo(*c, &mi[0]) || minfo(*s, &mi[1]))
		return -1;
	if ((mi[0].mptcpi_flags | mi[1].mptcpi_flags) & MPTCP_INFO_FLAG_FALLBACK) {
		errno = EPROTO;
		return fail("the connection fell back to TCP");
	}
	return 0;
}

static long long mptcp_counter(const char *name)
{
	long long v = netstat_counter("MPTcpExt", name);

	if (v < 0) {
		errno = ENOENT;
		fail("MPTcpExt %s", name);
	}
	return v;
}

static int measure_fin(int l, const struct sockaddr_in *a)
{
	struct mptcp_info mi;
	int c = -1, s = -1, ret = -1;
	unsigned int k;
	i64 t0, t, prev = 0;

	if (mptcp_conn(l, a, &c, &s) || tc("add dev lo root netem loss 100%"))
		goto out;
	t0 = now_ns();
	if (shutdown(c, SHUT_WR)) {
		fail("shutdown");
		goto out;
	}
	do {
		if (minfo(c, &mi))
			goto out;
		t = now_ns() - t0;
		for (k = 0; k < NFIN && k < mi.mptcpi_retransmits; k++)
			if (!M->fin[k]) {
				M->fin[k] = t;
				M->fin_before[k] = prev;
			}
		prev = t;
		sleep_ns(NSEC_PER_MSEC);
	} while (mi.mptcpi_retransmits < NFIN && t < FIN_WAIT_MS * NSEC_PER_MSEC);
	ret = 0;
out:
	return lo_qdisc_done(ret, c, s);
}

static int measure_add_addr(int l, const struct sockaddr_in *a)
{
	long long base, n;
	int c = -1, s = -1, ret = -1;
	i64 t;

	if (sysctl_set("/proc/sys/net/mptcp/add_addr_timeout", ADD_ADDR_S) ||
	    mptcp_conn(l, a, &c, &s) || tc("add dev lo root netem loss 100%"))
		goto out;
	base = mptcp_counter("AddAddrTx");
	if (base < 0)
		goto out;
	/* the timer is armed in the command */
	M->add_lo = now_ns();
	if (run_cmd(IP " mptcp endpoint add 127.0.0.2 dev lo signal"))
		goto out;
	M->add_hi = now_ns();
	sleep_until(M->add_lo + ANNOUNCE_MS * NSEC_PER_MSEC);
	M->announced = mptcp_counter("AddAddrTx") - base;
	if (M->announced < 1) {
		errno = ENOMSG;
		fail("no ADD_ADDR sent %d ms after the endpoint was added", ANNOUNCE_MS);
		goto out;
	}
	do {
		n = mptcp_counter("AddAddrTx");
		if (n < 0)
			goto out;
		t = now_ns();
		if (n > base + M->announced) {
			M->add_rtx = t;
			break;
		}
		sleep_ns(NSEC_PER_MSEC);
	} while (t - M->add_lo < ADD_WAIT_MS * NSEC_PER_MSEC);
	ret = run_cmd(IP " mptcp endpoint flush");
out:
	return lo_qdisc_done(ret, c, s);
}

static int measure_info(int l, const struct sockaddr_in *a)
{
	int c = -1, s = -1, ret = -1;

	if (mptcp_conn(l, a, &c, &s))
		goto out;
	sleep_ns(IDLE_MS * NSEC_PER_MSEC);
	M->i0 = now_ns();
	if (minfo(c, &M->idle))
		goto out;
	M->i1 = now_ns();
	ret = 0;
out:
	drop(c);
	drop(s);
	return ret;
}

/*
 * An orphaned socket whose DATA_FIN is lost: MP_FASTCLOSE after the close
 * timeout; with @change, the factor changes to CHANGE_TO CHANGE_MS after close()
 */
static int measure_close(int l, const struct sockaddr_in *a, int change)
{
	int c = -1, s = -1, ret = -1, err;
	long long base, n;
	i64 t0, t;

	if (mptcp_conn(l, a, &c, &s) || tc("add dev lo root netem loss 100%"))
		goto out;
	base = mptcp_counter("MPFastcloseTx");
	if (base < 0)
		goto out;
	t0 = now_ns();
	close(c);
	c = -1;
	for (;;) {
		t = now_ns() - t0;
		if (change && !M->change && t >= CHANGE_MS * NSEC_PER_MSEC) {
			err = dil_write(DIL_SELF, CHANGE_TO);
			if (err) {
				errno = -err;
				fail("writing %s to /proc/self/timens_dilation", CHANGE_TO);
				goto out;
			}
			M->change = now_ns() - t0;
		}
		n = mptcp_counter("MPFastcloseTx");
		if (n < 0)
			goto out;
		if (n > base) {
			M->close_gone = now_ns() - t0;
			break;
		}
		M->close_seen = t;
		if (t > M->change + CLOSE_WAIT_MS * NSEC_PER_MSEC)
			break;
		sleep_ns(100 * NSEC_PER_MSEC);
	}
	ret = 0;
out:
	return lo_qdisc_done(ret, c, s);
}

/* the run: 0 the runs' points, 1 the close timeout, 2 it across a factor change */
static int run_close;

static void child(int rfd, int wfd)
{
	static struct meas m;
	struct sockaddr_in a;
	int l;

	(void)rfd;
	M = &m;
	tu_err = m.err;
	tu_proto = IPPROTO_MPTCP;
	if (netns_setup())
		goto out;
	l = listener(&a);
	if (l < 0)
		goto out;
	if (run_close)
		measure_close(l, &a, run_close == 2);
	else if (!measure_fin(l, &a) && !measure_add_addr(l, &a))
		measure_info(l, &a);
out:
	if (write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(1);
	_exit(0);
}

static void run(const char *factor, int close, struct meas *m)
{
	run_close = close;
	if (tcp_child_result(factor, child, m, sizeof(*m)))
		snprintf(m->err, sizeof(m->err), "the child died");
}

/*
 * An interval known to be at most @longest and at least @shortest (ns)
 * within -10% and +30% of @want_ms
 */
static int interval_ok(i64 longest, i64 shortest, double want_ms)
{
	return ms(longest) >= want_ms * 0.9 && ms(shortest) <= want_ms * 1.3;
}

/* A run's NPOINTS_RUN points; a host tick is @tick_ms of the namespace's time */
static void report(const struct meas *m, double tick_ms, const char *w)
{
	const struct mptcp_info *mi = &m->idle;
	int k;

	if (setup_failed(m->err, w, NPOINTS_RUN))
		return;
	for (k = 0; k < NFIN; k++)
		ksft_print_msg("%s: DATA_FIN retransmission %d seen %.1f ms after shutdown()\n",
			       w, k + 1, m->fin[k] ? ms(m->fin[k]) : -1.0);
	for (k = FIN_FIRST; k < NFIN; k++) {
		/* the interval lies within these, from the brackets of both */
		i64 longest = m->fin[k] - m->fin_before[k - 1];
		i64 shortest = m->fin_before[k] - m->fin[k - 1];
		double want = FIN_MS << (k - FIN_FIRST);

		ksft_test_result(m->fin[k] && m->fin[k - 1] && interval_ok(longest, shortest, want),
				 "%s: DATA_FIN retransmission %d %.1f-%.1f ms after the previous, want %.0f (-10%%, +30%%)\n",
				 w, k + 1, m->fin[k] ? ms(shortest) : -1.0, m->fin[k] ? ms(longest) : -1.0,
				 want);
	}

	/* the ADD_ADDRs went out while the command ran: from its start, and from its end */
	ksft_print_msg("%s: ip mptcp endpoint add took %.1f ms, %lld ADD_ADDR sent %d ms after it started; the first retransmission seen %.1f ms after it started\n",
		       w, ms(m->add_hi - m->add_lo), m->announced, ANNOUNCE_MS,
		       m->add_rtx ? ms(m->add_rtx - m->add_lo) : -1.0);
	ksft_test_result(m->add_rtx && interval_ok(m->add_rtx - m->add_lo, m->add_rtx - m->add_hi,
						   ADD_ADDR_MS),
			 "%s: ADD_ADDR retransmitted %d ms after it was sent (-10%%, +30%%)\n",
			 w, ADD_ADDR_MS);

	ksft_print_msg("%s: after %d ms idle: mptcpi_last_data_sent %u ms in [%.1f, %.1f], mptcpi_last_data_recv %u ms, mptcpi_last_ack_recv %u ms in [%.1f, %.1f] (+- %.1f ms)\n",
		       w, IDLE_MS, mi->mptcpi_last_data_sent, ms(m->i0 - m->x.w1), ms(m->i1 - m->x.w0),
		       mi->mptcpi_last_data_recv, mi->mptcpi_last_ack_recv, ms(m->i0 - m->x.r1),
		       ms(m->i1 - m->x.w0), tick_ms + 1);
	ksft_test_result(last_ok(mi->mptcpi_last_data_sent, m->i0 - m->x.w1, m->i1 - m->x.w0, tick_ms) &&
			 last_ok(mi->mptcpi_last_data_recv, m->i0 - m->x.r1, m->i1 - m->x.w0, tick_ms) &&
			 last_ok(mi->mptcpi_last_ack_recv, m->i0 - m->x.r1, m->i1 - m->x.w0, tick_ms),
			 "%s: mptcpi_last_data_sent, _data_recv, _ack_recv after %d ms idle\n",
			 w, IDLE_MS);
}

/* The close timeout at TDF 1/100, at a factor of 1/@den; one point */
static void report_close(const struct meas *m, i64 tick_host, int den, const char *w)
{
	/* after a change at c from 1/100 to 1/50: 60 s of host time / 50 from the close */
	i64 want = m->change ? CLOSE_MS * NSEC_PER_MSEC + m->change / 2 :
			       CLOSE_MS * NSEC_PER_MSEC;
	i64 early = 3 * tick_host * den;

	if (setup_failed(m->err, w, 1))
		return;
	if (m->change)
		ksft_print_msg("%s: the factor changed to %s %.2f s after close()\n",
			       w, CHANGE_TO, ms(m->change) / 1000);
	ksft_print_msg("%s: MP_FASTCLOSE not sent %.2f s after close(), sent %.2f s after it; want %.2f s\n",
		       w, ms(m->close_seen) / 1000,
		       m->close_gone ? ms(m->close_gone) / 1000 : -1.0, ms(want) / 1000);
	ksft_test_result(m->close_gone && m->close_gone >= want - early &&
			 m->close_seen <= want + want / 4,
			 "%s: an orphaned socket is closed %.0f s of the namespace's time after close() (+25%%)\n",
			 w, ms(want) / 1000);
}

int main(void)
{
	static struct meas host, slow, fast, change;
	i64 tick = tick_ns();

	tcp_test_start(NPOINTS);
	if (access(IP, X_OK))
		ksft_exit_fail_msg("%s not found (iproute2)\n", IP);

	run(NULL, 0, &host);
	unshare_timens_or_skip();
	run("10", 0, &slow);
	run("1/100", 1, &fast);
	run("1/100", 2, &change);

	report(&host, ms(tick), "root namespace");
	report(&slow, ms(tick) / 10, "TDF 10");
	report_close(&fast, tick, 100, "TDF 1/100");
	report_close(&change, tick, 50, "TDF 1/100, then " CHANGE_TO);
	ksft_finished();
	return 0;
}
