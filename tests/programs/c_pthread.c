// SPDX-License-Identifier: GPL-2.0
/*
 * A glibc program with threads in a dilated time namespace:
 * pthread_cond_timedwait (CLOCK_REALTIME deadline) in the main thread, then
 * two threads at once, one in nanosleep, one in pthread_cond_clockwait
 * (CLOCK_MONOTONIC deadline); each measured on its own clocks, each phase
 * bracketed by MARK lines for tdfrun's host-time check.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include "tdfprog.h"

#define D (200 * NS_MS)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long long got[2];
static int rets[2];

static struct timespec deadline(clockid_t c, long long *dl)
{
	struct timespec ts;

	*dl = now_ns(c) + D;
	ts.tv_sec = *dl / 1000000000LL;
	ts.tv_nsec = *dl % 1000000000LL;
	return ts;
}

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, D };
	long long m0 = now_ns(CLOCK_MONOTONIC);

	(void)arg;
	rets[0] = nanosleep(&ts, NULL);
	got[0] = now_ns(CLOCK_MONOTONIC) - m0;
	return NULL;
}

static void *waiter(void *arg)
{
	long long dl, m0 = now_ns(CLOCK_MONOTONIC);
	struct timespec ts = deadline(CLOCK_MONOTONIC, &dl);

	(void)arg;
	pthread_mutex_lock(&mu);
	rets[1] = pthread_cond_clockwait(&cv, &mu, CLOCK_MONOTONIC, &ts);
	pthread_mutex_unlock(&mu);
	got[1] = now_ns(CLOCK_MONOTONIC) - m0;
	return NULL;
}

int main(void)
{
	long long m0, m1, r0, r1, dl;
	struct timespec ts;
	pthread_t a, b;
	int ret;

	mark_begin("cond_timedwait", D);
	m0 = now_ns(CLOCK_MONOTONIC);
	r0 = now_ns(CLOCK_REALTIME);
	ts = deadline(CLOCK_REALTIME, &dl);
	pthread_mutex_lock(&mu);
	ret = pthread_cond_timedwait(&cv, &mu, &ts);
	pthread_mutex_unlock(&mu);
	m1 = now_ns(CLOCK_MONOTONIC);
	r1 = now_ns(CLOCK_REALTIME);
	mark_end("cond_timedwait");
	check(ret == ETIMEDOUT, "pthread_cond_timedwait times out", "returned %d", ret);
	check(r1 >= dl && r1 < dl + D, "pthread_cond_timedwait CLOCK_REALTIME now+200ms",
	      "woke %.3f ms after the deadline (in [0, 200) ms)", (double)(r1 - dl) / NS_MS);
	check_sleep("pthread_cond_timedwait 200ms", "CLOCK_MONOTONIC", m1 - m0, D);
	(void)r0;

	mark_begin("threads", D);
	m0 = now_ns(CLOCK_MONOTONIC);
	pthread_create(&a, NULL, sleeper, NULL);
	pthread_create(&b, NULL, waiter, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	m1 = now_ns(CLOCK_MONOTONIC);
	mark_end("threads");
	check(rets[0] == 0 && rets[1] == ETIMEDOUT, "thread waits end normally",
	      "nanosleep %d, pthread_cond_clockwait %d", rets[0], rets[1]);
	check_sleep("thread nanosleep 200ms", "CLOCK_MONOTONIC", got[0], D);
	check_sleep("thread pthread_cond_clockwait 200ms", "CLOCK_MONOTONIC", got[1], D);
	check_sleep("both threads 200ms", "CLOCK_MONOTONIC", m1 - m0, D);
	return done();
}
