// SPDX-License-Identifier: GPL-2.0
/*
 * Futex timeouts in a dilated time namespace, raw and through glibc:
 * FUTEX_WAIT (relative, CLOCK_MONOTONIC), FUTEX_WAIT_BITSET (absolute,
 * CLOCK_MONOTONIC and FUTEX_CLOCK_REALTIME), futex_waitv (absolute,
 * CLOCK_MONOTONIC and CLOCK_REALTIME), FUTEX_LOCK_PI (absolute realtime) and
 * FUTEX_LOCK_PI2 (absolute monotonic) through pthread_mutex_timedlock /
 * pthread_mutex_clocklock on a PI mutex held by another thread,
 * pthread_cond_timedwait (CLOCK_REALTIME and a CLOCK_MONOTONIC condattr),
 * pthread_cond_clockwait, sem_timedwait, sem_clockwait.
 *
 * Every wait must time out after d on the namespace's clock (at or after
 * the absolute deadline), d * TDF of host time.  See timens_sleep.h.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <linux/futex.h>
#include "timens_sleep.h"

#ifndef FUTEX_LOCK_PI2
# define FUTEX_LOCK_PI2	13
#endif

static uint32_t fword;

enum {
	F_WAIT,			/* FUTEX_WAIT relative */
	F_WAIT_BITSET,		/* FUTEX_WAIT_BITSET absolute, c->clk */
	F_WAITV,		/* futex_waitv absolute, c->clk */
	F_LOCK_PI,		/* raw FUTEX_LOCK_PI (realtime) / LOCK_PI2 (monotonic) */
	G_MUTEX_TIMEDLOCK,	/* pthread_mutex_timedlock, PI mutex */
	G_MUTEX_CLOCKLOCK,	/* pthread_mutex_clocklock(c->clk), PI mutex */
	G_COND_TIMEDWAIT,	/* pthread_cond_timedwait, condattr clock c->clk */
	G_COND_CLOCKWAIT,	/* pthread_cond_clockwait(c->clk) */
	G_SEM_TIMEDWAIT,	/* sem_timedwait (realtime) */
	G_SEM_CLOCKWAIT,	/* sem_clockwait(c->clk) */
};

static pthread_mutex_t pim;
static int hold_pipe[2];
static volatile pid_t holder_tid;

static void *holder(void *arg)
{
	char b;

	(void)arg;
	pthread_mutex_lock(&pim);
	holder_tid = gettid();
	if (read(hold_pipe[0], &b, 1) < 0)
		b = 0;
	pthread_mutex_unlock(&pim);
	return NULL;
}

static int is_abs(int how)
{
	return how != F_WAIT;
}

static void do_futex(struct ctx *c)
{
	int how = (int)c->arg, ret = 0, err = 0, want = ETIMEDOUT;
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	struct timespec ts;
	pthread_t th = 0;
	i64 deadline = 0;
	sem_t sem;

	fword = 0;
	switch (how) {
	case F_LOCK_PI:
	case G_MUTEX_TIMEDLOCK:
	case G_MUTEX_CLOCKLOCK:
		pthread_mutexattr_init(&ma);
		if (pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT)) {
			cskip(c, "no PI mutexes");
			return;
		}
		pthread_mutex_init(&pim, &ma);
		if (pipe(hold_pipe) || pthread_create(&th, NULL, holder, NULL)) {
			cfail(c, "pipe/pthread_create failed");
			return;
		}
		while (!holder_tid)
			sched_yield();
		fword = holder_tid;	/* for the raw FUTEX_LOCK_PI: owned by holder */
		break;
	case G_COND_TIMEDWAIT:
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, c->clk);
		pthread_cond_init(&cv, &ca);
		break;
	case G_COND_CLOCKWAIT:
		pthread_cond_init(&cv, NULL);
		break;
	case G_SEM_TIMEDWAIT:
	case G_SEM_CLOCKWAIT:
		sem_init(&sem, 0, 0);
		break;
	}

	begin(c);
	if (is_abs(how)) {
		deadline = now_ns(c->clk) + c->d;
		ts = ns_ts(deadline);
		c->r->min_e = deadline - c->r->t0;
	} else {
		ts = ns_ts(c->d);
	}
	switch (how) {
	case F_WAIT:
		ret = syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		err = errno;
		break;
	case F_WAIT_BITSET:
		ret = syscall(SYS_futex, &fword,
			      FUTEX_WAIT_BITSET_PRIVATE | (c->clk == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0),
			      0, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
		err = errno;
		break;
	case F_WAITV:
#ifdef SYS_futex_waitv
	{
		struct futex_waitv w = {
			.val = 0, .uaddr = (uintptr_t)&fword, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG,
		};

		ret = syscall(SYS_futex_waitv, &w, 1, 0, &ts, c->clk);
		err = errno;
	}
#else
		ret = -1;
		err = ENOSYS;
#endif
		break;
	case F_LOCK_PI:
		/* LOCK_PI takes CLOCK_REALTIME, LOCK_PI2 CLOCK_MONOTONIC (unless FUTEX_CLOCK_REALTIME) */
		ret = syscall(SYS_futex, &fword,
			      (c->clk == CLOCK_REALTIME ? FUTEX_LOCK_PI : FUTEX_LOCK_PI2) | FUTEX_PRIVATE_FLAG,
			      0, &ts, NULL, 0);
		err = errno;
		break;
	case G_MUTEX_TIMEDLOCK:
		ret = err = pthread_mutex_timedlock(&pim, &ts);
		break;
	case G_MUTEX_CLOCKLOCK:
		ret = err = pthread_mutex_clocklock(&pim, c->clk, &ts);
		break;
	case G_COND_TIMEDWAIT:
		pthread_mutex_lock(&m);
		ret = err = pthread_cond_timedwait(&cv, &m, &ts);
		pthread_mutex_unlock(&m);
		break;
	case G_COND_CLOCKWAIT:
		pthread_mutex_lock(&m);
		ret = err = pthread_cond_clockwait(&cv, &m, c->clk, &ts);
		pthread_mutex_unlock(&m);
		break;
	case G_SEM_TIMEDWAIT:
		ret = sem_timedwait(&sem, &ts);
		err = errno;
		break;
	case G_SEM_CLOCKWAIT:
		ret = sem_clockwait(&sem, c->clk, &ts);
		err = errno;
		break;
	}
	end(c);

	if (ret && (err == ENOSYS || (how == F_LOCK_PI && err == EINVAL && c->clk != CLOCK_REALTIME))) {
		cskip(c, "not supported by this kernel (%s)", strerror(err));
		return;
	}
	if (ret == 0)
		cfail(c, "returned 0, expected %s", strerror(want));
	else if (err != want)
		cfail(c, "failed with %s, expected %s", strerror(err), strerror(want));
	if (deadline && c->r->t1 < deadline)
		cfail(c, "returned %s before the deadline", fmt_ns(deadline - c->r->t1));
	if (th) {
		if (write(hold_pipe[1], "x", 1) < 0)
			cfail(c, "write: %s", strerror(errno));
		pthread_join(th, NULL);
	}
}

#define MONO	CLOCK_MONOTONIC
#define REAL	CLOCK_REALTIME
#define D10	(30 * NS_MS)
#define D1	(100 * NS_MS)
#define DMILLI	(100 * NS_S)	/* 100 ms of host time: enough for a two-sided bound */

static const struct tcase c10[] = {
	TC("FUTEX_WAIT relative 30ms", do_futex, D10, MONO, .arg = F_WAIT),
	TC("FUTEX_WAIT_BITSET CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO, .arg = F_WAIT_BITSET),
	TC("FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME now+30ms", do_futex, D10, REAL, .arg = F_WAIT_BITSET),
	TC("futex_waitv CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO, .arg = F_WAITV),
	TC("futex_waitv CLOCK_REALTIME now+30ms", do_futex, D10, REAL, .arg = F_WAITV),
	TC("FUTEX_LOCK_PI CLOCK_REALTIME now+30ms", do_futex, D10, REAL, .arg = F_LOCK_PI),
	TC("FUTEX_LOCK_PI2 CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO, .arg = F_LOCK_PI),
	TC("pthread_mutex_timedlock PI now+30ms", do_futex, D10, REAL, .arg = G_MUTEX_TIMEDLOCK),
	TC("pthread_mutex_clocklock PI CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO, .arg = G_MUTEX_CLOCKLOCK),
	TC("pthread_cond_timedwait CLOCK_REALTIME now+30ms", do_futex, D10, REAL, .arg = G_COND_TIMEDWAIT),
	TC("pthread_cond_timedwait condattr CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO,
	   .arg = G_COND_TIMEDWAIT),
	TC("pthread_cond_clockwait CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO, .arg = G_COND_CLOCKWAIT),
	TC("sem_timedwait now+30ms", do_futex, D10, REAL, .arg = G_SEM_TIMEDWAIT),
	TC("sem_clockwait CLOCK_MONOTONIC now+30ms", do_futex, D10, MONO, .arg = G_SEM_CLOCKWAIT),
};

static const struct tcase c1[] = {
	TC("FUTEX_WAIT relative 100ms", do_futex, D1, MONO, .arg = F_WAIT),
	TC("pthread_cond_timedwait CLOCK_REALTIME now+100ms", do_futex, D1, REAL, .arg = G_COND_TIMEDWAIT),
};

static const struct tcase cmilli[] = {
	TC("FUTEX_WAIT relative 100s", do_futex, DMILLI, MONO, .arg = F_WAIT),
	TC("FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME now+100s", do_futex, DMILLI, REAL, .arg = F_WAIT_BITSET),
	TC("futex_waitv CLOCK_MONOTONIC now+100s", do_futex, DMILLI, MONO, .arg = F_WAITV),
	TC("pthread_mutex_timedlock PI now+100s", do_futex, DMILLI, REAL, .arg = G_MUTEX_TIMEDLOCK),
	TC("pthread_cond_clockwait CLOCK_MONOTONIC now+100s", do_futex, DMILLI, MONO, .arg = G_COND_CLOCKWAIT),
	TC("sem_timedwait now+100s", do_futex, DMILLI, REAL, .arg = G_SEM_TIMEDWAIT),
};

int main(void)
{
	ts_init(NCASES(c10) + NCASES(c1) + NCASES(cmilli));
	RUN_CASES(&TDF_10, c10);
	RUN_CASES(&TDF_1, c1);
	RUN_CASES(&TDF_MILLI, cmilli);
	ksft_finished();
}
