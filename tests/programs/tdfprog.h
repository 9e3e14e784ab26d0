/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output protocol of the test programs run by tdfrun (see tdfrun.c and
 * tests/vm/programs-*.t):
 *   CHECK ok|fail NAME: DETAILS     a check against the program's own clocks
 *   MARK begin NAME NS / MARK end NAME   a sleep phase of NS (namespace) ns,
 *                                   checked against the host clock by tdfrun;
 *                                   after MARK begin, wait for tdfrun's line on
 *                                   stdin if TDFRUN_ACK=1
 *   DONE N                          the program got to the end, N checks
 */
#ifndef TDFPROG_H
#define TDFPROG_H
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define NS_MS 1000000LL

static int nchecks, nfailed;

static inline long long now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void mark_begin(const char *name, long long ns)
{
	const char *ack = getenv("TDFRUN_ACK");
	char c = 0;

	printf("MARK begin %s %lld\n", name, ns);
	fflush(stdout);
	if (ack && *ack == '1')
		while (c != '\n' && read(0, &c, 1) == 1)
			;
}

static inline void mark_end(const char *name)
{
	printf("MARK end %s\n", name);
	fflush(stdout);
}

static inline __attribute__((format(printf, 3, 4)))
void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	nchecks++;
	nfailed += !ok;
	printf("CHECK %s %s: ", ok ? "ok" : "fail", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* a sleep of @want ns measured as @got ns on the program's own clock */
static inline void check_sleep(const char *name, const char *clk, long long got, long long want)
{
	check(got >= want && got < 2 * want, name, "%s elapsed %.3f ms for %.3f ms (in [%.0f, %.0f) ms)",
	      clk, (double)got / NS_MS, (double)want / NS_MS, (double)want / NS_MS,
	      2.0 * want / NS_MS);
}

static inline int done(void)
{
	printf("DONE %d\n", nchecks);
	fflush(stdout);
	return nfailed ? 1 : 0;
}
#endif
