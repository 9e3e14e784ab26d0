// SPDX-License-Identifier: GPL-2.0
/*
 * Timers in a dilated time namespace: timerfd (relative, absolute,
 * periodic, timerfd_gettime), POSIX timers (relative, absolute, periodic;
 * SIGEV_SIGNAL and SIGEV_THREAD; timer_gettime), setitimer/getitimer
 * ITIMER_REAL and alarm().
 *
 * One-shot timers: the expiry comes d * TDF of host time after arming and not
 * before the namespace's clock advanced by d (or reached the absolute
 * deadline).  Periodic timers with period P: after k expirations (overruns
 * included) the namespace's clock advanced by at least k * P, and not much
 * more (no drift).  *_gettime: remaining + elapsed = armed value, interval
 * read back unchanged, in namespace units.  See timens_sleep.h for the
 * bounds.
 */
#define _GNU_SOURCE
#include <semaphore.h>
#include <sys/timerfd.h>
#include "timens_sleep.h"

#define NPERIODS	5
#define GT_INTERVAL	(7 * NS_MS)	/* interval armed for the *_gettime cases */

/* ---- timerfd ---- */

/* arg: 0, TFD_TIMER_ABSTIME, or the period (> 1) for a periodic timer */
static void do_timerfd(struct ctx *c)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	i64 deadline = 0, period = c->arg > TFD_TIMER_ABSTIME ? c->arg : 0;
	uint64_t n, sum = 0;
	int fd, flags = period ? 0 : (int)c->arg;

	fd = timerfd_create(c->clk, TFD_CLOEXEC);
	if (fd < 0) {
		cfail(c, "timerfd_create(%s): %s", clock_name(c->clk), strerror(errno));
		return;
	}
	begin(c);
	if (flags & TFD_TIMER_ABSTIME) {
		deadline = now_ns(c->clk) + c->d;
		its.it_value = ns_ts(deadline);
		c->r->min_e = deadline - c->r->t0;
	} else {
		its.it_value = ns_ts(period ? period : c->d);
		its.it_interval = ns_ts(period);
	}
	if (timerfd_settime(fd, flags, &its, NULL)) {
		end(c);
		cfail(c, "timerfd_settime: %s", strerror(errno));
		return;
	}
	do {
		if (read(fd, &n, sizeof(n)) != sizeof(n)) {
			end(c);
			cfail(c, "read(timerfd): %s", strerror(errno));
			return;
		}
		sum += n;
	} while (period && sum < NPERIODS);
	end(c);
	if (period) {
		c->r->min_e = c->r->exp_e = (i64)sum * period;
		cdiag(c, "%llu expirations of %s", (unsigned long long)sum, fmt_ns(period));
	} else if (sum != 1) {
		cfail(c, "%llu expirations of a one-shot timer", (unsigned long long)sum);
	}
	if (deadline && c->r->t1 < deadline)
		cfail(c, "expired %s before the deadline", fmt_ns(deadline - c->r->t1));
	close(fd);
}

static void do_timerfd_gettime(struct ctx *c)
{
	struct itimerspec its = { ns_ts(GT_INTERVAL), ns_ts(c->d) }, cur;
	int fd, ret;

	c->r->nobounds = 1;
	fd = timerfd_create(c->clk, TFD_CLOEXEC);
	if (fd < 0) {
		cfail(c, "timerfd_create: %s", strerror(errno));
		return;
	}
	begin(c);
	ret = timerfd_settime(fd, 0, &its, NULL);
	spin_ns(c->clk, c->d / 3);
	if (!ret)
		ret = timerfd_gettime(fd, &cur);
	end(c);
	if (ret) {
		cfail(c, "timerfd_settime/gettime: %s", strerror(errno));
		return;
	}
	check_rem(c, "it_value", ts_ns(&cur.it_value), c->d, REM_TOL);
	if (llabs(ts_ns(&cur.it_interval) - GT_INTERVAL) > NS_US)
		cfail(c, "it_interval %s, armed %s", fmt_ns(ts_ns(&cur.it_interval)), fmt_ns(GT_INTERVAL));
	close(fd);
}

/* ---- POSIX timers ---- */

static sem_t thr_sem;
static timer_t thr_timer;
static int thr_count;

static void thr_cb(union sigval sv)
{
	int ov = timer_getoverrun(thr_timer);

	(void)sv;
	__atomic_add_fetch(&thr_count, 1 + (ov > 0 ? ov : 0), __ATOMIC_SEQ_CST);
	sem_post(&thr_sem);
}

/*
 * arg: bit 0 TIMER_ABSTIME, bit 1 SIGEV_THREAD (else SIGEV_SIGNAL),
 * arg >> 8: period (0: one-shot)
 */
#define PT_ABS		1
#define PT_THREAD	2
#define PT_PERIOD(p)	((i64)(p) << 8)

static void do_posix_timer(struct ctx *c)
{
	struct sigevent sev = { 0 };
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	i64 deadline = 0, period = c->arg >> 8;
	int thread = c->arg & PT_THREAD, flags = (c->arg & PT_ABS) ? TIMER_ABSTIME : 0;
	int ret, sum = 0;
	siginfo_t si;
	timer_t t;

	if (thread) {
		sem_init(&thr_sem, 0, 0);
		sev.sigev_notify = SIGEV_THREAD;
		sev.sigev_notify_function = thr_cb;
	} else {
		block_sig(SIGRTMIN);
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = SIGRTMIN;
	}
	if (timer_create(c->clk, &sev, &t)) {
		cfail(c, "timer_create(%s): %s", clock_name(c->clk), strerror(errno));
		return;
	}
	thr_timer = t;
	begin(c);
	if (flags) {
		deadline = now_ns(c->clk) + c->d;
		its.it_value = ns_ts(deadline);
		c->r->min_e = deadline - c->r->t0;
	} else {
		its.it_value = ns_ts(period ? period : c->d);
		its.it_interval = ns_ts(period);
	}
	if (timer_settime(t, flags, &its, NULL)) {
		end(c);
		cfail(c, "timer_settime: %s", strerror(errno));
		return;
	}
	do {
		if (thread) {
			while (sem_wait(&thr_sem) && errno == EINTR)
				;
			sum = __atomic_load_n(&thr_count, __ATOMIC_SEQ_CST);
		} else {
			ret = wait_sig(SIGRTMIN, &si);
			if (ret != SIGRTMIN) {
				end(c);
				cfail(c, "sigwaitinfo: %d %s", ret, strerror(errno));
				return;
			}
			sum += 1 + si.si_overrun;
		}
	} while (period && sum < NPERIODS);
	end(c);
	if (period) {
		c->r->min_e = c->r->exp_e = (i64)sum * period;
		cdiag(c, "%d expirations of %s", sum, fmt_ns(period));
	}
	if (deadline && c->r->t1 < deadline)
		cfail(c, "expired %s before the deadline", fmt_ns(deadline - c->r->t1));
	timer_delete(t);
}

static void do_timer_gettime(struct ctx *c)
{
	struct sigevent sev = { .sigev_notify = SIGEV_NONE };
	struct itimerspec its = { ns_ts(GT_INTERVAL), ns_ts(c->d) }, cur;
	timer_t t;
	int ret;

	c->r->nobounds = 1;
	if (timer_create(c->clk, &sev, &t)) {
		cfail(c, "timer_create: %s", strerror(errno));
		return;
	}
	begin(c);
	ret = timer_settime(t, 0, &its, NULL);
	spin_ns(c->clk, c->d / 3);
	if (!ret)
		ret = timer_gettime(t, &cur);
	end(c);
	if (ret) {
		cfail(c, "timer_settime/gettime: %s", strerror(errno));
		return;
	}
	check_rem(c, "it_value", ts_ns(&cur.it_value), c->d, REM_TOL);
	if (llabs(ts_ns(&cur.it_interval) - GT_INTERVAL) > NS_US)
		cfail(c, "it_interval %s, armed %s", fmt_ns(ts_ns(&cur.it_interval)), fmt_ns(GT_INTERVAL));
	timer_delete(t);
}

/* ---- itimer, alarm ---- */

/* arg: period (0: one-shot) */
static void do_setitimer(struct ctx *c)
{
	i64 period = c->arg;
	struct itimerval itv = { ns_tv(period), ns_tv(period ? period : c->d) };
	siginfo_t si;
	int sum = 0;

	block_sig(SIGALRM);
	begin(c);
	if (setitimer(ITIMER_REAL, &itv, NULL)) {
		end(c);
		cfail(c, "setitimer: %s", strerror(errno));
		return;
	}
	do {
		if (wait_sig(SIGALRM, &si) != SIGALRM) {
			end(c);
			cfail(c, "sigwaitinfo: %s", strerror(errno));
			return;
		}
		sum++;		/* SIGALRM has no overrun count: missed periods are skipped */
	} while (period && sum < NPERIODS);
	end(c);
	if (period) {
		c->r->min_e = c->r->exp_e = (i64)sum * period;
		cdiag(c, "%d SIGALRMs of %s", sum, fmt_ns(period));
	}
}

static void do_getitimer(struct ctx *c)
{
	struct itimerval itv = { ns_tv(GT_INTERVAL), ns_tv(c->d) }, cur;
	int ret;

	c->r->nobounds = 1;
	block_sig(SIGALRM);
	begin(c);
	ret = setitimer(ITIMER_REAL, &itv, NULL);
	spin_ns(c->clk, c->d / 3);
	if (!ret)
		ret = getitimer(ITIMER_REAL, &cur);
	end(c);
	if (ret) {
		cfail(c, "setitimer/getitimer: %s", strerror(errno));
		return;
	}
	/* usec granularity: the kernel truncates */
	check_rem(c, "it_value", tv_ns(&cur.it_value), c->d, REM_TOL + NS_US);
	if (llabs(tv_ns(&cur.it_interval) - GT_INTERVAL) > NS_US)
		cfail(c, "it_interval %s, armed %s", fmt_ns(tv_ns(&cur.it_interval)), fmt_ns(GT_INTERVAL));
}

static void do_alarm(struct ctx *c)
{
	siginfo_t si;

	block_sig(SIGALRM);
	begin(c);
	alarm(c->d / NS_S);
	if (wait_sig(SIGALRM, &si) != SIGALRM)
		cfail(c, "sigwaitinfo: %s", strerror(errno));
	end(c);
}

/* alarm(3), 100 ms (namespace) later alarm(0) returns 3 (2.9 s, rounded) */
static void do_alarm_remaining(struct ctx *c)
{
	unsigned int left;

	c->r->nobounds = 1;
	block_sig(SIGALRM);
	begin(c);
	alarm(3);
	spin_ns(c->clk, c->d);
	left = alarm(0);
	end(c);
	cdiag(c, "alarm(0) after %s returned %u", fmt_ns(c->r->t1 - c->r->t0), left);
	if (left != 3)
		cfail(c, "alarm(0) %s after alarm(3) returned %u, expected 3 (seconds, namespace)",
		      fmt_ns(c->r->t1 - c->r->t0), left);
}

#define MONO	CLOCK_MONOTONIC
#define REAL	CLOCK_REALTIME
#define BOOT	CLOCK_BOOTTIME
#define D10	(30 * NS_MS)
#define P10	(10 * NS_MS)
#define D1	(100 * NS_MS)
#define P1	(20 * NS_MS)
#define DMILLI	(100 * NS_S)	/* 100 ms of host time: enough for a two-sided bound */
#define PMILLI	(20 * NS_S)

static const struct tcase c10[] = {
	TC("timerfd CLOCK_MONOTONIC relative 30ms", do_timerfd, D10, MONO),
	TC("timerfd CLOCK_REALTIME TFD_TIMER_ABSTIME now+30ms", do_timerfd, D10, REAL, .arg = TFD_TIMER_ABSTIME),
	TC("timerfd CLOCK_BOOTTIME TFD_TIMER_ABSTIME now+30ms", do_timerfd, D10, BOOT, .arg = TFD_TIMER_ABSTIME),
	TC("timerfd CLOCK_MONOTONIC periodic 10ms x5", do_timerfd, NPERIODS * P10, MONO, .arg = P10),
	TC("timerfd_gettime CLOCK_MONOTONIC 60ms after 20ms", do_timerfd_gettime, 60 * NS_MS, MONO),
	TC("timer_create CLOCK_MONOTONIC SIGEV_SIGNAL relative 30ms", do_posix_timer, D10, MONO),
	TC("timer_create CLOCK_MONOTONIC SIGEV_SIGNAL TIMER_ABSTIME now+30ms", do_posix_timer, D10, MONO, .arg = PT_ABS),
	TC("timer_create CLOCK_REALTIME SIGEV_SIGNAL TIMER_ABSTIME now+30ms", do_posix_timer, D10, REAL, .arg = PT_ABS),
	TC("timer_create CLOCK_BOOTTIME SIGEV_SIGNAL relative 30ms", do_posix_timer, D10, BOOT),
	TC("timer_create CLOCK_MONOTONIC SIGEV_SIGNAL periodic 10ms x5", do_posix_timer, NPERIODS * P10, MONO,
	   .arg = PT_PERIOD(P10)),
	TC("timer_create CLOCK_MONOTONIC SIGEV_THREAD relative 30ms", do_posix_timer, D10, MONO, .arg = PT_THREAD),
	TC("timer_create CLOCK_MONOTONIC SIGEV_THREAD periodic 10ms x5", do_posix_timer, NPERIODS * P10, MONO,
	   .arg = PT_THREAD | PT_PERIOD(P10)),
	TC("timer_gettime CLOCK_MONOTONIC 60ms after 20ms", do_timer_gettime, 60 * NS_MS, MONO),
	TC("timer_gettime CLOCK_REALTIME 60ms after 20ms", do_timer_gettime, 60 * NS_MS, REAL),
	TC("setitimer ITIMER_REAL 30ms", do_setitimer, D10, MONO),
	TC("setitimer ITIMER_REAL periodic 10ms x5", do_setitimer, NPERIODS * P10, MONO, .arg = P10),
	TC("getitimer ITIMER_REAL 60ms after 20ms", do_getitimer, 60 * NS_MS, MONO),
	TC("alarm(1)", do_alarm, NS_S, MONO),
	TC("alarm(3), alarm(0) 100ms later returns 3", do_alarm_remaining, 100 * NS_MS, MONO),
};

static const struct tcase c1[] = {
	TC("timerfd CLOCK_MONOTONIC relative 100ms", do_timerfd, D1, MONO),
	TC("timer_create CLOCK_MONOTONIC SIGEV_SIGNAL periodic 20ms x5", do_posix_timer, NPERIODS * P1, MONO,
	   .arg = PT_PERIOD(P1)),
	TC("setitimer ITIMER_REAL 100ms", do_setitimer, D1, MONO),
};

static const struct tcase cmilli[] = {
	TC("timerfd CLOCK_MONOTONIC relative 100s", do_timerfd, DMILLI, MONO),
	TC("timerfd CLOCK_REALTIME TFD_TIMER_ABSTIME now+100s", do_timerfd, DMILLI, REAL, .arg = TFD_TIMER_ABSTIME),
	TC("timerfd CLOCK_MONOTONIC periodic 20s x5", do_timerfd, NPERIODS * PMILLI, MONO, .arg = PMILLI),
	TC("timerfd_gettime CLOCK_MONOTONIC 60s after 20s", do_timerfd_gettime, 60 * NS_S, MONO),
	TC("timer_create CLOCK_MONOTONIC SIGEV_SIGNAL relative 100s", do_posix_timer, DMILLI, MONO),
	TC("timer_create CLOCK_MONOTONIC SIGEV_SIGNAL TIMER_ABSTIME now+100s", do_posix_timer, DMILLI, MONO,
	   .arg = PT_ABS),
	TC("setitimer ITIMER_REAL 100s", do_setitimer, DMILLI, MONO),
	TC("alarm(100)", do_alarm, 100 * NS_S, MONO),
};

int main(void)
{
	ts_init(NCASES(c10) + NCASES(c1) + NCASES(cmilli));
	RUN_CASES(&TDF_10, c10);
	RUN_CASES(&TDF_1, c1);
	RUN_CASES(&TDF_MILLI, cmilli);
	ksft_finished();
}
