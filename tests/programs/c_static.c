// SPDX-License-Identifier: GPL-2.0
/*
 * A statically linked program (gcc -static: glibc's static vDSO setup and
 * system-call wrappers) sleeping in a dilated time namespace: nanosleep,
 * clock_nanosleep TIMER_ABSTIME, select, each checked on its own
 * CLOCK_MONOTONIC (and CLOCK_REALTIME, which must agree), and bracketed by
 * MARK lines for tdfrun's host-time check.
 */
#define _GNU_SOURCE
#include <sys/select.h>
#include "tdfprog.h"

int main(void)
{
	long long m0, m1, r0, r1, dl;
	struct timespec ts = { 0, 200 * NS_MS };
	struct timeval tv = { 0, 100000 };

	mark_begin("nanosleep", 200 * NS_MS);
	m0 = now_ns(CLOCK_MONOTONIC);
	r0 = now_ns(CLOCK_REALTIME);
	nanosleep(&ts, NULL);
	m1 = now_ns(CLOCK_MONOTONIC);
	r1 = now_ns(CLOCK_REALTIME);
	mark_end("nanosleep");
	check_sleep("static nanosleep 200ms", "CLOCK_MONOTONIC", m1 - m0, 200 * NS_MS);
	check(llabs((r1 - r0) - (m1 - m0)) < 5 * NS_MS, "static CLOCK_REALTIME agrees with CLOCK_MONOTONIC",
	      "realtime %.3f ms, monotonic %.3f ms", (double)(r1 - r0) / NS_MS, (double)(m1 - m0) / NS_MS);

	mark_begin("clock_nanosleep_abs", 200 * NS_MS);
	m0 = now_ns(CLOCK_MONOTONIC);
	dl = m0 + 200 * NS_MS;
	ts.tv_sec = dl / 1000000000LL;
	ts.tv_nsec = dl % 1000000000LL;
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	m1 = now_ns(CLOCK_MONOTONIC);
	mark_end("clock_nanosleep_abs");
	check(m1 >= dl && m1 < dl + 200 * NS_MS, "static clock_nanosleep TIMER_ABSTIME now+200ms",
	      "woke %.3f ms after the deadline (in [0, 200) ms)", (double)(m1 - dl) / NS_MS);

	mark_begin("select", 100 * NS_MS);
	m0 = now_ns(CLOCK_MONOTONIC);
	select(0, NULL, NULL, NULL, &tv);
	m1 = now_ns(CLOCK_MONOTONIC);
	mark_end("select");
	check_sleep("static select 100ms", "CLOCK_MONOTONIC", m1 - m0, 100 * NS_MS);
	return done();
}
