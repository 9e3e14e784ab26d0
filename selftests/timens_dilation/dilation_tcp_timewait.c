// SPDX-License-Identifier: GPL-2.0
/*
 * How long a closed TCP connection lingers, in the time of its socket's
 * namespace: TIME_WAIT (TCP_TIMEWAIT_LEN, 60 s) and the orphaned
 * FIN_WAIT2 timeout (net.ipv4.tcp_fin_timeout, 60 s, or TCP_LINGER2) are
 * durations of the socket's owner, like the RTO floor (dilation_tcp).
 * Before the kernel scaled them they were host time: at TDF 10 a socket
 * left TIME_WAIT after 6 s of its namespace's time.
 *
 * A child in a dilated namespace and a network namespace of its own (lo
 * up) opens three connections on 127.0.0.1 and closes them:
 *  - TIME_WAIT: the client closes, then the server: the client's socket
 *    enters TIME_WAIT;
 *  - FIN_WAIT2: the client closes, the server does not: the client's
 *    orphaned socket waits in FIN_WAIT2 for tcp_fin_timeout;
 *  - TCP_LINGER2: the same with TCP_LINGER2 set to 20 s (read back as set);
 *  - a negative tcp_fin_timeout (the sysctl has no floor): the orphaned
 *    FIN_WAIT2 lasts 3.5 times the RTO (tcpi_rto, +-5%), as upstream, not
 *    for ever (a reviewer's finding: scaled as a u32 it became INT_MAX
 *    jiffies, for sockets of every namespace); not at TDF 1/100.
 * Right after each close it reads the socket's timer from /proc/net/tcp,
 * which reports it in host time (clock_t, 10 ms): 60 s (20 s) times the
 * factor, less the host time between the call that moved the socket into
 * its state and the reading (the child brackets it with its clock; a
 * bracket wider than a quarter of the timer is measured again, up to 3
 * times), less 3 ticks (jiffies may lag the clock) and a clock_t, and at
 * most 20 ms more:
 * twice or half the factor fails. Root namespace (the control: 60 s), TDF
 * 10 (600 s, not waited for: the end of the network namespace takes the
 * sockets with it) and TDF 1/100 (0.6 s). At TDF 1/100 the child also
 * waits for the TIME_WAIT and FIN_WAIT2 sockets to go, polling every 100
 * ms of its time (1 ms of host time): the first reading that misses the
 * socket must come 60 s of its CLOCK_MONOTONIC after the close or later
 * (less 3 host ticks: a timer of n jiffies fires after n - 1 and a
 * fraction, less when a late tick left jiffies behind the clock),
 * and the last that saw it at most 15% later (the timer wheel rounds a
 * 150-jiffy timeout up by up to 8 jiffies, 32 ms of host time, 3.2 s of
 * the namespace's); a stall of the guest delays the first, not the last.
 */
#define _GNU_SOURCE
#include "tcp_util.h"

#define NCASES		4
#define LINGER2_S	20
#define WAIT_CAP_NS	(300 * NSEC_PER_SEC)	/* namespace time: 3 s of host time at 1/100 */
#define POLL_NS		(100 * NSEC_PER_MSEC)
#define USER_HZ		100			/* /proc/net/tcp's clock_t */
#define TRIES		3

enum { C_TIME_WAIT, C_FIN_WAIT2, C_LINGER2, C_FIN_NEG };

static const char * const case_name[NCASES] = {
	"TIME_WAIT",
	"orphaned FIN_WAIT2 (tcp_fin_timeout)",
	"orphaned FIN_WAIT2 (TCP_LINGER2 20 s)",
	"orphaned FIN_WAIT2 (tcp_fin_timeout -1: 3.5 RTO)",
};

/* the state /proc/net/tcp shows for each case's client socket */
static const int case_state[NCASES] = { 6, 5, 5, 5 };	/* TCP_TIME_WAIT, TCP_FIN_WAIT2 */

/* C_FIN_NEG: 3.5 times the socket's RTO, which the child reads */
static const i64 case_len_ns[NCASES] = {
	60 * NSEC_PER_SEC, 60 * NSEC_PER_SEC, LINGER2_S * NSEC_PER_SEC, 0,
};

struct meas {
	char err[TU_ERR_LEN];	/* setup or timer reading failed */
	char gone_err[TU_ERR_LEN];	/* waiting for the sockets to go failed */
	i64 timer_ns[NCASES];	/* the socket's timer right after the close, host ns */
	i64 bracket_ns[NCASES];	/* namespace time from the close to the reading */
	int tries[NCASES];
	int linger2;		/* TCP_LINGER2 read back, s */
	i64 rto_ns;		/* C_FIN_NEG: tcpi_rto before the close (namespace time) */
	i64 seen_ns[2];		/* TIME_WAIT, FIN_WAIT2: last seen after the close, namespace ns */
	i64 gone_ns[2];		/* first missed */
};

/* the run's factor, and whether the child waits for the sockets to go */
static i64 tdf_num = 1, tdf_den = 1;
static int measure_gone;

/* How long case @k's socket should wait, in namespace ns */
static i64 case_want_ns(int k, const struct meas *m)
{
	/* 3.5 RTO, as tcp_fin_time() computes it in jiffies */
	return k == C_FIN_NEG ? m->rto_ns * 7 / 2 : case_len_ns[k];
}

/*
 * The negative sysctl's case is not run below a factor of 1: 3.5 RTO is
 * then a few host ticks, which clock_t's 10 ms cannot tell from half.
 */
static int case_runs(int k)
{
	return k != C_FIN_NEG || tdf_num >= tdf_den;
}

/* a namespace duration in host ns at the run's factor */
static i64 to_host(i64 ns)
{
	return ns * tdf_num / tdf_den;
}

/*
 * The timer of the socket on 127.0.0.1:@port in state @state, in host ns,
 * from /proc/net/tcp; 0 when there is no such socket, -1 on error.
 */
static i64 proc_timer(int port, int state)
{
	unsigned int laddr, lport, raddr, rport, st, txq, rxq, tr;
	unsigned long when;
	char line[512];
	i64 ret = 0;
	FILE *f;

	f = fopen("/proc/net/tcp", "re");
	if (!f)
		return fail("/proc/net/tcp");
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return fail("/proc/net/tcp: no header");
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d: %x:%x %x:%x %x %x:%x %x:%lx", &laddr, &lport, &raddr,
			   &rport, &st, &txq, &rxq, &tr, &when) != 9)
			continue;
		if ((int)lport != port || (int)st != state)
			continue;
		/* a socket whose timer is off lingers for ever: report 1 ns */
		ret = tr ? (i64)when * (NSEC_PER_SEC / USER_HZ) : 1;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Wait until case @k's socket is gone: *@seen, the clock before the last reading
 * that saw it, and *@gone, after the first that did not, since @t0.
 */
static int wait_gone(int k, int port, i64 t0, i64 *seen, i64 *gone)
{
	int state = case_state[k];

	for (;;) {
		i64 t = now_ns(), r = proc_timer(port, state);

		if (r < 0)
			return -1;
		if (!r) {
			*gone = now_ns() - t0;
			return 0;
		}
		*seen = t - t0;
		if (*seen > WAIT_CAP_NS) {
			errno = ETIMEDOUT;
			return fail("%s socket still there after %lld s of namespace time",
				    case_name[k], WAIT_CAP_NS / NSEC_PER_SEC);
		}
		sleep_ns(POLL_NS);
	}
}

/*
 * One case: connect, close, read the client socket's timer. *@t0: the
 * clock before the call that moved the socket into its state. The server's
 * end of a FIN_WAIT2 case stays open (its FIN would end FIN_WAIT2).
 */
static int one_case(int k, int l, const struct sockaddr_in *a, struct meas *m, int *port,
		    i64 *t0)
{
	socklen_t len = sizeof(m->linger2);
	int c, s, i, v = LINGER2_S;

	if (conn(l, a, &c, &s))
		return -1;
	*port = port_of(c, 0);
	if (*port < 0)
		return fail("getsockname");
	if (k == C_LINGER2) {
		if (setsockopt(c, IPPROTO_TCP, TCP_LINGER2, &v, sizeof(v)) ||
		    getsockopt(c, IPPROTO_TCP, TCP_LINGER2, &m->linger2, &len))
			return fail("TCP_LINGER2");
	}
	if (k == C_FIN_NEG) {
		struct tcp_info ti;

		/* the sysctl has no floor; a negative one falls to 3.5 RTO */
		if (tinfo(c, &ti) ||
		    sysctl_set("/proc/sys/net/ipv4/tcp_fin_timeout", "-1"))
			return -1;
		m->rto_ns = (i64)ti.tcpi_rto * NSEC_PER_USEC;
	}
	if (k == C_TIME_WAIT) {
		close(c);
		/* the server's FIN moves the client from FIN_WAIT2 to TIME_WAIT */
		sleep_ns(NSEC_PER_MSEC);
		*t0 = now_ns();
		close(s);
	} else {
		*t0 = now_ns();
		close(c);
	}
	/* lo delivers at once, but give the FIN's ACK its softirq */
	for (i = 0; i < 100; i++) {
		m->timer_ns[k] = proc_timer(*port, case_state[k]);
		if (m->timer_ns[k])
			break;
		sleep_ns(NSEC_PER_MSEC / 10);
	}
	m->bracket_ns[k] = now_ns() - *t0;
	if (m->timer_ns[k] <= 0) {
		errno = ENOENT;
		return fail("%s: the client socket (port %d) is not in /proc/net/tcp",
			    case_name[k], *port);
	}
	return 0;
}

static void child(int rfd, int wfd)
{
	static struct meas m;
	struct sockaddr_in a;
	int l, k, port[NCASES];
	i64 t0[NCASES];

	(void)rfd;
	tu_err = m.err;
	if (netns_setup())
		goto out;
	l = listener(&a);
	if (l < 0)
		goto out;
	for (k = 0; k < NCASES; k++) {
		if (!case_runs(k))
			continue;
		/* a stall of the guest between the close and the reading: again */
		do {
			if (one_case(k, l, &a, &m, &port[k], &t0[k]))
				goto out;
		} while (++m.tries[k] < TRIES &&
			 to_host(m.bracket_ns[k]) > to_host(case_want_ns(k, &m)) / 4);
	}
	tu_err = m.gone_err;
	if (measure_gone &&
	    !wait_gone(C_TIME_WAIT, port[C_TIME_WAIT], t0[C_TIME_WAIT], &m.seen_ns[0],
		       &m.gone_ns[0]))
		wait_gone(C_FIN_WAIT2, port[C_FIN_WAIT2], t0[C_FIN_WAIT2], &m.seen_ns[1],
			  &m.gone_ns[1]);
out:
	if (write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(1);
	_exit(0);
}

static void run(const char *factor, i64 num, i64 den, int gone, struct meas *m)
{
	tdf_num = num;
	tdf_den = den;
	measure_gone = gone;
	if (tcp_child_result(factor, child, m, sizeof(*m)))
		snprintf(m->err, sizeof(m->err), "the child died");
}

static double sec(i64 ns)
{
	return (double)ns / NSEC_PER_SEC;
}

/* The factor of the run is tdf_num / tdf_den */
static void report(const struct meas *m, i64 num, i64 den, int gone, const char *w)
{
	i64 tick = tick_ns();
	int k;

	tdf_num = num;
	tdf_den = den;

	if (m->err[0]) {
		ksft_print_msg("%s: %s\n", w, m->err);
		for (k = 0; k < NCASES + (gone ? 2 : 0); k++)
			if (k >= NCASES || case_runs(k))
				ksft_test_result_fail("%s: measured nothing\n", w);
		return;
	}
	for (k = 0; k < NCASES; k++) {
		i64 want = to_host(case_want_ns(k, m)), br = to_host(m->bracket_ns[k]);
		i64 lo, hi;

		if (!case_runs(k))
			continue;
		if (k == C_FIN_NEG) {
			/* tcpi_rto is the RTO in microseconds, rounded */
			lo = want * 95 / 100 - br - 3 * tick - NSEC_PER_SEC / USER_HZ;
			hi = want * 105 / 100 + 20 * NSEC_PER_MSEC;
		} else {
			lo = want - br - 3 * tick - NSEC_PER_SEC / USER_HZ;
			hi = want + 20 * NSEC_PER_MSEC;
		}
		int ok = m->timer_ns[k] >= lo && m->timer_ns[k] <= hi && br <= want / 4;

		if (k == C_LINGER2) {
			ksft_print_msg("%s: TCP_LINGER2 reads %d s\n", w, m->linger2);
			ok &= m->linger2 == LINGER2_S;
		}
		ksft_print_msg("%s: %s timer %.3f s of host time after the close, want %.3f, in [%.3f, %.3f] (read %.3f s of host time after the close, try %d)\n",
			       w, case_name[k], sec(m->timer_ns[k]), sec(want), sec(lo), sec(hi),
			       sec(br), m->tries[k]);
		if (k == C_FIN_NEG)
			ksft_test_result(ok, "%s: %s: 3.5 x tcpi_rto %.3f s (%.3f s host)\n",
					 w, case_name[k], sec(m->rto_ns), sec(want));
		else
			ksft_test_result(ok, "%s: %s lasts %lld s of the namespace's time (%.3f s host)\n",
					 w, case_name[k], case_len_ns[k] / NSEC_PER_SEC, sec(want));
	}
	if (!gone)
		return;
	if (m->gone_err[0])
		ksft_print_msg("%s: %s\n", w, m->gone_err);
	for (k = 0; k < 2; k++) {
		i64 want = case_len_ns[k];
		/*
		 * A timer of n jiffies fires after n - 1 and a fraction, less
		 * when a late tick left jiffies behind the clock at arming
		 * (1.1 ticks seen in the TCG guest): 3 host ticks allowed.
		 */
		int ok = !m->gone_err[0] && m->gone_ns[k] >= want - 3 * tick * den / num &&
			 m->seen_ns[k] <= want + want * 15 / 100;

		ksft_print_msg("%s: the %s socket was there %.2f s after the close, gone %.2f s after it (namespace time)\n",
			       w, case_name[k], sec(m->seen_ns[k]), sec(m->gone_ns[k]));
		ksft_test_result(ok, "%s: the %s socket goes after %lld s of the namespace's time (+15%%)\n",
				 w, case_name[k], want / NSEC_PER_SEC);
	}
}

int main(void)
{
	static struct meas host, slow, fast;

	/* four cases in the root namespace and at 10, three and two waits at 1/100 */
	tcp_test_start(3 * NCASES + 1);

	run(NULL, 1, 1, 0, &host);
	unshare_timens_or_skip();
	run("10", 10, 1, 0, &slow);
	run("1/100", 1, 100, 1, &fast);

	report(&host, 1, 1, 0, "root namespace");
	report(&slow, 10, 1, 0, "TDF 10");
	report(&fast, 1, 100, 1, "TDF 1/100");
	ksft_finished();
	return 0;
}
