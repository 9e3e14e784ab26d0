// SPDX-License-Identifier: GPL-2.0
/*
 * TCP's timestamp option across a change of the factor, on a live
 * connection. TCP writes a segment's TSval for its departure time, and
 * with an EDT qdisc (fq) that time lies ahead: pacing gives each segment
 * a departure one segment's time at the pacing rate after the last one's,
 * and TSQ lets segments into the qdisc that far ahead (more with
 * TCP_TX_DELAY, whose delay it lets in too). The segments queued when the
 * factor goes up carry TSvals mapped through the old, faster map; the
 * segments written after it, through the new one, would carry smaller
 * TSvals, and the receiver's PAWS check would drop them as old
 * duplicates (RFC 7323, 5.3). So a dilated socket's TSval never steps back:
 * it holds the last value sent until the clock passes it.
 *
 * Three runs, each a child in a network namespace of its own (lo at MTU
 * 1500, segments of 2 MSS at most, fq; net.ipv4.tcp_timestamps=2: TSval
 * is the clock itself) in the test's time namespace, first at factor A: a
 * connection on 127.0.0.1 streams at SO_MAX_PACING_RATE 4 Mbit/s (host:
 * TSQ lets about 2 segments, 6-12 ms, into fq ahead of their departure),
 * watched by a packet socket on lo; 400 ms (host) in, the parent writes
 * factor B to the child's /proc/PID/timens_dilation, and stops the stream
 * 1 s later. Runs: A -> B = 1 -> 10 (a container slowed down with its
 * connections open), 1/10 -> 10 (TSval about 10 times the host lead
 * ahead at the change), both with TCP_TX_DELAY 10 ms (of the socket's
 * time: 10 and 1 ms of host time before the change, which TSQ adds to
 * the lead); 10 -> 1/10 (TSval jumps forward: nothing to hold; no
 * TCP_TX_DELAY, which the change would shorten from 100 to 1 ms of host
 * time, so that fq would send the segments written after it first).
 * Per run:
 *
 *  1. the client's data segments, in the order they left, never carry a
 *     smaller TSval than an earlier one (at least 10 seen on each side of
 *     the change, none lost by the capture);
 *  2. no segment was dropped by PAWS (TcpExtPAWSEstab of the namespace
 *     unchanged), and data flowed after the change;
 *  3. once the clock has passed the largest TSval sent, TSval is the
 *     clock again: a byte written in [p0, p1] (TCP_TX_DELAY 0) leaves with
 *     a TSval in [p0, p1], in ms.
 *
 * On the series without the floor (TSval mapped per segment only), points
 * 1 and 2 fail for both increases; a floor held too long fails point 3.
 */
#define _GNU_SOURCE
#include "tcp_sniff.h"

#define NRUNS		3
#define NPOINTS_RUN	3
#define NPOINTS		(NRUNS * NPOINTS_RUN)
#define PACING_RATE	500000		/* bytes/s: 4 Mbit/s (host: not scaled) */
#define TX_DELAY_US	10000		/* TCP_TX_DELAY of the runs that raise the factor */
#define NOTSENT_LOWAT	16384		/* unsent bytes the stream keeps, at most */
#define WRITE_CHUNK	16384		/* bytes per write() */
#define BEFORE_MS	400		/* host ms of streaming before the change */
#define AFTER_MS	1000		/* and after it */
#define MIN_SEGS	10		/* data segments wanted each side of the change */
#define CATCH_UP_MAX_MS	1000		/* the clock's wait for the last TSval, at most */
#define SETTLE_HOST_MS	20		/* point 3: pacing's next departure is past, host */
#define REPLY_WAIT_MS	15000		/* the parent's wait for the child, host */
#define NSEG		512		/* segments read from the packet socket at once */

struct run_meas {
	char err[TU_ERR_LEN];		/* the child's setup or stream failure, "" if none */
	char probe_err[TU_ERR_LEN];	/* point 3's failure, "" if none */
	long long lost;			/* segments the capture lost, -1: unknown */
	int before, after;		/* data segments seen before/after the change */
	int steps_back;			/* segments with a smaller TSval than an earlier one */
	unsigned int max_back;		/* the largest step back, ms */
	int lead;			/* max TSval less the clock, after the change, ms */
	long long bytes_after;		/* bytes read after the change */
	long long paws;			/* TcpExtPAWSEstab at the end */
	unsigned int retrans;		/* the client's tcpi_total_retrans */
	unsigned int last_ts;		/* the largest TSval of the stream */
	i64 caught_up_ms;		/* the clock's wait for it, ms */
	unsigned int probe_ts;		/* point 3: the byte's TSval and bracket */
	i64 p0, p1;
};

static struct run_meas *M;
static i64 settle_ns;	/* SETTLE_HOST_MS in the namespace's time after the change */
static int tx_delay_us;	/* the run's TCP_TX_DELAY */

static int setsockopt_int(int fd, int level, int opt, int val, const char *what)
{
	if (setsockopt(fd, level, opt, &val, sizeof(val)))
		return fail("setsockopt(%s)", what);
	return 0;
}

/*
 * Stream from @c to @s until the parent says stop, following the client's
 * data segments' TSvals; the parent's 'C' marks the change of the factor.
 */
static int stream(int c, int s, int rfd, struct seg *segs)
{
	int sport = port_of(c, 0), changed = 0, stopping = 0, have_last = 0, k, n;
	long long sent = 0, got = 0;
	unsigned int last = 0;

	M->lead = INT_MIN;
	if (fcntl(c, F_SETFL, O_NONBLOCK) || fcntl(s, F_SETFL, O_NONBLOCK))
		return fail("O_NONBLOCK");
	while (!stopping || got < sent) {
		struct pollfd p[4] = {
			{ .fd = c, .events = stopping ? 0 : POLLOUT },
			{ .fd = s, .events = POLLIN },
			{ .fd = sniffer, .events = POLLIN },
			{ .fd = rfd, .events = stopping ? 0 : POLLIN },
		};
		ssize_t r;

		if (poll(p, 4, 100) < 0)
			return fail("poll");
		r = pump_step(p, c, s, WRITE_CHUNK, &sent, &got);
		if (r < 0)
			return -1;
		if (changed)
			M->bytes_after += r;
		/* segments that left before the parent's word count as before */
		n = sniff(segs, NSEG);
		for (k = 0; k < n; k++) {
			const struct seg *g = &segs[k];

			if (g->sport != sport || !g->len || !g->has_ts)
				continue;
			if (have_last && (int)(g->tsval - last) < 0) {
				M->steps_back++;
				if (last - g->tsval > M->max_back)
					M->max_back = last - g->tsval;
			}
			if (!have_last || (int)(g->tsval - last) > 0)
				last = g->tsval;
			have_last = 1;
			if (changed) {
				int lead = (int)(g->tsval - ms_of(now_ns()));

				M->after++;
				if (lead > M->lead)
					M->lead = lead;
			} else {
				M->before++;
			}
		}
		if (p[3].revents & (POLLIN | POLLHUP)) {
			char w = 0;

			if (read(rfd, &w, 1) != 1 || (w != 'C' && w != 'S')) {
				errno = EPROTO;
				return fail("the parent's word");
			}
			changed |= w == 'C';
			stopping = w == 'S';
		}
	}
	M->last_ts = last;
	M->lost = sniff_lost();
	return 0;
}

static void child(int rfd, int wfd)
{
	static struct seg segs[NSEG];
	struct run_meas m = { 0 };
	struct sockaddr_in a;
	struct tcp_info ti;
	struct seg probe = { 0 };
	int l = -1, c = -1, s = -1;
	char status = 'E';	/* 'R' once set up: the parent changes the factor */
	i64 wait;

	M = &m;
	tu_err = m.err;
	if (netns_setup() || sysctl_set("/proc/sys/net/ipv4/tcp_timestamps", "2") ||
	    lo_mtu(1500) || run_cmd(IP " link set dev lo gso_max_segs 2") ||
	    tc("add dev lo root fq") || sniff_open())
		goto out;
	l = listener(&a);
	if (l < 0 || conn(l, &a, &c, &s) ||
	    setsockopt_int(c, SOL_SOCKET, SO_MAX_PACING_RATE, PACING_RATE, "SO_MAX_PACING_RATE") ||
	    setsockopt_int(c, IPPROTO_TCP, TCP_TX_DELAY, tx_delay_us, "TCP_TX_DELAY") ||
	    setsockopt_int(c, IPPROTO_TCP, TCP_NOTSENT_LOWAT, NOTSENT_LOWAT, "TCP_NOTSENT_LOWAT"))
		goto out;
	status = 'R';
	if (write(wfd, &status, 1) != 1)
		_exit(1);
	if (stream(c, s, rfd, segs) || tinfo(c, &ti))
		goto out;
	m.retrans = ti.tcpi_total_retrans;
	m.paws = netstat_counter("TcpExt", "PAWSEstab");	/* -1, not found: point 2 fails */

	/*
	 * Point 3 (its failures fail it alone): wait for the clock to pass the
	 * last TSval, and for pacing's next departure time (the last one plus
	 * a segment at PACING_RATE) to be past, then send one byte.
	 */
	tu_err = m.probe_err;
	wait = (i64)(int)(m.last_ts + 1 - ms_of(now_ns()));
	m.caught_up_ms = wait;
	if (wait > CATCH_UP_MAX_MS) {
		errno = ERANGE;
		fail("the last TSval, %u, is %lld ms ahead of the clock at the end",
		     m.last_ts, (long long)wait);
		goto out;
	}
	sleep_ns(wait * NSEC_PER_MSEC > settle_ns ? (wait + 1) * NSEC_PER_MSEC : settle_ns);
	if (fcntl(c, F_SETFL, 0) || fcntl(s, F_SETFL, 0)) {
		fail("blocking mode");
		goto out;
	}
	if (setsockopt_int(c, IPPROTO_TCP, TCP_TX_DELAY, 0, "TCP_TX_DELAY 0") ||
	    send_byte(c, s, &m.p0, &m.p1, segs, NSEG, &probe))
		goto out;
	m.probe_ts = probe.tsval;
out:
	drop(c);
	drop(s);
	if (l >= 0)
		close(l);
	if ((status == 'E' && write(wfd, &status, 1) != 1) ||
	    write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(1);
	_exit(0);
}

/* ------------------------------------------------------------------ */

/* One byte from the child within REPLY_WAIT_MS; 0 or -1 */
static int wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, REPLY_WAIT_MS) == 1 ? 0 : -1;
}

static void run(const char *from, const char *to, double tdf_to, struct run_meas *m)
{
	char status = 0, word;
	int rfd, wfd, err = 0;
	pid_t pid;

	settle_ns = (i64)(SETTLE_HOST_MS * NSEC_PER_MSEC / tdf_to);
	tx_delay_us = tdf_to > 1 ? TX_DELAY_US : 0;
	pid = dil_fork_child(from, child, &rfd, &wfd);
	/* the child's status: 'R' (set up) or 'E' (failed, its report follows) */
	if (wait_readable(rfd) || read(rfd, &status, 1) != 1)
		goto died;
	if (status == 'R') {
		sleep_ns(BEFORE_MS * NSEC_PER_MSEC);	/* the parent runs on host time */
		err = dil_write(pid, to);
		word = 'C';
		if (!err && write(wfd, &word, 1) == 1)
			sleep_ns(AFTER_MS * NSEC_PER_MSEC);
		/* a child that failed has reported and gone: EPIPE, not SIGPIPE */
		word = 'S';
		if (write(wfd, &word, 1) != 1)
			ksft_print_msg("the child left before the end of its stream\n");
	}
	if (wait_readable(rfd) || read_full(rfd, m, sizeof(*m)))
		goto died;
	if (err && !m->err[0])
		snprintf(m->err, TU_ERR_LEN, "writing %s to /proc/%d/timens_dilation: %s", to,
			 (int)pid, strerror(-err));
	goto out;
died:
	memset(m, 0, sizeof(*m));
	snprintf(m->err, TU_ERR_LEN, "the child died or did not answer");
	kill(pid, SIGKILL);
out:
	close(rfd);
	close(wfd);
	waitpid(pid, NULL, 0);
}

static void report(const struct run_meas *m, const char *w)
{
	if (m->err[0]) {
		ksft_print_msg("%s: %s\n", w, m->err);
		fail_points(NPOINTS_RUN, "the run failed");
		return;
	}
	ksft_print_msg("%s: %d data segments before the change, %d after; %d stepped back (at most %u ms); after it TSval led the clock by up to %d ms; at the end the last TSval, %u, was %lld ms ahead of it\n",
		       w, m->before, m->after, m->steps_back, m->max_back, m->lead, m->last_ts,
		       (long long)m->caught_up_ms);
	ksft_test_result(!m->steps_back && m->before >= MIN_SEGS && m->after >= MIN_SEGS &&
			 !m->lost,
			 "%s: TSval never steps back across the change (%d + %d segments, %lld lost by the capture)\n",
			 w, m->before, m->after, m->lost);
	ksft_print_msg("%s: TcpExtPAWSEstab %lld, client's tcpi_total_retrans %u, %lld bytes after the change\n",
		       w, m->paws, m->retrans, m->bytes_after);
	ksft_test_result(!m->paws && m->bytes_after > 0,
			 "%s: no segment dropped by PAWS, data flowing after the change\n", w);
	if (m->probe_err[0])
		ksft_print_msg("%s: %s\n", w, m->probe_err);
	ksft_test_result(!m->probe_err[0] && in_ms(m->probe_ts, m->p0, m->p1, 0),
			 "%s: then TSval is the clock again: %u in [%u, %u] ms\n",
			 w, m->probe_ts, ms_of(m->p0), ms_of(m->p1));
}

int main(void)
{
	static const struct { const char *from, *to; double tdf_to; const char *what; } runs[NRUNS] = {
		{ "1", "10", 10, "TDF 1 -> 10" },
		{ "1/10", "10", 10, "TDF 1/10 -> 10" },
		{ "10", "1/10", 0.1, "TDF 10 -> 1/10" },
	};
	static struct run_meas m[NRUNS];
	int k;

	tcp_test_start(NPOINTS);
	signal(SIGPIPE, SIG_IGN);
	unshare_timens_or_skip();
	for (k = 0; k < NRUNS; k++)
		run(runs[k].from, runs[k].to, runs[k].tdf_to, &m[k]);
	for (k = 0; k < NRUNS; k++)
		report(&m[k], runs[k].what);
	ksft_finished();
	return 0;
}
