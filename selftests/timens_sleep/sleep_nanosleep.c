// SPDX-License-Identifier: GPL-2.0
/*
 * nanosleep() and clock_nanosleep() in a dilated time namespace: a relative
 * sleep of d lasts d * TDF of host time and at least d on the namespace's
 * clock; an absolute sleep ends when the namespace's (dilated) clock reaches
 * the deadline (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_TAI);
 * the remaining time written back after a signal is in namespace units.
 * Factors 10, 1, 0.001 and 1000.  See timens_sleep.h for the bounds.
 */
#define _GNU_SOURCE
#include "timens_sleep.h"

static void do_nanosleep(struct ctx *c)
{
	struct timespec req = ns_ts(c->d), rem = { 0, 0 };
	int ret;

	begin(c);
	ret = nanosleep(&req, &rem);
	end(c);
	if (ret)
		cfail(c, "nanosleep: %s", strerror(errno));
}

/* arg: 0 or TIMER_ABSTIME */
static void do_clock_nanosleep(struct ctx *c)
{
	struct timespec req, rem = { 0, 0 };
	i64 deadline = 0;
	int ret;

	begin(c);
	if (c->arg & TIMER_ABSTIME) {
		deadline = now_ns(c->clk) + c->d;
		req = ns_ts(deadline);
		c->r->min_e = deadline - c->r->t0;
	} else {
		req = ns_ts(c->d);
	}
	ret = clock_nanosleep(c->clk, c->arg, &req, &rem);
	end(c);
	if (ret)
		cfail(c, "clock_nanosleep(%s): %s", clock_name(c->clk), strerror(ret));
	if ((c->arg & TIMER_ABSTIME) && c->r->t1 < deadline)
		cfail(c, "woke %s before the deadline", fmt_ns(deadline - c->r->t1));
}

/* interrupted by SIGUSR1 from the parent: rem in namespace units */
static void do_nanosleep_sig(struct ctx *c)
{
	struct timespec req = ns_ts(c->d), rem = { -1, -1 };
	int ret;

	begin(c);
	ret = nanosleep(&req, &rem);
	end(c);
	c->r->nobounds = 1;
	if (ret == 0) {
		cfail(c, "not interrupted: the sleep ended before the signal");
		return;
	}
	EXPECT_ERR(c, ret, EINTR, "nanosleep");
	check_rem(c, "rem", ts_ns(&rem), c->d, REM_TOL);
}

static void do_clock_nanosleep_sig(struct ctx *c)
{
	struct timespec req = ns_ts(c->d), rem = { -1, -1 };
	int ret;

	begin(c);
	ret = clock_nanosleep(c->clk, 0, &req, &rem);
	end(c);
	c->r->nobounds = 1;
	if (ret == 0) {
		cfail(c, "not interrupted: the sleep ended before the signal");
		return;
	}
	if (ret != EINTR)
		cfail(c, "clock_nanosleep: %s, expected EINTR", strerror(ret));
	else
		check_rem(c, "rem", ts_ns(&rem), c->d, REM_TOL);
}

#define D10	(30 * NS_MS)
#define D1	(100 * NS_MS)
#define DMILLI	(100 * NS_S)	/* 100 ms of host time: enough for a two-sided bound */
#define D1000	(300 * NS_US)

#define MONO	CLOCK_MONOTONIC
#define REAL	CLOCK_REALTIME
#define BOOT	CLOCK_BOOTTIME
#define TAI	CLOCK_TAI
#define ABS	TIMER_ABSTIME

static const struct tcase c10[] = {
	TC("nanosleep 30ms", do_nanosleep, D10, MONO),
	TC("clock_nanosleep CLOCK_MONOTONIC relative 30ms", do_clock_nanosleep, D10, MONO, .arg = 0),
	TC("clock_nanosleep CLOCK_REALTIME relative 30ms", do_clock_nanosleep, D10, REAL, .arg = 0),
	TC("clock_nanosleep CLOCK_BOOTTIME relative 30ms", do_clock_nanosleep, D10, BOOT, .arg = 0),
	TC("clock_nanosleep CLOCK_TAI relative 30ms", do_clock_nanosleep, D10, TAI, .arg = 0),
	TC("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME now+30ms", do_clock_nanosleep, D10, MONO, .arg = ABS),
	TC("clock_nanosleep CLOCK_REALTIME TIMER_ABSTIME now+30ms", do_clock_nanosleep, D10, REAL, .arg = ABS),
	TC("clock_nanosleep CLOCK_BOOTTIME TIMER_ABSTIME now+30ms", do_clock_nanosleep, D10, BOOT, .arg = ABS),
	TC("clock_nanosleep CLOCK_TAI TIMER_ABSTIME now+30ms", do_clock_nanosleep, D10, TAI, .arg = ABS),
	TC("nanosleep 60ms interrupted by SIGUSR1 at host +250ms: rem", do_nanosleep_sig, 60 * NS_MS, MONO, SIG_AT(250 * NS_MS)),
	TC("clock_nanosleep CLOCK_MONOTONIC 60ms interrupted at host +250ms: rem", do_clock_nanosleep_sig,
	   60 * NS_MS, MONO, SIG_AT(250 * NS_MS)),
	TC("clock_nanosleep CLOCK_BOOTTIME 60ms interrupted at host +250ms: rem", do_clock_nanosleep_sig,
	   60 * NS_MS, BOOT, SIG_AT(250 * NS_MS)),
};

static const struct tcase c1[] = {
	TC("nanosleep 100ms", do_nanosleep, D1, MONO),
	TC("clock_nanosleep CLOCK_MONOTONIC relative 100ms", do_clock_nanosleep, D1, MONO, .arg = 0),
	TC("clock_nanosleep CLOCK_REALTIME TIMER_ABSTIME now+100ms", do_clock_nanosleep, D1, REAL, .arg = ABS),
	TC("nanosleep 400ms interrupted by SIGUSR1 at host +150ms: rem", do_nanosleep_sig, 400 * NS_MS, MONO, SIG_AT(150 * NS_MS)),
};

static const struct tcase cmilli[] = {
	TC("nanosleep 100s", do_nanosleep, DMILLI, MONO),
	TC("clock_nanosleep CLOCK_MONOTONIC relative 100s", do_clock_nanosleep, DMILLI, MONO, .arg = 0),
	TC("clock_nanosleep CLOCK_BOOTTIME relative 100s", do_clock_nanosleep, DMILLI, BOOT, .arg = 0),
	TC("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME now+100s", do_clock_nanosleep, DMILLI, MONO, .arg = ABS),
	TC("clock_nanosleep CLOCK_REALTIME TIMER_ABSTIME now+100s", do_clock_nanosleep, DMILLI, REAL, .arg = ABS),
	TC("clock_nanosleep CLOCK_TAI TIMER_ABSTIME now+100s", do_clock_nanosleep, DMILLI, TAI, .arg = ABS),
	TC("nanosleep 400s interrupted by SIGUSR1 at host +150ms: rem", do_nanosleep_sig, 400 * NS_S, MONO, SIG_AT(150 * NS_MS)),
};

static const struct tcase c1000[] = {
	TC("nanosleep 300us", do_nanosleep, D1000, MONO),
	TC("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME now+300us", do_clock_nanosleep, D1000, MONO, .arg = ABS),
};

int main(void)
{
	ts_init(NCASES(c10) + NCASES(c1) + NCASES(cmilli) + NCASES(c1000));
	RUN_CASES(&TDF_10, c10);
	RUN_CASES(&TDF_1, c1);
	RUN_CASES(&TDF_MILLI, cmilli);
	RUN_CASES(&TDF_1000, c1000);
	ksft_finished();
}
