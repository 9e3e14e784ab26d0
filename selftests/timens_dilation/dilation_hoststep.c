// SPDX-License-Identifier: GPL-2.0
/*
 * The host steps and slews its wall clock while a namespace is dilated
 * (issue 14, defect 3). A server in a namespace dilated once, at TDF 10,
 * reads its clocks while the test, in the root namespace, steps the host's
 * CLOCK_REALTIME back by an hour (settimeofday()), then forward by an hour
 * (clock_settime()), then slews it (adjtimex() ADJ_FREQUENCY and
 * ADJ_OFFSET_SINGLESHOT):
 *  - each step moves the namespace's CLOCK_REALTIME and CLOCK_TAI by 1/TDF
 *    of the host's step (the step is measured as the change of the host's
 *    REALTIME - MONOTONIC), REALTIME_COARSE and time() follow them, and
 *    MONOTONIC and BOOTTIME do not step;
 *  - after each step the wall clocks run at 1/TDF of the host rate, both
 *    sides bounded and resolving TDF x2 and /2 (dilation.h);
 *  - during a slew the namespace's wall clocks run at 1/TDF of the slewed
 *    host wall clock, and its REALTIME - MONOTONIC stays constant;
 *  - an absolute clock_nanosleep() on CLOCK_REALTIME in the namespace
 *    expires when the namespace's clock reaches its time, across host
 *    steps: not early after a step back, at once after a step past it.
 * Before the fix a step back moved the namespace's REALTIME by the whole
 * hour, it then ran at host rate, and REALTIME_COARSE and time() stood
 * still at the value they had reached.
 *
 * The host clock is put back at exit, whatever happens: the test steps it
 * back by what it stepped, measured against CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <sys/timex.h>
#include "dilation.h"

#define TDF_STR		"10"
#define TDF_N		10
#define STEP_NS		(3600 * NSEC_PER_SEC)
#define TRIES		5
#define INTERVAL_NS	(250 * NSEC_PER_MSEC)
#define SLEW_FREQ_PPM	500
#define SLEW_OFFSET_US	200000

#define NPOINTS		10

/* clock indexes in clocks[] (dilation.h) */
enum { C_RT = 0, C_RT_COARSE = 1, C_MONO = 2, C_BOOT = 5, C_TAI = 6 };

static i64 wall_at_start;	/* host REALTIME - MONOTONIC when we started */
static struct timex tx_at_start;

/*
 * Host REALTIME - MONOTONIC, from the narrowest of a few MONOTONIC pairs
 * around a REALTIME reading: off by at most half of *@width.
 */
static i64 host_wall_offset_w(i64 *width)
{
	i64 best = 0, m0, r, m1;
	int k;

	*width = LLONG_MAX;
	for (k = 0; k < 5; k++) {
		m0 = host_ns(CLOCK_MONOTONIC);
		r = host_ns(CLOCK_REALTIME);
		m1 = host_ns(CLOCK_MONOTONIC);
		if (m1 - m0 < *width) {
			*width = m1 - m0;
			best = r - (m0 + (m1 - m0) / 2);
		}
	}
	return best;
}

static i64 host_wall_offset(void)
{
	i64 width;

	return host_wall_offset_w(&width);
}

static int host_step(i64 delta, int use_settimeofday)
{
	i64 now = host_ns(CLOCK_REALTIME) + delta;
	struct timespec ts = { now / NSEC_PER_SEC, now % NSEC_PER_SEC };
	struct timeval tv = { now / NSEC_PER_SEC, now % NSEC_PER_SEC / NSEC_PER_USEC };

	if (use_settimeofday)
		return settimeofday(&tv, NULL) ? errno : 0;
	return clock_settime(CLOCK_REALTIME, &ts) ? errno : 0;
}

/* In the server: sleep until its CLOCK_REALTIME + arg ms; v0 = the deadline, v1 = REALTIME after */
enum { OP_ABS_SLEEP = OP_EXT };

static void ext(const struct req *rq, struct resp *rs)
{
	struct timespec ts;
	i64 t = 0;

	if (rq->op != OP_ABS_SLEEP) {
		rs->err = EINVAL;
		return;
	}
	rs->err = sys_cg(CLOCK_REALTIME, &t);
	if (rs->err)
		return;
	t += (i64)rq->arg * NSEC_PER_MSEC;
	ts.tv_sec = t / NSEC_PER_SEC;
	ts.tv_nsec = t % NSEC_PER_SEC;
	rs->err = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
	rs->v[0] = t;
	if (!rs->err)
		rs->err = sys_cg(CLOCK_REALTIME, &rs->v[1]);
}

/*
 * The server sleeps until its CLOCK_REALTIME + @ms; after @before_ns of host
 * time the host's clock steps by @step. The server must wake between @lo_ns
 * and @hi_ns of namespace time after its deadline.
 */
static void abs_sleep_across_step(struct srv *s, int ms, i64 before_ns, i64 step, i64 lo_ns,
				  i64 hi_ns, const char *what)
{
	struct req rq = { OP_ABS_SLEEP, ms };
	struct resp rs;
	int err, ok;

	if (write(s->wfd, &rq, sizeof(rq)) != sizeof(rq)) {
		ksft_test_result_fail("%s: the server is gone\n", what);
		return;
	}
	sleep_ns(before_ns);
	err = host_step(step, 0);
	if (read_full(s->rfd, &rs, sizeof(rs))) {
		ksft_test_result_fail("%s: the server is gone\n", what);
		return;
	}
	ok = !err && !rs.err && rs.v[1] - rs.v[0] >= lo_ns && rs.v[1] - rs.v[0] <= hi_ns;
	ksft_print_msg("%s: woke %+.3Lf ms after its deadline (bound [%lld, %lld] ms)%s%s\n", what,
		       (long double)(rs.v[1] - rs.v[0]) / NSEC_PER_MSEC, lo_ns / NSEC_PER_MSEC,
		       hi_ns / NSEC_PER_MSEC,
		       err ? ", step failed: " : "", err ? strerror(err) : "");
	ksft_test_result(ok, "%s: an absolute CLOCK_REALTIME sleep wakes when the namespace's clock passes its deadline\n",
			 what);
}

/* Put the host's clock and its frequency back as they were */
static void restore_host_clock(void)
{
	struct timex tx = { 0 };
	i64 off = host_wall_offset() - wall_at_start;

	tx.modes = ADJ_OFFSET_SINGLESHOT;	/* offset 0: end any slew */
	adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_FREQUENCY;
	tx.freq = tx_at_start.freq;
	adjtimex(&tx);
	if (off > NSEC_PER_SEC / 10 || off < -NSEC_PER_SEC / 10)
		host_step(-off, 0);
}

/* One bracketed reading of the server: @op on clock index @c */
struct reading {
	i64 v, h0, h1;		/* value; host MONOTONIC around it */
	int err;
};

static struct reading read_clock(struct srv *s, int op, int c, int vi)
{
	struct reading r = { 0 };
	struct resp rs = { 0 };

	if (srv_bracket(s, op, c, CLOCK_MONOTONIC, TRIES, &r.h0, &r.h1, &rs))
		r.err = -1;
	else
		r.err = rs.err;
	r.v = rs.v[vi];
	return r;
}

/* What the step checks read: op, clock index, value index, slack, whether it steps */
static const struct probe {
	const char *name;
	int op, c, vi;
	int wall;		/* steps with the host's wall clock */
	int coarse;		/* 1: tick granularity, 2: seconds */
} probes[] = {
	{ "CLOCK_REALTIME (vdso)",	  OP_CG_VDSO,  C_RT,	    0, 1, 0 },
	{ "CLOCK_REALTIME (syscall)",	  OP_CG_SYS,   C_RT,	    0, 1, 0 },
	{ "CLOCK_TAI (vdso)",		  OP_CG_VDSO,  C_TAI,	    0, 1, 0 },
	{ "CLOCK_REALTIME_COARSE (vdso)", OP_CG_VDSO,  C_RT_COARSE, 0, 1, 1 },
	{ "time() (vdso)",		  OP_TIME_VDSO, 0,	    1, 1, 2 },
	{ "time() (syscall)",		  OP_TIME_SYS, 0,	    1, 1, 2 },
	{ "CLOCK_MONOTONIC (vdso)",	  OP_CG_VDSO,  C_MONO,	    0, 0, 0 },
	{ "CLOCK_BOOTTIME (syscall)",	  OP_CG_SYS,   C_BOOT,	    0, 0, 0 },
};
#define NPROBES	((int)ARRAY_SIZE(probes))

/*
 * Step the host's wall clock by @delta and check that each probe moved by
 * what it must: (host step if it is a wall clock + host MONOTONIC elapsed)
 * / TDF, up to its granularity. Returns per probe 1 if it did. The points
 * are the caller's.
 */
static int step_and_check(struct srv *s, i64 delta, int use_settimeofday, int *ok)
{
	struct reading a[NPROBES], b[NPROBES];
	i64 tick = tick_ns(), off0, off1, w0, w1, step;
	int k, err;

	for (k = 0; k < NPROBES; k++)
		a[k] = read_clock(s, probes[k].op, probes[k].c, probes[k].vi);
	off0 = host_wall_offset_w(&w0);
	err = host_step(delta, use_settimeofday);
	off1 = host_wall_offset_w(&w1);
	if (err) {
		ksft_print_msg("%s: %s\n", use_settimeofday ? "settimeofday" : "clock_settime",
			       strerror(err));
		return -1;
	}
	for (k = 0; k < NPROBES; k++)
		b[k] = read_clock(s, probes[k].op, probes[k].c, probes[k].vi);
	step = off1 - off0;
	ksft_print_msg("host wall clock stepped by %+.6Lf s (%s), known to +-%lld ns\n",
		       (long double)step / NSEC_PER_SEC,
		       use_settimeofday ? "settimeofday" : "clock_settime", (w0 + w1) / 2);

	for (k = 0; k < NPROBES; k++) {
		const struct probe *p = &probes[k];
		i64 dmin = b[k].h0 - a[k].h1, dmax = b[k].h1 - a[k].h0;
		i64 jump = p->wall ? step : 0;
		/* the step is known to (w0 + w1) / 2, the map rounds by 1 ns */
		i64 slack = (p->wall ? (w0 + w1) / 2 / TDF_N + 1 : 0) + 2;
		i64 lo, hi, d;

		if (a[k].err || b[k].err) {
			ksft_print_msg("%s: %s\n", p->name, strerror(a[k].err > 0 ? a[k].err :
								     b[k].err > 0 ? b[k].err : EPIPE));
			ok[k] = 0;
			continue;
		}
		if (p->coarse == 1)
			slack += tick / TDF_N + tick;
		else if (p->coarse == 2)
			slack += NSEC_PER_SEC;
		/* the elapsed time, and the host's step, at 1/TDF */
		lo = (jump + dmin) / TDF_N - slack;
		hi = (jump + dmax) / TDF_N + slack;
		d = b[k].v - a[k].v;
		ok[k] = d >= lo && d <= hi;
		ksft_print_msg("%s moved by %+.6Lf s, expected [%+.6Lf, %+.6Lf] s%s\n", p->name,
			       (long double)d / NSEC_PER_SEC, (long double)lo / NSEC_PER_SEC,
			       (long double)hi / NSEC_PER_SEC, ok[k] ? "" : "  <== WRONG");
	}
	return 0;
}

/*
 * REALTIME_COARSE and time() follow REALTIME after a step: the coarse clock
 * at most a host tick (at 1/TDF) and the reading's duration behind the fine
 * one and never ahead; time() is the coarse clock's seconds.
 */
static int coarse_follows(struct srv *s)
{
	static const int ops[] = { OP_TIME_VDSO, OP_TIME_SYS };
	/* a tick at 1/TDF, and the time the reading takes: far below a step */
	i64 limit = tick_ns() / TDF_N + NSEC_PER_SEC;
	struct resp rs;
	int k, ok = 1;

	for (k = 0; k < (int)ARRAY_SIZE(ops); k++) {
		i64 lag, sec;

		if (srv_call(s, ops[k], 0, &rs) || rs.err) {
			ksft_print_msg("OP_TIME %d: %s\n", ops[k], strerror(rs.err ? rs.err : EPIPE));
			ok = 0;
			continue;
		}
		/* v0 = REALTIME_COARSE, v1 = time(), v2 = REALTIME, read in that order */
		lag = rs.v[2] - rs.v[0];
		sec = rs.v[1] / NSEC_PER_SEC;
		ksft_print_msg("%s: REALTIME - REALTIME_COARSE = %lld us, time() - coarse seconds = %lld\n",
			       k ? "syscall" : "vdso", lag / NSEC_PER_USEC, sec - rs.v[0] / NSEC_PER_SEC);
		ok &= lag >= 0 && lag <= limit;
		ok &= sec >= rs.v[0] / NSEC_PER_SEC && sec <= rs.v[2] / NSEC_PER_SEC;
	}
	return ok;
}

/* Rates of the wall clocks and MONOTONIC against the same host clock */
static int wall_rates(struct srv *s, const char *when)
{
	static const struct { int op, clk; } which[] = {
		{ OP_CG_VDSO, C_RT }, { OP_CG_SYS, C_RT }, { OP_CG_VDSO, C_TAI },
		{ OP_CG_VDSO, C_RT_COARSE }, { OP_CG_VDSO, C_MONO },
	};
	int n = ARRAY_SIZE(which), k, ok = 1;
	struct rate_item it[ARRAY_SIZE(which)];
	char note[160];
	i64 tick = tick_ns();

	memset(it, 0, sizeof(it));
	for (k = 0; k < n; k++) {
		int c = which[k].clk;

		it[k].op = which[k].op;
		it[k].arg = c;
		it[k].host = clocks[c].host;
		it[k].slack = 1 + (clocks[c].coarse ? (tick + TDF_N - 1) / TDF_N : 0);
		it[k].expect = tdf_rate(TDF_N, 1);
	}
	rate_rounds(s, it, n, RATE_ROUNDS, TRIES, INTERVAL_NS, when);
	for (k = 0; k < n; k++) {
		const struct rate_item *x = &it[k];
		const struct rate_out *o = &x->acc.bo;
		int c = which[k].clk;

		if (x->err) {
			ksft_print_msg("%s: %s: %s\n", when, clocks[c].name,
				       x->err < 0 ? "server gone" : strerror(x->err));
			ok = 0;
			continue;
		}
		ksft_print_msg("%s: %s %s: rate %.9Lf against host %s, expected %.9Lf, resolution +-%.4Lf%%%s\n",
			       when, clocks[c].name, which[k].op == OP_CG_VDSO ? "vdso" : "syscall",
			       o->meas, clocks[x->host == CLOCK_REALTIME ? C_RT :
					       x->host == CLOCK_TAI ? C_TAI :
					       x->host == CLOCK_MONOTONIC ? C_MONO : C_RT_COARSE].name,
			       o->expect, o->unc * 100, rate_acc_note(&x->acc, note, sizeof(note)));
		ok &= rate_acc_ok(&x->acc);
	}
	return ok;
}

/*
 * The namespace's REALTIME - MONOTONIC, from the narrowest of a few
 * MONOTONIC pairs around a REALTIME reading: off by at most half of
 * *@width. LLONG_MIN if the server is gone.
 */
static i64 ns_wall_offset(struct srv *s, i64 *width)
{
	struct resp m0, r, m1;
	i64 best = 0;
	int k;

	*width = LLONG_MAX;
	for (k = 0; k < 5; k++) {
		if (srv_call(s, OP_CG_VDSO, C_MONO, &m0) || srv_call(s, OP_CG_VDSO, C_RT, &r) ||
		    srv_call(s, OP_CG_VDSO, C_MONO, &m1) || m0.err || r.err || m1.err)
			return LLONG_MIN;
		if (m1.v[0] - m0.v[0] < *width) {
			*width = m1.v[0] - m0.v[0];
			best = r.v[0] - (m0.v[0] + *width / 2);
		}
	}
	return best;
}

static void slew(struct srv *s, const char *what, struct timex *tx)
{
	i64 off0, off1, w0, w1, bound;
	int ok, err;

	off0 = ns_wall_offset(s, &w0);
	err = adjtimex(tx) < 0 ? errno : 0;
	if (err) {
		ksft_test_result_fail("%s: adjtimex: %s\n", what, strerror(err));
		return;
	}
	ok = wall_rates(s, what);
	off1 = ns_wall_offset(s, &w1);
	restore_host_clock();
	/* constant: the two estimates differ by their errors and the maps' rounding */
	bound = (w0 + w1) / 2 + 4;
	ksft_print_msg("%s: the namespace's REALTIME - MONOTONIC moved by %lld ns (bound +-%lld)\n", what,
		       off1 - off0, bound);
	ok &= off0 != LLONG_MIN && off1 != LLONG_MIN && llabs(off1 - off0) <= bound;
	ksft_test_result(ok, "%s: the wall clocks run at 1/TDF of the slewed host clock, REALTIME - MONOTONIC constant\n",
			 what);
}

int main(void)
{
	int ok[NPROBES], k, all, mono;
	struct srv s = { 0 };
	struct timex tx = { 0 };

	start_vdso_test();
	if (geteuid())
		ksft_exit_skip("must run as root: it steps the host's clock\n");
	if (adjtimex(&tx_at_start) < 0)
		ksft_exit_fail_msg("adjtimex: %s\n", strerror(errno));
	wall_at_start = host_wall_offset();
	atexit(restore_host_clock);

	unshare_timens_or_skip();
	k = dil_write(DIL_SELF, TDF_STR);
	if (k)
		ksft_exit_fail_msg("writing %s to /proc/self/timens_dilation: %s\n", TDF_STR, strerror(-k));
	srv_ext = ext;
	if (srv_start(&s))
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	ksft_set_plan(NPOINTS);
	sleep_ns(200 * NSEC_PER_MSEC);

	/* Back by an hour, past the anchor */
	if (step_and_check(&s, -STEP_NS, 1, ok)) {
		fail_points(NPOINTS, "cannot step the host's clock");
		ksft_finished();
	}
	for (all = 1, k = 0; k < NPROBES; k++)
		all &= !probes[k].wall || probes[k].coarse || ok[k];
	ksft_test_result(all, "host clock stepped back 1 h: REALTIME and TAI step back by 1/TDF of it\n");
	ksft_test_result(ok[3] && ok[4] && ok[5] && coarse_follows(&s),
			 "host clock stepped back 1 h: REALTIME_COARSE and time() follow REALTIME\n");
	ksft_test_result(ok[6] && ok[7], "host clock stepped back 1 h: MONOTONIC and BOOTTIME do not step\n");
	ksft_test_result(wall_rates(&s, "after the step back"),
			 "after the step back the wall clocks run at 1/TDF (REALTIME, TAI, REALTIME_COARSE)\n");

	/* Forward by an hour */
	if (step_and_check(&s, STEP_NS, 0, ok)) {
		fail_points(NPOINTS - 4, "cannot step the host's clock");
		ksft_finished();
	}
	for (all = 1, mono = 1, k = 0; k < NPROBES; k++) {
		if (probes[k].wall)
			all &= ok[k];
		else
			mono &= ok[k];
	}
	ksft_test_result(all && mono && coarse_follows(&s),
			 "host clock stepped forward 1 h: the wall clocks step by 1/TDF of it, the monotonic ones do not\n");
	ksft_test_result(wall_rates(&s, "after the step forward"),
			 "after the step forward the wall clocks run at 1/TDF\n");

	/* Slews: the frequency at its limit, then an old-style adjtime() */
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_FREQUENCY;
	tx.freq = SLEW_FREQ_PPM * 65536L;
	slew(&s, "host frequency +500 ppm", &tx);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET_SINGLESHOT;
	tx.offset = SLEW_OFFSET_US;
	slew(&s, "host slewing by +200 ms (adjtime)", &tx);

	/*
	 * Absolute sleeps across steps: 0.5 s of namespace time (5 s of host
	 * time), the host stepping back 10 s after 1 s: the sleep must last
	 * until the namespace's clock gets there, 1 s of namespace time later
	 * than without the step: it wakes 0-100 ms after its deadline. Then
	 * 10 s, the host stepping 200 s forward after 1 s: the namespace's
	 * clock jumps from 0.1 s to 20.1 s into the sleep, and the sleep ends
	 * at once, 10.1 s past its deadline (not after 100 s of host time,
	 * at its deadline).
	 */
	abs_sleep_across_step(&s, 500, NSEC_PER_SEC, -10 * NSEC_PER_SEC, 0, 100 * NSEC_PER_MSEC,
			      "host clock stepped back 10 s during the sleep");
	abs_sleep_across_step(&s, 10000, NSEC_PER_SEC, 200 * NSEC_PER_SEC, 10 * NSEC_PER_SEC,
			      10400 * NSEC_PER_MSEC, "host clock stepped 200 s past the deadline");
	restore_host_clock();

	srv_stop(&s);
	ksft_finished();
	return 0;
}
