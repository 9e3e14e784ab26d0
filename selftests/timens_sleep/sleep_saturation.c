// SPDX-License-Identifier: GPL-2.0
/*
 * Far absolute deadlines in a dilated namespace with a negative monotonic
 * and boottime offset (the usual "container uptime starts at 0").  A
 * deadline of now + 10^8 s (what HotSpot's timed parks use) maps to more
 * than KTIME_MAX of host time from TDF 93 on: the conversion saturates, and
 * subtracting the negative offset from the saturated value must saturate
 * too, not wrap into the past.  The task must still be blocked FOREVER_MS
 * host ms after the call, at TDF 100 and 1000.
 */
#define _GNU_SOURCE
#include <sys/timerfd.h>
#include <linux/futex.h>
#include "timens_sleep.h"

enum { A_CLOCK_NANOSLEEP, A_TIMERFD, A_TIMER, A_FUTEX_BITSET };

#define FAR_S	100000000LL	/* 10^8 s */

static const struct tdf TDF_100 = { "100", 100, 1 };

static void do_far(struct ctx *c)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN };
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	int how = c->arg, fd = 0, ret = -1, err;
	struct timespec ts;
	uint32_t fword = 0;
	siginfo_t si;
	uint64_t n;
	timer_t t;

	switch (how) {
	case A_TIMERFD:
		fd = timerfd_create(c->clk, TFD_CLOEXEC);
		break;
	case A_TIMER:
		block_sig(SIGRTMIN);
		fd = timer_create(c->clk, &sev, &t) ? -1 : 0;
		break;
	}
	if (fd < 0) {
		cfail(c, "setup: %s", strerror(errno));
		return;
	}
	begin(c);
	clock_gettime(c->clk, &ts);
	ts.tv_sec += FAR_S;
	its.it_value = ts;
	switch (how) {
	case A_CLOCK_NANOSLEEP:
		ret = clock_nanosleep(c->clk, TIMER_ABSTIME, &ts, NULL);
		ret = ret ? (errno = ret, -1) : 0;
		break;
	case A_TIMERFD:
		ret = timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
		if (!ret)
			ret = read(fd, &n, sizeof(n));
		break;
	case A_TIMER:
		ret = timer_settime(t, TIMER_ABSTIME, &its, NULL);
		if (!ret)
			ret = wait_sig(SIGRTMIN, &si);
		break;
	case A_FUTEX_BITSET:
		ret = syscall(SYS_futex, &fword, FUTEX_WAIT_BITSET_PRIVATE, 0, &ts, NULL,
			      FUTEX_BITSET_MATCH_ANY);
		break;
	}
	err = errno;
	end(c);
	cfail(c, "deadline now + 1e8 s (%lld s) returned %d%s%s", (long long)ts.tv_sec, ret,
	      ret == -1 ? " " : "", ret == -1 ? strerror(err) : "");
}

#define MONO	CLOCK_MONOTONIC
#define BOOT	CLOCK_BOOTTIME
#define F(nm, op, ck)	TC(nm, do_far, 0, ck, .arg = (op), FOREVER)

static const struct tcase cases[] = {
	F("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME now + 1e8 s", A_CLOCK_NANOSLEEP, MONO),
	F("clock_nanosleep CLOCK_BOOTTIME TIMER_ABSTIME now + 1e8 s", A_CLOCK_NANOSLEEP, BOOT),
	F("timerfd CLOCK_MONOTONIC absolute now + 1e8 s", A_TIMERFD, MONO),
	F("timer_settime CLOCK_MONOTONIC absolute now + 1e8 s", A_TIMER, MONO),
	F("FUTEX_WAIT_BITSET CLOCK_MONOTONIC now + 1e8 s (a timed park)", A_FUTEX_BITSET, MONO),
};

int main(void)
{
	struct timespec up;
	int err;

	ts_init(2 * NCASES(cases));
	/*
	 * container uptime starts near 1 s: offsets of minus the host's
	 * uptime, written before any child entered the namespace
	 */
	clock_gettime(CLOCK_MONOTONIC, &up);
	err = set_timens_offset(CLOCK_MONOTONIC, 1 - up.tv_sec, 0);
	clock_gettime(CLOCK_BOOTTIME, &up);
	err = err ? : set_timens_offset(CLOCK_BOOTTIME, 1 - up.tv_sec, 0);
	if (err)
		ksft_exit_fail_msg("writing /proc/self/timens_offsets: %s\n", strerror(-err));
	RUN_CASES(&TDF_1000, cases);
	RUN_CASES(&TDF_100, cases);
	ksft_finished();
}
