// SPDX-License-Identifier: GPL-2.0
/*
 * Accuracy of dilated sleeps: N short sleeps in a row, each measured on the
 * namespace's CLOCK_MONOTONIC.  No sleep may end early in namespace time
 * (lateness >= 0, exactly), and the lateness stays small: its median, in
 * host terms (lateness * TDF), below LAT_P50_HOST, its 99th percentile below
 * the harness slack.  The distribution is printed as
 *   # lateness tdf=T CALL p50=... p99=... max=... (namespace time)
 * Relative (clock_nanosleep, nanosleep) and absolute (TIMER_ABSTIME, on a
 * grid: no drift) sleeps; factors 1, 10 and 0.001.
 */
#define _GNU_SOURCE
#include "timens_sleep.h"

#define NMAX		200
#define LAT_P50_HOST	(20 * NS_MS)	/* QEMU TCG: wake-ups take ~0.1-5 ms */

enum { A_CLOCK_NANOSLEEP, A_NANOSLEEP, A_ABS_GRID };

static int cmp_i64(const void *a, const void *b)
{
	i64 x = *(const i64 *)a, y = *(const i64 *)b;

	return x < y ? -1 : x > y;
}

/* arg: how | n << 8; d: the total, n sleeps of d / n */
static void do_series(struct ctx *c)
{
	int how = c->arg & 0xff, n = (int)(c->arg >> 8), i, early = -1;
	i64 each = c->d / n, lat[NMAX], t, t2, next;
	struct timespec ts = ns_ts(each);
	i64 p50, p99, p50h, p99h, lim99;

	begin(c);
	t = c->r->t0;
	next = t;
	for (i = 0; i < n; i++) {
		if (how == A_ABS_GRID) {
			next += each;
			ts = ns_ts(next);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			t2 = now_ns(CLOCK_MONOTONIC);
			lat[i] = t2 - next;
		} else {
			if (how == A_NANOSLEEP)
				nanosleep(&ts, NULL);
			else
				clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			t2 = now_ns(CLOCK_MONOTONIC);
			lat[i] = t2 - t - each;
		}
		if (lat[i] < 0 && early < 0)
			early = i;
		t = t2;
	}
	end(c);
	qsort(lat, n, sizeof(lat[0]), cmp_i64);
	p50 = lat[n / 2];
	p99 = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
	c->r->v[0] = lat[0];
	c->r->v[1] = p50;
	c->r->v[2] = p99;
	c->r->v[3] = lat[n - 1];
	c->r->v[4] = n;
	if (early >= 0)
		cfail(c, "EARLY: sleep %d of %s ended %s early in namespace time (min lateness %s)",
		      early, fmt_ns(each), fmt_ns(-lat[0]), fmt_ns(lat[0]));
	p50h = to_host(c->tdf, p50);
	p99h = to_host(c->tdf, p99);
	lim99 = slack_base_ns;
	if (p50h > LAT_P50_HOST)
		clate(c, "median lateness %s (x TDF = %s of host time) > %s of host time", fmt_ns(p50),
		      fmt_ns(p50h), fmt_ns(LAT_P50_HOST));
	if (p99h > lim99)
		clate(c, "p99 lateness %s (x TDF = %s of host time) > %s of host time", fmt_ns(p99),
		      fmt_ns(p99h), fmt_ns(lim99));
}

#define MONO	CLOCK_MONOTONIC
#define SER(how, n)	.arg = (how) | ((i64)(n) << 8)
/* per sleep, up to 5 ms of host time of overhead and latency */
#define XS(n)		.xslack = (n) * 5 * NS_MS

static const struct {
	const struct tdf *tdf;
	const char *call;
	struct tcase tc;
} series[] = {
	{ &TDF_1, "clock_nanosleep", TC("200 x clock_nanosleep 1ms: never early, lateness", do_series,
	  200 * NS_MS, MONO, SER(A_CLOCK_NANOSLEEP, 200), XS(200)) },
	{ &TDF_10, "clock_nanosleep", TC("200 x clock_nanosleep 1ms: never early, lateness", do_series,
	  200 * NS_MS, MONO, SER(A_CLOCK_NANOSLEEP, 200), XS(200)) },
	{ &TDF_10, "nanosleep", TC("100 x nanosleep 1ms: never early, lateness", do_series,
	  100 * NS_MS, MONO, SER(A_NANOSLEEP, 100), XS(100)) },
	{ &TDF_10, "TIMER_ABSTIME", TC("100 x clock_nanosleep TIMER_ABSTIME on a 1ms grid: never early, no drift",
	  do_series, 100 * NS_MS, MONO, SER(A_ABS_GRID, 100), XS(100)) },
	{ &TDF_MILLI, "clock_nanosleep", TC("100 x clock_nanosleep 1s: never early, lateness", do_series,
	  100 * NS_S, MONO, SER(A_CLOCK_NANOSLEEP, 100), XS(100)) },
	{ &TDF_MILLI, "TIMER_ABSTIME", TC("100 x clock_nanosleep TIMER_ABSTIME on a 1s grid: never early, no drift",
	  do_series, 100 * NS_S, MONO, SER(A_ABS_GRID, 100), XS(100)) },
};

int main(void)
{
	struct result *r;
	int i;

	ts_init(NCASES(series));
	for (i = 0; i < NCASES(series); i++) {
		r = run_case(series[i].tdf, &series[i].tc);
		if (r && r->ran && r->v[4])
			ksft_print_msg("lateness tdf=%s %s n=%lld min=%s p50=%s p99=%s max=%s (namespace time)\n",
				       series[i].tdf->str, series[i].call, r->v[4], fmt_ns(r->v[0]),
				       fmt_ns(r->v[1]), fmt_ns(r->v[2]), fmt_ns(r->v[3]));
	}
	ksft_finished();
}
