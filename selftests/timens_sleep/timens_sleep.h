/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared harness for the sleep/timer/timeout selftests of time-namespace
 * dilation (see docs/interface.md and
 * Documentation/admin-guide/time-namespace-dilation.rst).
 *
 * Semantics under test: in a time namespace with dilation factor TDF, a
 * relative duration d given by a task of the namespace lasts d * TDF of host
 * time (rounded up, never early on the namespace's clocks); an absolute
 * deadline is on the namespace's (dilated) clock; remaining times reported
 * back are in namespace units; periodic timers fire every P * TDF of host
 * time without drift; overflowing durations mean "forever".
 *
 * Measurement model
 * -----------------
 * The test process ("parent") does unshare(CLONE_NEWTIME) once, so that its
 * children land in a new time namespace, and writes the TDF of each case to
 * /proc/self/timens_dilation before forking the case's child.  The parent
 * itself stays in the root time namespace: its CLOCK_MONOTONIC is host time.
 *
 * Each case runs in a fresh child.  The child sets up (creates its timerfd,
 * socket, ring ...), then calls begin(): it writes 'R' to the parent and
 * blocks until the parent answers 'G'; the parent reads the host clock (h0)
 * just before sending 'G'.  The child reads its own (dilated) clock (t0),
 * arms/performs the wait, reads its clock again (t1) in end() and writes 'D';
 * the parent reads the host clock (h1) on receiving 'D'.  By causality the
 * whole wait lies inside the host interval [h0, h1], so:
 *
 *   inside:  t1 - t0 >= min_e                        never early (exact)
 *            t1 - t0 <= exp_e + slack(exp_e*TDF)/TDF  not hugely late
 *   host:    h1 - h0 >= min_e * TDF - 1 us           the wait lasted TDF x
 *            h1 - h0 <= exp_e * TDF + slack(exp_e*TDF)
 *   clocks:  t1 - t0 <= (h1 - h0) / TDF + 1 us       (sanity of the setup)
 *
 * min_e defaults to the requested duration d; for absolute deadlines the case
 * sets it to deadline - t0 (so "t1 >= deadline" is what is checked).
 * slack(x) = min(TIMENS_SLEEP_SLACK_MS (default 250 ms) + x / 4, x / 2):
 * QEMU TCG wake-up latencies are large and bursty, but a slack of x / 2 or
 * more would let a kernel applying twice the factor pass, so it never
 * reaches that.  The lower bounds have no slack at all: they are what a
 * correct kernel guarantees, and a kernel applying half the factor (or not
 * dilating: a TDF-10 wait of d instead of 10 d of host time) fails them.
 *
 * A case that failed only an upper bound (it was late, nothing else) runs
 * again, up to TIMENS_SLEEP_TRIES times (default 3), and the point reports
 * the last try: a late wake-up of a noisy machine does not repeat, a kernel
 * applying the wrong factor is late every time.  Anything else (early, an
 * error, a wrong value) fails at once.
 *
 * Cases that check reported remaining times do it inside the child:
 * rem + (t1 - t0) must lie in [d - REM_TOL, d + slack/TDF] in namespace units
 * (the remaining time is taken inside [t0, t1]).
 *
 * "Forever" cases (overflowing timeouts) check that the child is still
 * blocked (state S) FOREVER_MS of host time after 'G', then kill it.
 *
 * Every case has a watchdog: a child that does not finish within
 * 1.5 * expected host time + slack + 2 s is killed and the case fails, so a
 * kernel that does not dilate (TDF < 1: sleeps 1000 x too long) cannot hang
 * the suite.
 */
#ifndef __TIMENS_SLEEP_H__
#define __TIMENS_SLEEP_H__

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest.h"
#include "timens_dilation_util.h"
#include "../timens_dilation/pipe_io.h"

typedef long long i64;

#define NS_US		1000LL
#define NS_MS		1000000LL
#define NS_S		1000000000LL
#define KTIME_MAX_NS	LLONG_MAX

#define REM_TOL		(10 * NS_US)	/* rounding of reported remaining times */
#define FOREVER_MS	1000		/* "still sleeping" after this much host time */

/* ------------------------------------------------------------------ */
/* Factors                                                             */

struct tdf {
	const char *str;	/* written to timens_dilation, printed */
	i64 n, d;		/* TDF = n / d */
};

static const struct tdf TDF_1 = { "1", 1, 1 };
static const struct tdf TDF_10 = { "10", 10, 1 };
static const struct tdf TDF_1000 = { "1000", 1000, 1 };
static const struct tdf TDF_MILLI = { "0.001", 1, 1000 };

/* namespace duration -> host duration (exact rational, truncated) */
static inline i64 to_host(const struct tdf *t, i64 ns)
{
	__int128 v = (__int128)ns * t->n / t->d;

	return v > LLONG_MAX ? LLONG_MAX : (i64)v;
}

/* host duration -> namespace duration */
static inline i64 to_ns(const struct tdf *t, i64 host)
{
	__int128 v = (__int128)host * t->d / t->n;

	return v > LLONG_MAX ? LLONG_MAX : (i64)v;
}

/* ------------------------------------------------------------------ */
/* Time helpers                                                        */

static inline i64 ts_ns(const struct timespec *t)
{
	return (i64)t->tv_sec * NS_S + t->tv_nsec;
}

static inline struct timespec ns_ts(i64 ns)
{
	struct timespec t = { ns / NS_S, ns % NS_S };

	return t;
}

static inline i64 tv_ns(const struct timeval *t)
{
	return (i64)t->tv_sec * NS_S + (i64)t->tv_usec * NS_US;
}

static inline struct timeval ns_tv(i64 ns)
{
	struct timeval t = { ns / NS_S, (ns % NS_S) / NS_US };

	return t;
}

/* clock_gettime: host time in the parent, namespace time in a case child */
static inline i64 now_ns(clockid_t c)
{
	struct timespec t;

	if (clock_gettime(c, &t))
		return -1;
	return ts_ns(&t);
}

/* "123.456 ms" into one of a few rotating buffers */
static inline const char *fmt_ns(i64 ns)
{
	static char buf[8][40];
	static int k;
	char *b = buf[k++ & 7];
	i64 a = ns < 0 ? -ns : ns;

	if (ns == LLONG_MAX)
		snprintf(b, 40, "KTIME_MAX");
	else if (a >= 100 * NS_S)
		snprintf(b, 40, "%.3f s", (double)ns / NS_S);
	else if (a >= NS_MS)
		snprintf(b, 40, "%.3f ms", (double)ns / NS_MS);
	else
		snprintf(b, 40, "%.3f us", (double)ns / NS_US);
	return b;
}

static inline const char *clock_name(clockid_t c)
{
	switch (c) {
	case CLOCK_REALTIME:	return "CLOCK_REALTIME";
	case CLOCK_MONOTONIC:	return "CLOCK_MONOTONIC";
	case CLOCK_BOOTTIME:	return "CLOCK_BOOTTIME";
	case CLOCK_TAI:		return "CLOCK_TAI";
	default:		return "CLOCK_?";
	}
}

/* Burn CPU until @clk advanced by @ns (waits without any timer). */
static inline void spin_ns(clockid_t clk, i64 ns)
{
	i64 t0 = now_ns(clk);

	while (now_ns(clk) - t0 < ns)
		;
}

/* ------------------------------------------------------------------ */
/* Globals of the harness                                              */

static i64 slack_base_ns = 250 * NS_MS;
static int tries = 3;		/* runs of a case that was only late */
static i64 jiffy_ns = 4 * NS_MS;	/* host tick, for jiffy-based timeouts */
/*
 * TIMENS_SLEEP_PRETEND=1, for developing the harness on a kernel without
 * dilation: nothing is written to timens_dilation (the namespace stays at
 * factor 1) but the cases run as if it had worked.  The factor-1 cases must
 * pass; the others show how a kernel that does not dilate fails.
 */
static int pretend;

static inline i64 slack_host(i64 host_ns)
{
	i64 s = slack_base_ns + host_ns / 4;

	return s < host_ns / 2 ? s : host_ns / 2;
}

/*
 * Common start: skip without dilation or privileges, unshare the time
 * namespace for our children, read the tunables.
 */
static inline void ts_init(unsigned int plan)
{
	struct timespec r;
	const char *s;

	ksft_print_header();
	pretend = getenv("TIMENS_SLEEP_PRETEND") && atoi(getenv("TIMENS_SLEEP_PRETEND"));
	if (!pretend)
		require_dilation();
	unshare_timens_or_skip();
	s = getenv("TIMENS_SLEEP_SLACK_MS");
	if (s && atoll(s) > 0)
		slack_base_ns = atoll(s) * NS_MS;
	s = getenv("TIMENS_SLEEP_TRIES");
	if (s && atoi(s) > 0)
		tries = atoi(s);
	if (!clock_getres(CLOCK_MONOTONIC_COARSE, &r) && ts_ns(&r) > 0)
		jiffy_ns = ts_ns(&r);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_set_plan(plan);
	if (pretend)
		ksft_print_msg("TIMENS_SLEEP_PRETEND: the factors are NOT written, all namespaces run at 1\n");
	ksft_print_msg("host slack %s + 25%% of the expected host time (at most 50%%), %d tries if late, tick %s, %ld CPUs\n",
		       fmt_ns(slack_base_ns), tries, fmt_ns(jiffy_ns), sysconf(_SC_NPROCESSORS_ONLN));
}

/* The factor for the children to come; nothing if pretending. */
static inline int set_tdf(const struct tdf *t)
{
	return pretend ? 0 : dil_write(DIL_SELF, t->str);
}

/* ------------------------------------------------------------------ */
/* Cases                                                               */

enum kind {
	K_TIMED,	/* a wait that must last d (namespace) = d * TDF (host) */
	K_SIGNAL,	/* as K_TIMED, and SIGUSR1 comes sig_at host ns after 'G' */
	K_FOREVER,	/* must still be blocked FOREVER_MS host ms after 'G' */
};

struct result {
	int ran;		/* begin() was reached */
	int skip;		/* cannot run here: msg says why */
	int fail;		/* a check in the child failed: msg says which */
	int nobounds;		/* the child checked the timing itself */
	int hard;		/* a failure other than lateness (never retried) */
	i64 t0, t1;		/* the case clock at begin() and end() */
	i64 min_e;		/* required t1 - t0; < 0: none */
	i64 exp_e;		/* expected t1 - t0 */
	i64 v[8];		/* case-specific values */
	char msg[320];
	char diag[320];
};

struct ctx {
	int wfd, rfd;
	clockid_t clk;		/* what t0/t1 are read from */
	i64 d;			/* requested duration (namespace ns) */
	i64 arg;
	const struct tdf *tdf;
	struct result *r;
};

struct tcase {
	const char *name;
	void (*fn)(struct ctx *c);
	i64 d;			/* requested duration, namespace ns */
	clockid_t clk;
	enum kind kind;
	i64 sig_at;		/* K_SIGNAL: host ns after 'G' */
	i64 arg;
	i64 xslack;		/* extra host slack for the upper bounds */
};

/* Append "; " and the message to the case's result. */
static inline __printf(2, 0) void result_vappend(struct result *r, const char *fmt, va_list ap)
{
	size_t o = strlen(r->msg);

	if (o + 4 >= sizeof(r->msg))
		return;
	if (o) {
		strcpy(r->msg + o, "; ");
		o += 2;
	}
	vsnprintf(r->msg + o, sizeof(r->msg) - o, fmt, ap);
}

/* A failure: early, an error, a wrong value. Never retried. */
static inline __printf(2, 3) void cfail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	result_vappend(c->r, fmt, ap);
	va_end(ap);
	c->r->fail = 1;
	c->r->hard = 1;
}

/* A failure that is only lateness: the case may run again (see tries). */
static inline __printf(2, 3) void clate(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	result_vappend(c->r, fmt, ap);
	va_end(ap);
	c->r->fail = 1;
}

static inline __printf(2, 3) void cskip(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->r->msg, sizeof(c->r->msg), fmt, ap);
	va_end(ap);
	c->r->skip = 1;
}

static inline __printf(2, 3) void cdiag(struct ctx *c, const char *fmt, ...)
{
	struct result *r = c->r;
	size_t o = strlen(r->diag);
	va_list ap;

	if (o + 4 >= sizeof(r->diag))
		return;
	if (o) {
		strcpy(r->diag + o, ", ");
		o += 2;
	}
	va_start(ap, fmt);
	vsnprintf(r->diag + o, sizeof(r->diag) - o, fmt, ap);
	va_end(ap);
}

/* errno check of the wait: @ret must be -1 with errno @want */
#define EXPECT_ERR(c, ret, want, what) do {					\
	int __e = errno;							\
	if ((ret) != -1 || __e != (want))					\
		cfail(c, "%s returned %ld (%s), expected -1 %s", what,		\
		      (long)(ret), (ret) == -1 ? strerror(__e) : "no error",	\
		      strerror(want));						\
} while (0)

/* In the child: handshake with the parent, then t0. */
static inline void begin(struct ctx *c)
{
	char b = 'R';

	if (write_full(c->wfd, &b, 1) || read_full(c->rfd, &b, 1) || b != 'G')
		_exit(3);
	c->r->ran = 1;
	c->r->t0 = now_ns(c->clk);
}

/* In the child: t1, then tell the parent. */
static inline void end(struct ctx *c)
{
	char b = 'D';

	c->r->t1 = now_ns(c->clk);
	if (write_full(c->wfd, &b, 1))
		_exit(3);
}

static void sig_noop(int sig)
{
	(void)sig;
}

/* 1: a byte arrived within @ms (-1: forever); 0: timeout; -1: EOF/error */
static inline int wait_byte(int fd, char *b, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int ret;

	do
		ret = poll(&p, 1, ms);
	while (ret < 0 && errno == EINTR);
	if (ret == 0)
		return 0;
	if (ret < 0)
		return -1;
	return read_full(fd, b, 1) ? -1 : 1;
}

static inline char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static inline void kill_wait(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static inline void sleep_host_until(i64 deadline)
{
	struct timespec t = ns_ts(deadline);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

/*
 * Run one case at factor @t: exactly one TAP point, "tdf=T NAME".  Returns
 * the result (for callers that check more), or NULL if the case did not run.
 */
static struct result last_result;

/* One run of a case; *retry is set when it was only late and may run again. */
static inline struct result *run_case_once(const struct tdf *t, const struct tcase *tc,
					   int last, int *retry)
{
	struct result *r = &last_result;
	char name[200], b;
	int a[2], p[2], ret, got;
	i64 h0 = 0, h1 = 0, hs = 0, exph, e, H, up_in, up_host, lo_host, wd;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	snprintf(name, sizeof(name), "tdf=%s %s", t->str, tc->name);
	ret = set_tdf(t);
	if (ret) {
		ksft_test_result_fail("%s: writing %s to /proc/self/timens_dilation: %s\n",
				      name, t->str, strerror(-ret));
		return NULL;
	}
	if (pipe2(a, O_CLOEXEC) || pipe2(p, O_CLOEXEC)) {
		ksft_test_result_fail("%s: pipe: %s\n", name, strerror(errno));
		return NULL;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		ksft_test_result_fail("%s: fork: %s\n", name, strerror(errno));
		return NULL;
	}
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = sig_noop };	/* no SA_RESTART */
		struct ctx c = {
			.wfd = p[1], .rfd = a[0], .clk = tc->clk, .d = tc->d,
			.arg = tc->arg, .tdf = t, .r = r,
		};

		close(a[1]);
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigaction(SIGUSR1, &sa, NULL);
		r->min_e = tc->d;
		r->exp_e = tc->d;
		tc->fn(&c);
		if (!r->ran && !r->skip && !r->fail)
			cfail(&c, "the case never started its wait");
		b = 'X';
		if (write_full(p[1], &b, 1) || write_full(p[1], r, sizeof(*r)))
			_exit(3);
		_exit(0);
	}
	close(a[0]);
	close(p[1]);

	exph = to_host(t, tc->d);
	wd = (exph + exph / 2 + slack_host(exph) + tc->xslack + 2 * NS_S) / NS_MS;
	if (wd > INT_MAX)
		wd = INT_MAX;

	got = wait_byte(p[0], &b, 30000);	/* setup */
	if (got == 1 && b == 'R') {
		h0 = now_ns(CLOCK_MONOTONIC);
		if (write_full(a[1], "G", 1))
			got = -1;
	}
	if (got != 1) {
		ksft_test_result_fail("%s: the child %s before starting\n", name,
				      got ? "died" : "hung for 30 s");
		goto out_kill;
	}
	if (b == 'X')
		goto result;

	if (tc->kind == K_FOREVER) {
		got = wait_byte(p[0], &b, FOREVER_MS);
		h1 = now_ns(CLOCK_MONOTONIC);
		if (got == 0) {
			char st = proc_state(pid);

			if (st == 'S' || st == 'D')
				ksft_test_result_pass("%s: still blocked after %s of host time (state %c)\n",
						      name, fmt_ns(h1 - h0), st);
			else
				ksft_test_result_fail("%s: not returned after %s of host time, but in state %c, not sleeping\n",
						      name, fmt_ns(h1 - h0), st);
			goto out_kill;
		}
		if (got < 0 || b != 'D') {
			ksft_test_result_fail("%s: the child died during the wait\n", name);
			goto out_kill;
		}
		if (read_full(p[0], &b, 1) || read_full(p[0], r, sizeof(*r))) {
			ksft_test_result_fail("%s: returned after %s of host time (and the child died)\n",
					      name, fmt_ns(h1 - h0));
			goto out_kill;
		}
		ksft_test_result_fail("%s: returned after %s of host time, %s of namespace time%s%s\n",
				      name, fmt_ns(h1 - h0), fmt_ns(r->t1 - r->t0),
				      r->msg[0] ? ": " : "", r->msg);
		goto out_kill;
	}

	if (tc->kind == K_SIGNAL) {
		sleep_host_until(h0 + tc->sig_at);
		hs = now_ns(CLOCK_MONOTONIC);
		kill(pid, SIGUSR1);
	}
	got = wait_byte(p[0], &b, (int)wd);
	h1 = now_ns(CLOCK_MONOTONIC);
	if (got != 1 || b != 'D') {
		if (got == 0)
			ksft_test_result_fail("%s: no return within %s of host time (expected ~%s): killed\n",
					      name, fmt_ns(h1 - h0), fmt_ns(exph));
		else
			ksft_test_result_fail("%s: the child died during the wait\n", name);
		goto out_kill;
	}
	if (wait_byte(p[0], &b, 30000) != 1 || b != 'X') {
		ksft_test_result_fail("%s: the child died or hung after the wait\n", name);
		goto out_kill;
	}
result:
	if (read_full(p[0], r, sizeof(*r))) {
		ksft_test_result_fail("%s: no result from the child\n", name);
		goto out_kill;
	}
	if (r->skip) {
		ksft_test_result_code(KSFT_SKIP, name, "%s", r->msg);
		goto out_kill;
	}
	if (!r->ran) {
		ksft_test_result_fail("%s: %s\n", name, r->msg);
		goto out_kill;
	}

	e = r->t1 - r->t0;
	H = h1 - h0;
	exph = to_host(t, r->exp_e);
	up_host = exph + slack_host(exph) + tc->xslack;
	up_in = r->exp_e + to_ns(t, slack_host(exph) + tc->xslack);
	lo_host = to_host(t, r->min_e) - NS_US;
	if (r->nobounds)
		ksft_print_msg("%s: namespace %s, host %s%s%s\n", name, fmt_ns(e), fmt_ns(H),
			       tc->kind == K_SIGNAL ? ", signal at host +" : "",
			       tc->kind == K_SIGNAL ? fmt_ns(hs - h0) : "");
	else
		ksft_print_msg("%s: namespace %s (min %s), host %s (expected %s)\n",
			       name, fmt_ns(e), r->min_e >= 0 ? fmt_ns(r->min_e) : "-", fmt_ns(H),
			       fmt_ns(to_host(t, r->exp_e)));
	if (r->diag[0])
		ksft_print_msg("%s: %s\n", name, r->diag);

	if (e > to_ns(t, H) + NS_US)
		cfail(&(struct ctx){ .r = r }, "namespace clock advanced %s in %s of host time: more than host/TDF",
		      fmt_ns(e), fmt_ns(H));
	if (!r->nobounds) {
		if (r->min_e >= 0 && e < r->min_e)
			cfail(&(struct ctx){ .r = r }, "EARLY: %s of namespace time < %s", fmt_ns(e),
			      fmt_ns(r->min_e));
		if (e > up_in)
			clate(&(struct ctx){ .r = r }, "late: %s of namespace time > %s", fmt_ns(e),
			      fmt_ns(up_in));
		if (r->min_e >= 0 && H < lo_host)
			cfail(&(struct ctx){ .r = r }, "host: %s < %s (d x TDF)", fmt_ns(H),
			      fmt_ns(lo_host + NS_US));
		if (H > up_host)
			clate(&(struct ctx){ .r = r }, "host: %s > %s", fmt_ns(H), fmt_ns(up_host));
	}
	if (r->fail && !r->hard && !last) {
		ksft_print_msg("%s: late, trying again: %s\n", name, r->msg);
		*retry = 1;
	} else if (r->fail)
		ksft_test_result_fail("%s: %s\n", name, r->msg);
	else
		ksft_test_result_pass("%s\n", name);
out_kill:
	close(a[1]);
	close(p[0]);
	kill_wait(pid);
	return r;
}

static inline struct result *run_case(const struct tdf *t, const struct tcase *tc)
{
	struct result *r;
	int n, retry;

	for (n = 1;; n++) {
		retry = 0;
		r = run_case_once(t, tc, n >= tries, &retry);
		if (!retry)
			return r;
	}
}

/* ------------------------------------------------------------------ */
/* Small helpers for the cases                                         */

/* Block @sig in the calling thread (for sigwaitinfo). */
static inline void block_sig(int sig)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

/* Wait for @sig (blocked) with sigwaitinfo; returns si_overrun + 1, or -1. */
static inline int wait_sig(int sig, siginfo_t *si)
{
	sigset_t s;
	int ret;

	sigemptyset(&s);
	sigaddset(&s, sig);
	do
		ret = sigwaitinfo(&s, si);
	while (ret < 0 && errno == EINTR);
	return ret;
}

/*
 * Check a remaining time @rem reported at a moment inside [t0, t1] for a
 * duration @d armed inside [t0, t1]: rem + (t1 - t0) in [d - tol, d + slack].
 */
static inline void check_rem(struct ctx *c, const char *what, i64 rem, i64 d, i64 tol)
{
	i64 e = c->r->t1 - c->r->t0;
	i64 up = d + to_ns(c->tdf, slack_host(to_host(c->tdf, d)));

	cdiag(c, "%s %s after %s (sum %s, armed %s)", what, fmt_ns(rem), fmt_ns(e),
	      fmt_ns(rem + e), fmt_ns(d));
	if (rem <= 0 || rem > d)
		cfail(c, "%s %s outside (0, %s]", what, fmt_ns(rem), fmt_ns(d));
	else if (rem + e < d - tol)
		cfail(c, "%s %s + elapsed %s = %s, expected %s (in [-%s, +%s])", what, fmt_ns(rem),
		      fmt_ns(e), fmt_ns(rem + e), fmt_ns(d), fmt_ns(tol), fmt_ns(up - d));
	else if (rem + e > up)
		clate(c, "%s %s + elapsed %s = %s, expected %s (in [-%s, +%s])", what, fmt_ns(rem),
		      fmt_ns(e), fmt_ns(rem + e), fmt_ns(d), fmt_ns(tol), fmt_ns(up - d));
}

/* a case, with designated initializers only (-Wmissing-field-initializers) */
#define TC(nm, f, dur, ck, ...) \
	{ .name = (nm), .fn = (f), .d = (dur), .clk = (ck), __VA_ARGS__ }
#define SIG_AT(ns)	.kind = K_SIGNAL, .sig_at = (ns)
#define FOREVER		.kind = K_FOREVER

#define NCASES(a)	((int)(sizeof(a) / sizeof((a)[0])))

/* Every case of the table @tab, at factor @t */
#define RUN_CASES(t, tab)	run_cases(t, tab, NCASES(tab))

static inline void run_cases(const struct tdf *t, const struct tcase *tab, int n)
{
	int i;

	for (i = 0; i < n; i++)
		run_case(t, &tab[i]);
}

#endif
