// SPDX-License-Identifier: GPL-2.0
/*
 * The time left of an armed timer is never reported as 0 (POSIX): at TDF
 * 1000 a host time left below 1 us is below 1 ns of namespace time, and a
 * conversion that rounds down reports 0; getitimer() reports microseconds,
 * so there the clamp to 1 us must come after the scaling. A periodic timer
 * with a 1 us interval (1 ms of host time) is read in a tight loop for
 * ~300 ms of host time:
 *  - timer_gettime() of a SIGEV_NONE timer, which is forwarded on every
 *    read: every reading must lie in (0, interval + 1 ns];
 *  - getitimer(ITIMER_REAL), SIGALRM caught: the timer is re-armed when
 *    the signal is delivered, so between its expiry and the delivery
 *    upstream reports 0 (a window of a few us in a tight loop); every other
 *    reading must be 1 us. Before the fix every reading was 0.
 * The largest reading must come near the interval (a factor 2 off shows).
 * timerfd_gettime() goes through the same conversion, but reports 0 from
 * the timer's expiry until its hrtimer callback runs, a window of up to a
 * host tick in a VM, which hides the rounding in that loop.
 *
 * Overdue timers: a timer armed at TDF 1 keeps its host expiry when the
 * factor drops to 1/1000 (it ends then, late in namespace time, never
 * early), so for most of the 10 s of host time it has left, its deadline
 * in namespace time is already behind. It is still armed: timerfd_gettime()
 * and timer_gettime() must report 1 ns, getitimer() 1 us, not 0 (what a
 * time left computed from the passed deadline and clamped at 0 reports) and
 * not the host time left in namespace units (about 10^4 s). A one-shot SIGEV_NONE
 * POSIX timer has nothing to deliver, so it expires on its deadline in
 * namespace time and reports 0 from then on (as upstream, once expired).
 */
#define _GNU_SOURCE
#include <sys/timerfd.h>
#include "timens_sleep.h"

#define IV_NS		1000LL		/* 1 us of namespace time: 1 ms of host time */
#define SPIN_NS		(300 * NS_US)	/* namespace time: 300 ms of host time */

struct counts {
	long reads, zeros, above;
	i64 min, max;
};

static void count(struct counts *k, i64 v, i64 hi)
{
	if (!k->reads++ || v < k->min)
		k->min = v;
	if (v <= 0)
		k->zeros++;
	if (v > hi)
		k->above++;
	if (v > k->max)
		k->max = v;
}

static void child(int rfd, int wfd)
{
	struct sigevent sev = { .sigev_notify = SIGEV_NONE };
	struct itimerspec its = { { 0, IV_NS }, { 0, IV_NS } }, cur;
	struct itimerval itv = { { 0, 1 }, { 0, 1 } }, icur;
	struct counts k[2];
	sigset_t set;
	timer_t t;
	i64 t0;

	(void)rfd;
	memset(k, 0, sizeof(k));
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	if (!timer_create(CLOCK_MONOTONIC, &sev, &t) && !timer_settime(t, 0, &its, NULL)) {
		for (t0 = now_ns(CLOCK_MONOTONIC); now_ns(CLOCK_MONOTONIC) - t0 < SPIN_NS;)
			if (!timer_gettime(t, &cur))
				count(&k[0], ts_ns(&cur.it_value), IV_NS + 1);
		timer_delete(t);
	}
	signal(SIGALRM, sig_noop);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	if (!setitimer(ITIMER_REAL, &itv, NULL)) {
		for (t0 = now_ns(CLOCK_MONOTONIC); now_ns(CLOCK_MONOTONIC) - t0 < SPIN_NS;)
			if (!getitimer(ITIMER_REAL, &icur))
				count(&k[1], tv_ns(&icur.it_value), NS_US);
		memset(&itv, 0, sizeof(itv));
		setitimer(ITIMER_REAL, &itv, NULL);
	}
	if (write(wfd, k, sizeof(k)) != sizeof(k))
		_exit(1);
	_exit(0);
}

#define OVERDUE_ARM_NS	(10 * NS_S)	/* armed at TDF 1 */
#define OVERDUE_WAIT_NS	(20 * NS_S)	/* at TDF 1/1000: 20 ms of host time */

struct overdue {
	i64 timerfd, posix, none, itimer;	/* time left; -errno if the call failed */
	int timerfd_ready;		/* the timerfd read as expired already */
};

/*
 * Arm the three timers, tell the parent, wait for its factor change, let the
 * namespace pass the deadlines, read the time left.
 */
static void overdue_child(int rfd, int wfd)
{
	struct itimerspec its = { .it_value = ns_ts(OVERDUE_ARM_NS) }, cur;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	struct sigevent sev_none = { .sigev_notify = SIGEV_NONE };
	struct itimerval itv = { .it_value = ns_tv(OVERDUE_ARM_NS) }, icur;
	struct timespec wait = ns_ts(OVERDUE_WAIT_NS);
	struct overdue o = { -EINVAL, -EINVAL, -EINVAL, -EINVAL, 0 };
	u_int64_t ticks;
	timer_t t, tn;
	int fd;
	char b;

	block_sig(SIGALRM);
	block_sig(SIGUSR1);
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (fd < 0 || timerfd_settime(fd, 0, &its, NULL) ||
	    timer_create(CLOCK_MONOTONIC, &sev, &t) || timer_settime(t, 0, &its, NULL) ||
	    timer_create(CLOCK_MONOTONIC, &sev_none, &tn) || timer_settime(tn, 0, &its, NULL) ||
	    setitimer(ITIMER_REAL, &itv, NULL))
		_exit(1);
	if (write_full(wfd, "A", 1) || read_full(rfd, &b, 1))
		_exit(1);
	clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, NULL);
	o.timerfd = timerfd_gettime(fd, &cur) ? -errno : ts_ns(&cur.it_value);
	o.posix = timer_gettime(t, &cur) ? -errno : ts_ns(&cur.it_value);
	o.none = timer_gettime(tn, &cur) ? -errno : ts_ns(&cur.it_value);
	o.itimer = getitimer(ITIMER_REAL, &icur) ? -errno : tv_ns(&icur.it_value);
	o.timerfd_ready = read(fd, &ticks, sizeof(ticks)) == sizeof(ticks);
	if (write_full(wfd, &o, sizeof(o)))
		_exit(1);
	_exit(0);
}

static void check_overdue(void)
{
	struct overdue o;
	int rfd, wfd, err, ok;
	pid_t pid;
	char b;

	/* fork_piped() closes the parent's ends in the child: a parent that fails ends its reads */
	pid = dil_fork_child(pretend ? NULL : TDF_1.str, overdue_child, &rfd, &wfd);
	if (read_full(rfd, &b, 1))
		ksft_exit_fail_msg("overdue timers: the child could not arm its timers\n");
	err = pretend ? 0 : dil_write(pid, TDF_MILLI.str);
	if (err)
		ksft_exit_fail_msg("writing %s to the child's timens_dilation: %s\n",
				   TDF_MILLI.str, strerror(-err));
	if (write_full(wfd, "C", 1) || read_full(rfd, &o, sizeof(o)))
		ksft_exit_fail_msg("overdue timers: the child died\n");
	close(rfd);
	close(wfd);
	waitpid(pid, NULL, 0);
	ksft_print_msg("armed for %s at TDF 1, read %s of namespace time after the change to 1/1000: timerfd %lld ns%s, timer %lld ns, SIGEV_NONE timer %lld ns, itimer %lld ns\n",
		       fmt_ns(OVERDUE_ARM_NS), fmt_ns(OVERDUE_WAIT_NS), o.timerfd,
		       o.timerfd_ready ? " (expired already)" : "", o.posix, o.none, o.itimer);
	ok = o.timerfd == 1 && !o.timerfd_ready;
	ksft_test_result(ok, "timerfd_gettime of an overdue armed timer (TDF 1 -> 1/1000) reports 1 ns\n");
	ksft_test_result(o.posix == 1, "timer_gettime of an overdue armed timer (TDF 1 -> 1/1000) reports 1 ns\n");
	ksft_test_result(!o.none, "timer_gettime of a SIGEV_NONE timer past its deadline (TDF 1 -> 1/1000) reports 0\n");
	ksft_test_result(o.itimer == NS_US, "getitimer of an overdue armed ITIMER_REAL (TDF 1 -> 1/1000) reports 1 us\n");
}

int main(void)
{
	static const char * const what[2] = {
		"timer_gettime (SIGEV_NONE, 1 us interval)",
		"getitimer ITIMER_REAL (1 us interval, SIGALRM caught)",
	};
	struct counts k[2];
	int rfd, wfd, i, ok;
	pid_t pid;

	ts_init(6);
	pid = dil_fork_child(pretend ? NULL : TDF_1000.str, child, &rfd, &wfd);
	if (read_full(rfd, k, sizeof(k)))
		ksft_exit_fail_msg("the child died\n");
	close(rfd);
	close(wfd);
	waitpid(pid, NULL, 0);

	for (i = 0; i < 2; i++) {
		i64 hi = i ? NS_US : IV_NS + 1;

		ksft_print_msg("%s at TDF 1000: %ld readings, %ld zero, %ld above %lld ns; min %lld ns, max %lld ns\n",
			       what[i], k[i].reads, k[i].zeros, k[i].above, hi, k[i].min, k[i].max);
		/*
		 * ~300 readings per host ms: the largest is near the interval.
		 * getitimer: zeros only between expiry and delivery, < 5%.
		 */
		ok = k[i].reads >= 1000 && !k[i].above &&
		     (i ? k[i].zeros * 20 < k[i].reads : !k[i].zeros) &&
		     k[i].max > (i ? NS_US - 1 : IV_NS * 3 / 4);
		ksft_test_result(ok, "%s: an armed timer does not report 0 time left at TDF 1000\n", what[i]);
	}
	check_overdue();
	ksft_finished();
}
