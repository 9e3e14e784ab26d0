// SPDX-License-Identifier: GPL-2.0
/*
 * Rates of the clocks of a dilated time namespace, measured against the
 * host (root time namespace), for TDF in {1/1000, 1, 2.5, 10, 1000}:
 * clock_gettime() of every clock through the vDSO entry point and through
 * syscall(SYS_clock_gettime), gettimeofday(), time(), clock_getres(),
 * /proc/uptime, sysinfo().uptime, /proc/PID/stat start time, CPU-time clocks
 * (not dilated); whether the vDSO really answers in user space; and that
 * changing the TDF of a running namespace makes no clock jump.
 *
 * See dilation.h for the bracketing model and docs/interface.md for the spec.
 */
#define _GNU_SOURCE
#include <math.h>
#include "dilation.h"

static const struct tdf tdfs[] = {
	{ "0.001", 1, 1000, "1/1000" },
	{ "1",	   1, 1,    "1" },
	{ "2.5",   5, 2,    "5/2" },
	{ "10",	   10, 1,   "10" },
	{ "1000",  1000, 1, "1000" },
};
#define NTDF	((int)ARRAY_SIZE(tdfs))

#define INTERVAL_NS	(250 * NSEC_PER_MSEC)	/* host time between A and B */
#define TRIES		5			/* exchanges per reading, narrowest kept */

enum kind { K_CLOCK, K_GTOD, K_TIME, K_UPTIME, K_SYSINFO };

struct item {
	char name[64];
	enum kind kind;
	int op, arg;
	clockid_t host;		/* host clock bracketing the reading */
	i64 slack;		/* per-reading granularity bound, ns */
	int vi;			/* which resp value is the clock */
	const char *skip;	/* reason not to run, or NULL */
	struct resp r[2];	/* snapshots A, B */
	i64 h0[2], h1[2];
	int gone;		/* server died */
	int settled;		/* no more rounds needed */
};

static int alarm_ok[NCLOCKS];
static i64 tick;
static int root_mask;
static int ncpus;

static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int a, b, n = 0;

	if (f) {
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			if (fscanf(f, "-%d", &b) != 1)
				b = a;
			n += b - a + 1;
			if (fgetc(f) != ',')
				break;
		}
		fclose(f);
	}
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 ? n : 1;
}

/* ceil(a * d / n) for the granularity of a clock dilated by n/d */
static i64 dil_ceil(i64 a, i64 n, i64 d)
{
	return (i64)(((__int128)a * d + n - 1) / n);
}

static int build_items(struct item *it, i64 n, i64 d)
{
	int k = 0, i, m;

	for (i = 0; i < NCLOCKS; i++) {
		for (m = 0; m < 2; m++) {
			struct item *x;

			if (m == 0 && !clocks[i].vdso)
				continue;
			x = &it[k++];
			memset(x, 0, sizeof(*x));
			snprintf(x->name, sizeof(x->name), "%s %s", clocks[i].name,
				 m ? "syscall" : "vdso");
			x->kind = K_CLOCK;
			x->op = m ? OP_CG_SYS : OP_CG_VDSO;
			x->arg = i;
			x->host = clocks[i].host;
			/*
			 * Bracketing a coarse reading with the same coarse host
			 * clock is exact (both follow the same tick); allow one
			 * dilated tick anyway, for implementations whose coarse
			 * anchor is taken from a different view.
			 */
			x->slack = 1 + (clocks[i].coarse ? dil_ceil(tick, n, d) : 0);
			if (!alarm_ok[i])
				x->skip = "clock not readable here (alarm clocks need an RTC)";
			else if (m == 0 && !vdso.clock_gettime)
				x->skip = "no vDSO clock_gettime found";
		}
	}
	for (m = 0; m < 2; m++) {
		struct item *x = &it[k++];

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "gettimeofday %s", m ? "syscall" : "vdso");
		x->kind = K_GTOD;
		x->op = m ? OP_GTOD_SYS : OP_GTOD_VDSO;
		x->host = CLOCK_REALTIME;
		x->slack = NSEC_PER_USEC + 1;
		if (m == 0 && !vdso.gettimeofday)
			x->skip = "no vDSO gettimeofday found";
	}
	for (m = 0; m < 2; m++) {
		struct item *x = &it[k++];

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "time %s", m ? "syscall" : "vdso");
		x->kind = K_TIME;
		x->op = m ? OP_TIME_SYS : OP_TIME_VDSO;
		x->host = CLOCK_REALTIME;
		x->vi = 1;
		/* 1 s granularity, plus a dilated tick if time() follows the coarse clock */
		x->slack = NSEC_PER_SEC + dil_ceil(tick, n, d) + 1;
		if (m == 0 && !vdso.time)
			x->skip = "no vDSO time() on this architecture";
#ifndef SYS_time
		if (m == 1)
			x->skip = "no time system call on this architecture";
#endif
	}
	{
		struct item *x = &it[k++];

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "/proc/uptime");
		x->kind = K_UPTIME;
		x->op = OP_UPTIME;
		x->host = CLOCK_BOOTTIME;
		x->slack = 10 * NSEC_PER_MSEC + 1;	/* printed in 1/100 s */
	}
	{
		struct item *x = &it[k++];

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "sysinfo().uptime");
		x->kind = K_SYSINFO;
		x->op = OP_SYSINFO;
		x->host = CLOCK_BOOTTIME;
		x->slack = NSEC_PER_SEC + 1;		/* whole seconds, rounded up */
	}
	return k;
}

#define MAX_ITEMS	(2 * NCLOCKS + 8)

static void snapshot(struct srv *s, struct item *it, int n, int idx, int tries)
{
	int k;

	for (k = 0; k < n; k++) {
		struct item *x = &it[k];

		if (x->skip || x->gone || x->settled)
			continue;
		if (srv_bracket(s, x->op, x->arg, x->host, tries, &x->h0[idx], &x->h1[idx],
				&x->r[idx]))
			x->gone = 1;
	}
}

static struct sample2 sample_of(const struct item *x)
{
	struct sample2 s = {
		.vA = x->r[0].v[x->vi], .vB = x->r[1].v[x->vi],
		.h0A = x->h0[0], .h1A = x->h1[0], .h0B = x->h0[1], .h1B = x->h1[1],
		.slack = x->slack,
	};
	return s;
}

/* rate_resolves(), WEAK_UNC, RATE_ROUNDS: dilation.h */

/*
 * How much a rate measurement of @x can say:
 * R_TIGHT	relative half-width <= WEAK_UNC
 * R_WIDE	wider, but still rejects 2 * TDF and TDF / 2
 * R_NOISE	the bracket is too wide to reject them (noise): repeat, then fail
 * R_GRANULAR	even an exact bracket of this length could not reject them:
 *		the interface's granularity (time(): 1 s, sysinfo(): 1 s,
 *		/proc/uptime: 10 ms) is too coarse for INTERVAL_NS at this TDF,
 *		and no repetition helps; such points rest on their agreement
 *		with a namespace clock whose rate is checked to be tight
 */
enum rate_state { R_TIGHT, R_WIDE, R_NOISE, R_GRANULAR };

static enum rate_state rate_state(const struct item *x, const struct tdf *t, long double *unc)
{
	struct sample2 s = sample_of(x), exact = s;
	long double expect = tdf_rate(t->n, t->d);
	struct rate_out o = rate_check(&s, expect);
	i64 mid = ((s.h0B - s.h1A) + (s.h1B - s.h0A)) / 2;

	*unc = o.unc;
	if (o.unc <= WEAK_UNC)
		return R_TIGHT;
	if (rate_resolves(&s, expect))
		return R_WIDE;
	/* the same length with a zero-width bracket: A and B at exact host instants */
	exact.h0A = exact.h1A = 0;
	exact.h0B = exact.h1B = mid;
	return rate_resolves(&exact, expect) ? R_NOISE : R_GRANULAR;
}

/* prints the diagnostic; returns the bounds check's verdict, *state what it means */
static int report_rate(const char *pfx, const struct item *x, const struct tdf *t,
		       enum rate_state *state)
{
	struct sample2 s = sample_of(x);
	struct rate_out o = rate_check(&s, tdf_rate(t->n, t->d));
	long double unc;

	*state = rate_state(x, t, &unc);
	if (*state == R_GRANULAR) {
		/* e.g. time() over 250 ms: only a (still rigorous) bounds check */
		ksft_print_msg("%s %s: granularity too coarse to resolve the rate at this TDF (child delta %lld ns, host delta [%lld, %lld] ns, expected rate %.9Lf): bounds %s\n",
			       pfx, x->name, s.vB - s.vA, s.h0B - s.h1A, s.h1B - s.h0A, o.expect,
			       o.ok ? "consistent" : "VIOLATED");
		return o.ok;
	}
	ksft_print_msg("%s %s: rate %.9Lf, expected 1/TDF = %.9Lf (%+.1Lf ppm); resolution +-%.4Lf%% (child delta %lld ns, host delta [%lld, %lld] ns)%s\n",
		       pfx, x->name, o.meas, o.expect, (o.meas / o.expect - 1) * 1e6L,
		       o.unc * 100, s.vB - s.vA, s.h0B - s.h1A, s.h1B - s.h0A,
		       o.ok ? "" : "  <== OUT OF BOUNDS");
	if (*state == R_WIDE)
		ksft_print_msg("%s %s: bracket wider than +-%.0Lf%% after %d rounds, but it still rejects TDF x2 and /2\n",
			       pfx, x->name, WEAK_UNC * 100, RATE_ROUNDS);
	else if (*state == R_NOISE)
		ksft_print_msg("%s %s: FAIL: bracket still too wide after %d rounds to tell TDF %s from twice or half of it\n",
			       pfx, x->name, RATE_ROUNDS, t->str);
	return o.ok;
}

static int resp_err(const struct item *x, char *why, size_t sz)
{
	int i;

	if (x->gone) {
		snprintf(why, sz, "server child died");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (x->r[i].err) {
			snprintf(why, sz, "reading failed: %s", strerror(x->r[i].err));
			return 1;
		}
	}
	return 0;
}

/*
 * Point 6: CPU time is not dilated (cpu.max is scaled instead).  The server
 * burns CPU_BURN_MS of its own thread CPU time and reports the deltas of its
 * thread and process CPU clocks read inside the namespace; around that call
 * this process, in the root time namespace, reads the server's process CPU
 * clock from outside.  While the request is outstanding the server does
 * little but the measured loop, and it is blocked in read() when the outer
 * readings start, so the inner deltas must equal the outer one up to
 * CPU_TOL_PCT % plus a tick (the few system calls outside the inner window,
 * accounting at context switches).  Both sides come from the same
 * sum_exec_runtime, so unlike a comparison with CLOCK_MONOTONIC this does not
 * depend on sched_clock agreeing with the clocksource (under TCG with hpet
 * they drift apart by tens of percent over 20 ms).
 *
 * A kernel that scaled CPU time by 1/TDF for readers inside fails on both
 * sides: at TDF 10 (and 2.5, 1000) the inner delta is 1/TDF of the outer one
 * (20 ms against >= 50 ms; at 1000 the loop does not even end within the
 * 5 s timeout); at TDF 1/1000 the loop ends after ~20 us of real CPU and
 * the inner 20 ms exceed the outer delta a thousandfold.  Twice or half the
 * factor fails alike: the tolerance is 2 % + 4 ms on 20 ms.
 */
#define CPU_BURN_MS	20
#define CPU_TOL_PCT	2
#define CPU_TRIES	5

static int cpu_agree(i64 in, i64 out)
{
	i64 diff = in > out ? in - out : out - in;

	return diff <= out * CPU_TOL_PCT / 100 + tick;
}

/*
 * One measurement: 0, or -1 if the server is gone (after the timeout).
 * din[0], din[1]: the server's thread and process CPU time inside; *dout:
 * its process CPU time read from outside.
 */
static int cputime_once(struct srv *s, clockid_t cid, i64 din[2], i64 *dout, i64 *host, int *err)
{
	struct resp rs;
	i64 o0 = 0, o1 = 0, a, b;

	*err = sys_cg(cid, &o0);
	if (*err)
		return 0;
	a = host_ns(CLOCK_MONOTONIC);
	if (srv_call_timeout(s, OP_CPUTIME, CPU_BURN_MS, &rs, 5000))
		return -1;
	b = host_ns(CLOCK_MONOTONIC);
	*err = rs.err ? rs.err : sys_cg(cid, &o1);
	din[0] = rs.v[0];
	din[1] = rs.v[1];
	*dout = o1 - o0;
	*host = b - a;
	return 0;
}

static void cputime_point(struct srv *s, const char *pfx)
{
	const char *name = "CPU-time clocks are not dilated (inside == outside)";
	i64 din[2], dout, host;
	clockid_t cid;
	int k, err, ok = 0;

	err = clock_getcpuclockid(s->pid, &cid);
	/*
	 * The outer delta also holds what the server did outside its inner
	 * window (waking up, the reply; under TCG the first run of a code path
	 * is translated, ms of CPU): that only ever adds to it, and a try can
	 * be repeated, like a bracket, while a wrong factor is wrong every time.
	 */
	for (k = 0; !err && !ok && k < CPU_TRIES; k++) {
		if (cputime_once(s, cid, din, &dout, &host, &err)) {
			ksft_test_result_fail("%s %s: %d ms of thread CPU time not reached within 5 s host\n",
					      pfx, name, CPU_BURN_MS);
			srv_stop(s);
			return;
		}
		if (err)
			break;
		ok = cpu_agree(din[0], dout) && cpu_agree(din[1], dout);
		ksft_print_msg("%s try %d: inside: CLOCK_THREAD_CPUTIME_ID advanced %lld ns, CLOCK_PROCESS_CPUTIME_ID %lld ns; outside: the server's process CPU clock %lld ns (allowed difference %lld ns); host CLOCK_MONOTONIC %lld ns%s\n",
			       pfx, k + 1, din[0], din[1], dout, dout * CPU_TOL_PCT / 100 + tick, host,
			       ok ? "" : "  <== DISAGREE");
	}
	if (err)
		ksft_print_msg("%s reading the CPU clocks: %s\n", pfx, strerror(err));
	ksft_test_result(ok, "%s %s\n", pfx, name);
}

/* points per TDF */
#define PER_TDF_CLOCKS	(NVDSO_CLOCKS + NCLOCKS)
#define PER_TDF		(PER_TDF_CLOCKS + 2 /* gtod */ + 2 /* time */ + 1 /* uptime */ + \
			 1 /* sysinfo */ + 1 /* stat */ + 2 /* getres */ + 1 /* vdso */ + \
			 1 /* cputime */ + 1 /* readback */)

static void run_tdf(const struct tdf *t)
{
	struct item it[MAX_ITEMS], best[MAX_ITEMS];
	long double best_unc[MAX_ITEMS];
	char pfx[64], why[320], buf[64], ebuf[64];
	struct srv s = { 0 };
	struct resp rs;
	int n, k, ret, emitted = 0, i, round;
	long double r = tdf_rate(t->n, t->d);

	snprintf(pfx, sizeof(pfx), "tdf=%s", t->str);
	ksft_print_msg("---- %s (TDF %lld/%lld, expected rate %.6Lf) ----\n", pfx, t->n, t->d, r);

	if (unshare(CLONE_NEWTIME)) {
		snprintf(why, sizeof(why), "%s: unshare(CLONE_NEWTIME): %s", pfx, strerror(errno));
		goto fail_all;
	}
	ret = dil_write(DIL_SELF, t->str);
	if (ret) {
		snprintf(why, sizeof(why), "%s: writing '%s' to /proc/self/timens_dilation: %s",
			 pfx, t->str, strerror(-ret));
		goto fail_all;
	}
	if (srv_start(&s)) {
		snprintf(why, sizeof(why), "%s: fork: %s", pfx, strerror(errno));
		goto fail_all;
	}

	/* 1: the child is in the new namespace and sees the TDF */
	if (srv_call(&s, OP_NS_INODE, 0, &rs) ||
	    (ino_t)rs.v[0] == ns_inode("/proc/self/ns/time") ||
	    (ino_t)rs.v[0] != ns_inode("/proc/self/ns/time_for_children")) {
		snprintf(why, sizeof(why), "%s: the child is not in the new time namespace", pfx);
		srv_stop(&s);
		goto fail_all;
	}
	ret = srv_call(&s, OP_READ_DIL, 0, &rs);
	snprintf(buf, sizeof(buf), "%s\n", t->readback);
	ksft_test_result(!ret && !rs.err && !strcmp(rs.s, buf),
			 "%s inside: /proc/self/timens_dilation reads '%s' (got '%s')\n",
			 pfx, esc(buf, ebuf, sizeof(ebuf)), ret ? "?" : esc(rs.s, why, sizeof(why)));
	emitted++;

	/*
	 * 2: rates, from two bracketed snapshots, right after the factor
	 * was written: coarse clocks are re-anchored at their own last
	 * value, so they do not leap at their next tick.  Scheduling noise
	 * (TCG, shared host CPUs) can widen a bracket: the snapshots of such
	 * items are re-taken, up to RATE_ROUNDS times, and the narrowest kept; a
	 * point whose bracket cannot reject TDF x2 and /2 even then fails
	 * (see rate_state()).
	 */
	n = build_items(it, t->n, t->d);
	for (round = 0; round < RATE_ROUNDS; round++) {
		int pending = 0;

		snapshot(&s, it, n, 0, TRIES);
		sleep_ns(INTERVAL_NS);
		snapshot(&s, it, n, 1, TRIES);
		for (k = 0; k < n; k++) {
			struct item *x = &it[k];
			enum rate_state st;
			long double unc;

			if (x->skip || x->settled)
				continue;
			if (resp_err(x, why, sizeof(why))) {
				/* a failed reading in any round fails the point */
				best[k] = *x;
				x->settled = 1;
				continue;
			}
			rate_state(x, t, &unc);
			if (!round || unc < best_unc[k]) {
				best[k] = *x;
				best_unc[k] = unc;
			}
			st = rate_state(&best[k], t, &unc);
			if (st == R_TIGHT || st == R_GRANULAR)
				x->settled = 1;
			else
				pending++;
		}
		if (!pending)
			break;
		ksft_print_msg("%s: %d bracket(s) wider than +-%.0Lf%% in round %d, measuring them again\n",
			       pfx, pending, WEAK_UNC * 100, round + 1);
	}

	for (k = 0; k < n; k++) {
		struct item *x = &best[k];
		enum rate_state st;
		int ok = 1, j;

		if (it[k].skip) {
			skip_point(it[k].skip, "%s %s rate", pfx, it[k].name);
			emitted++;
			continue;
		}
		if (resp_err(x, why, sizeof(why))) {
			ksft_test_result_fail("%s %s rate: %s\n", pfx, x->name, why);
			emitted++;
			continue;
		}
		switch (x->kind) {
		case K_CLOCK:
		case K_GTOD:
			/* these have ns or us granularity: R_GRANULAR would be a bug of the test */
			ok = report_rate(pfx, x, t, &st);
			ok &= st == R_TIGHT || st == R_WIDE;
			ksft_test_result(ok, "%s %s advances at 1/TDF of the host rate\n", pfx, x->name);
			break;
		case K_TIME:
			/* time() agrees with the namespace's own CLOCK_REALTIME[_COARSE] */
			for (j = 0; j < 2; j++) {
				const struct resp *q = &x->r[j];
				i64 lag = dil_ceil(tick, t->n, t->d);
				i64 lo = (q->v[0] < q->v[2] ? q->v[0] : q->v[2]) - lag - NSEC_PER_SEC;
				i64 hi = (q->v[0] > q->v[2] ? q->v[0] : q->v[2]) + lag;

				if (q->v[1] < lo || q->v[1] > hi) {
					ksft_print_msg("%s %s: time()=%lld s not within the namespace's REALTIME_COARSE %lld ns .. REALTIME %lld ns (+-%lld ns)\n",
						       pfx, x->name, q->v[1] / NSEC_PER_SEC, q->v[0], q->v[2], lag);
					ok = 0;
				}
			}
			ok &= report_rate(pfx, x, t, &st) && st != R_NOISE;
			if (st == R_GRANULAR)
				ksft_print_msg("%s %s: rate not resolvable in 1 s steps here: checked through its agreement with the namespace's CLOCK_REALTIME\n",
					       pfx, x->name);
			ksft_test_result(ok, "%s %s is dilated (consistent with CLOCK_REALTIME, rate 1/TDF)\n",
					 pfx, x->name);
			break;
		case K_UPTIME: {
			i64 didle, bound;

			for (j = 0; j < 2; j++) {
				const struct resp *q = &x->r[j];

				/* uptime is truncated to 1/100 s of the namespace's BOOTTIME */
				if (q->v[0] > q->v[3] + 1 || q->v[0] + 10 * NSEC_PER_MSEC < q->v[2] - 1) {
					ksft_print_msg("%s /proc/uptime %lld ns not within the namespace's CLOCK_BOOTTIME [%lld, %lld] ns\n",
						       pfx, q->v[0], q->v[2], q->v[3]);
					ok = 0;
				}
			}
			ok &= report_rate(pfx, x, t, &st) && st != R_NOISE;
			if (st == R_GRANULAR)
				ksft_print_msg("%s /proc/uptime: rate not resolvable in 10 ms steps here: checked through its agreement with the namespace's CLOCK_BOOTTIME\n",
					       pfx);
			/* idle time: at most ncpus * elapsed namespace time */
			didle = x->r[1].v[1] - x->r[0].v[1];
			bound = (i64)(r * ncpus * (long double)(x->h1[1] - x->h0[0] + tick)) +
				20 * NSEC_PER_MSEC;
			ksft_print_msg("%s /proc/uptime idle field advanced %lld ns (bound %d CPUs x dilated elapsed = %lld ns)%s\n",
				       pfx, didle, ncpus, bound, didle > bound ? "  <== TOO FAST" : "");
			if (didle > bound || didle < -20 * NSEC_PER_MSEC)
				ok = 0;
			ksft_test_result(ok, "%s /proc/uptime is dilated (both fields)\n", pfx);
			break;
		}
		case K_SYSINFO:
			for (j = 0; j < 2; j++) {
				const struct resp *q = &x->r[j];

				/* sysinfo rounds the namespace's BOOTTIME up to whole seconds */
				if (q->v[0] < q->v[2] || q->v[0] - NSEC_PER_SEC > q->v[3]) {
					ksft_print_msg("%s sysinfo().uptime %lld s not ceil() of the namespace's CLOCK_BOOTTIME [%lld, %lld] ns\n",
						       pfx, q->v[0] / NSEC_PER_SEC, q->v[2], q->v[3]);
					ok = 0;
				}
			}
			ok &= report_rate(pfx, x, t, &st) && st != R_NOISE;
			if (st == R_GRANULAR)
				ksft_print_msg("%s sysinfo: rate not resolvable in 1 s steps here: checked through its agreement with the namespace's CLOCK_BOOTTIME\n",
					       pfx);
			ksft_test_result(ok, "%s sysinfo().uptime is dilated\n", pfx);
			break;
		}
		emitted++;
	}

	/* 3: start time of a task forked inside, after the namespace ran dilated */
	if (srv_call(&s, OP_STARTTIME, 0, &rs)) {
		ksft_test_result_fail("%s /proc/PID/stat start time: server died\n", pfx);
	} else if (rs.err || rs.v[3] <= 0) {
		ksft_test_result_fail("%s /proc/PID/stat start time: %s\n", pfx, strerror(rs.err));
	} else {
		i64 per = NSEC_PER_SEC / rs.v[3];
		i64 st = rs.v[1] * per;
		int ok = st <= rs.v[2] + 1 && st + per >= rs.v[0] - 1;

		ksft_print_msg("%s start time %lld ticks = %lld ns; the namespace's CLOCK_BOOTTIME around the fork: [%lld, %lld] ns\n",
			       pfx, rs.v[1], st, rs.v[0], rs.v[2]);
		ksft_test_result(ok, "%s /proc/PID/stat start time (field 22) is in dilated boot time\n", pfx);
	}
	emitted++;

	/* 4: clock_getres() == ceil(host_res / TDF), at least 1 ns */
	for (k = 0; k < 2; k++) {
		int ok = 1, ran = 0;

		for (i = 0; i < NCLOCKS; i++) {
			i64 hres = host_res_ns(clocks[i].id), exp;

			if (!alarm_ok[i] || (k == 0 && !clocks[i].vdso))
				continue;
			if (k == 0 && !vdso.clock_getres)
				break;
			exp = dil_ceil(hres, t->n, t->d);
			if (exp < 1)
				exp = 1;
			if (srv_call(&s, k ? OP_GETRES_SYS : OP_GETRES_VDSO, i, &rs)) {
				ok = 0;
				break;
			}
			ran++;
			if (rs.err || rs.v[0] != exp) {
				ksft_print_msg("%s clock_getres(%s) %s: got %lld ns (%s), expected ceil(%lld / TDF) = %lld ns\n",
					       pfx, clocks[i].name, k ? "syscall" : "vdso", rs.v[0],
					       rs.err ? strerror(rs.err) : "ok", hres, exp);
				ok = 0;
			}
		}
		if (!ran && ok)
			skip_point("no vDSO clock_getres", "%s clock_getres %s == ceil(host resolution / TDF), all clocks",
				   pfx, k ? "syscall" : "vdso");
		else
			ksft_test_result(ok, "%s clock_getres %s == ceil(host resolution / TDF), all clocks\n",
					 pfx, k ? "syscall" : "vdso");
		emitted++;
	}

	/* 5: the vDSO serves the dilated namespace in user space */
	if (root_mask < 0) {
		skip_point("seccomp unavailable, cannot tell", "%s vDSO serves the dilated namespace in user space", pfx);
	} else if (srv_call(&s, OP_VDSO_PROBE, 0, &rs) || rs.v[0] < 0) {
		ksft_test_result_fail("%s vDSO in user space: probe failed\n", pfx);
	} else {
		int ns_mask = rs.v[0];
		int rel = root_mask & (((1 << NVDSO_CLOCKS) - 1) | PROBE_GTOD | PROBE_TIME);
		int miss = root_mask & ~ns_mask;

		mask_names(ns_mask, why, sizeof(why));
		ksft_print_msg("%s vDSO answers without a system call, inside: %s\n", pfx, why);
		if (!rel) {
			skip_point("the vDSO falls back to the system call even in the root namespace",
				   "%s vDSO serves the dilated namespace in user space", pfx);
		} else {
			if (miss) {
				mask_names(miss, why, sizeof(why));
				ksft_print_msg("%s falls back to the system call inside but not in the root namespace: %s\n",
					       pfx, why);
			}
			ksft_test_result(!miss, "%s vDSO serves the dilated namespace in user space (as in the root namespace)\n",
					 pfx);
		}
	}
	emitted++;

	/* 6: CPU-time clocks are not dilated */
	cputime_point(&s, pfx);
	emitted++;

	srv_stop(&s);
	if (emitted != PER_TDF)
		ksft_print_msg("%s: internal: emitted %d points, planned %d\n", pfx, emitted, PER_TDF);
	return;

fail_all:
	ksft_print_msg("%s\n", why);
	while (emitted++ < PER_TDF)
		ksft_test_result_fail("%s (setup failed)\n", pfx);
}

/* ------------------------------------------------------------------ */
/* Continuity: a running namespace's TDF changes from outside           */

static const char * const cont_seq[] = { "10", "0.001", "5/2", "1" };
static const i64 cont_nd[][2] = { { 1, 1 }, { 10, 1 }, { 1, 1000 }, { 5, 2 }, { 1, 1 } };
#define NCONT	((int)ARRAY_SIZE(cont_seq))
#define CONT_TRIES	3	/* changes made, at most, when only coarse clocks lagged */

/*
 * One change of the factor, cont_seq[c], of the server's namespace, from
 * outside, between two bracketed snapshots.  Returns whether no clock
 * jumped; *retry: the only misses were coarse clocks behind the window.
 * A coarse clock lags its base by up to a tick, and by more when a tick
 * comes late (TCG on a loaded host: several ms); at the TDF 10 -> 1/1000
 * change a host ms is a namespace second.  Such a lag is noise, like a late
 * wake-up: it does not repeat, while a real jump (ahead, or of a fine clock,
 * or at every try) does.
 */
static int cont_change(struct srv *s, struct item *it, int c, int *retry)
{
	i64 n1 = cont_nd[c][0], d1 = cont_nd[c][1];
	i64 n2 = cont_nd[c + 1][0], d2 = cont_nd[c + 1][1];
	long double r1 = tdf_rate(n1, d1), r2 = tdf_rate(n2, d2);
	const char *from = c ? cont_seq[c - 1] : "1";
	i64 w0[NCLOCKS], w1[NCLOCKS];
	long double worst = 0;
	const char *wname = "";
	int n, k, i, ret, ok = 1;
	char why[160];

	*retry = 0;
	/* clock_gettime and gettimeofday items only */
	/* slack for the faster of the two rates (coarse clocks: one dilated tick) */
	if (n1 * d2 < n2 * d1)
		build_items(it, n1, d1);
	else
		build_items(it, n2, d2);
	n = PER_TDF_CLOCKS + 2;
	snapshot(s, it, n, 0, TRIES);
	for (i = 0; i < NCLOCKS; i++)
		w0[i] = host_ns(clocks[i].host);
	ret = dil_write(s->pid, cont_seq[c]);
	for (i = NCLOCKS - 1; i >= 0; i--)
		w1[i] = host_ns(clocks[i].host);
	snapshot(s, it, n, 1, TRIES);

	if (ret) {
		ksft_print_msg("continuity: writing '%s' to /proc/%d/timens_dilation: %s\n",
			       cont_seq[c], s->pid, strerror(-ret));
		return 0;
	}
	for (k = 0; k < n; k++) {
		struct item *x = &it[k];
		long double lo = 1e30L, hi = -1e30L, dc, v, mid;
		i64 a, b, ww, hw0, hw1;
		int ci;

		if (x->skip)
			continue;
		if (resp_err(x, why, sizeof(why))) {
			ksft_print_msg("continuity %s: %s\n", x->name, why);
			ok = 0;
			*retry = -1;
			continue;
		}
		ci = x->kind == K_CLOCK ? x->arg : 0;	/* gettimeofday: CLOCK_REALTIME */
		hw0 = w0[ci];
		hw1 = w1[ci];
		/* delta = (w - tA) / TDF1 + (tB - w) / TDF2, over the corners of the brackets */
		for (a = 0; a < 2; a++)
			for (b = 0; b < 2; b++)
				for (ww = 0; ww < 2; ww++) {
					long double tA = a ? x->h1[0] : x->h0[0];
					long double tB = b ? x->h1[1] : x->h0[1];
					long double w = ww ? hw1 : hw0;

					v = (w - tA) * r1 + (tB - w) * r2;
					if (v < lo)
						lo = v;
					if (v > hi)
						hi = v;
				}
		dc = x->r[1].v[0] - x->r[0].v[0];
		mid = (lo + hi) / 2;
		lo -= 2 * x->slack;
		hi += 2 * x->slack;
		if (dc < lo || dc > hi) {
			ksft_print_msg("continuity TDF %s -> %s: %s jumped by about %.0Lf ns (allowed window [%.0Lf, %.0Lf] ns around the expected advance)\n",
				       from, cont_seq[c], x->name, dc - mid, lo - mid, hi - mid);
			ok = 0;
			if (dc > hi || x->kind != K_CLOCK || !clocks[x->arg].coarse)
				*retry = -1;
			else if (!*retry)
				*retry = 1;
		}
		if (fabsl(dc - mid) > fabsl(worst)) {
			worst = dc - mid;
			wname = x->name;
		}
	}
	ksft_print_msg("continuity TDF %s -> %s: largest deviation from the no-jump prediction: %.0Lf ns (%s)\n",
		       from, cont_seq[c], worst, wname);
	if (*retry < 0)
		*retry = 0;
	return ok;
}

static void continuity(void)
{
	struct item it[MAX_ITEMS];
	struct srv s = { 0 };
	int c, t, ret, ok, retry, done = 0;
	char why[160];

	ksft_print_msg("---- continuity (namespace with offsets, TDF changed from outside while it runs) ----\n");
	if (unshare(CLONE_NEWTIME)) {
		snprintf(why, sizeof(why), "unshare(CLONE_NEWTIME): %s", strerror(errno));
		goto fail;
	}
	if (set_timens_offset(CLOCK_MONOTONIC, 86400, 123456789) ||
	    set_timens_offset(CLOCK_BOOTTIME, 2 * 86400, 987654321)) {
		snprintf(why, sizeof(why), "setting timens_offsets failed");
		goto fail;
	}
	if (srv_start(&s)) {
		snprintf(why, sizeof(why), "fork: %s", strerror(errno));
		goto fail;
	}
	sleep_ns(300 * NSEC_PER_MSEC);	/* runs undilated for a while */

	for (c = 0; c < NCONT; c++) {
		const char *from = c ? cont_seq[c - 1] : "1";

		ok = cont_change(&s, it, c, &retry);
		for (t = 1; !ok && retry && t < CONT_TRIES; t++) {
			/* back to the factor before, run there, and change again */
			ksft_print_msg("continuity TDF %s -> %s: only coarse clocks behind the window (a late tick?): try %d of %d\n",
				       from, cont_seq[c], t + 1, CONT_TRIES);
			ret = dil_write(s.pid, from);
			if (ret) {
				ksft_print_msg("continuity: writing '%s' back: %s\n", from, strerror(-ret));
				break;
			}
			sleep_ns(150 * NSEC_PER_MSEC);
			ok = cont_change(&s, it, c, &retry);
		}
		ksft_test_result(ok, "continuity: TDF %s -> %s of a running namespace, no clock jumps (all clocks, vdso+syscall)\n",
				 from, cont_seq[c]);
		done++;
		sleep_ns(150 * NSEC_PER_MSEC);
	}
	srv_stop(&s);
	return;
fail:
	ksft_print_msg("continuity: %s\n", why);
	while (done++ < NCONT)
		ksft_test_result_fail("continuity: setup failed\n");
}

int main(void)
{
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_dilation();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	if (ns_inode("/proc/self/ns/time") != ns_inode("/proc/self/ns/time_for_children"))
		ksft_exit_skip("must start in a time namespace whose children share it\n");

	vdso_init(&vdso);
	tick = tick_ns();
	ncpus = possible_cpus();
	for (i = 0; i < NCLOCKS; i++)
		alarm_ok[i] = clock_readable(i);
	print_clocksource();
	ksft_print_msg("vDSO entry points: clock_gettime %p, clock_getres %p, gettimeofday %p, time %p\n",
		       (void *)vdso.clock_gettime, (void *)vdso.clock_getres,
		       (void *)vdso.gettimeofday, (void *)vdso.time);
	root_mask = vdso_userspace_mask();
	if (root_mask >= 0) {
		char b[320];

		mask_names(root_mask, b, sizeof(b));
		ksft_print_msg("vDSO answers without a system call in the root namespace: %s\n", b);
	}

	ksft_set_plan(NTDF * PER_TDF + NCONT);
	for (i = 0; i < NTDF; i++)
		run_tdf(&tdfs[i]);
	continuity();
	ksft_finished();
	return 0;
}
