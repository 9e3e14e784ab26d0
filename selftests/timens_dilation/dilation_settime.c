// SPDX-License-Identifier: GPL-2.0
/*
 * Setting the clock from a dilated namespace is refused (issue 14, the
 * paths not converted): its CLOCK_REALTIME is a map of the host's, so
 * settimeofday(), clock_settime(CLOCK_REALTIME) and adjtimex() with a mode
 * would step or slew the host's clock with a value in the namespace's time.
 * A root task at TDF 10, 1 s of host time after the factor was written
 * (its CLOCK_REALTIME is then ~0.9 s behind the host's):
 *  - settimeofday() and clock_settime() of the host's current time (handed
 *    over by the parent, so that a kernel that accepts them steps the host
 *    clock by no more than the hand-over) fail with EPERM;
 *  - adjtimex(ADJ_FREQUENCY) with the current frequency fails with EPERM;
 *  - adjtimex(0) and clock_adjtime(ADJ_OFFSET_SS_READ) read: the time they
 *    report is the namespace's CLOCK_REALTIME (within 50 ms), not the
 *    host's.
 */
#define _GNU_SOURCE
#include <sys/timex.h>
#include "dilation.h"

#define NPOINTS	5

struct res {
	int e_settod, e_settime, e_freq, e_read, e_ssread;
	i64 d_read, d_ssread;	/* reported time - namespace REALTIME */
};

static i64 timex_ns(const struct timex *tx)
{
	return (i64)tx->time.tv_sec * NSEC_PER_SEC +
	       (tx->status & STA_NANO ? tx->time.tv_usec : tx->time.tv_usec * NSEC_PER_USEC);
}

static void child(int rfd, int wfd)
{
	struct timex tx = { 0 };
	struct res r = { 0 };
	struct timespec ts;
	struct timeval tv;
	i64 host, now;

	if (read_full(rfd, &host, sizeof(host)))
		_exit(1);
	tv.tv_sec = host / NSEC_PER_SEC;
	tv.tv_usec = host % NSEC_PER_SEC / NSEC_PER_USEC;
	r.e_settod = settimeofday(&tv, NULL) ? errno : 0;
	if (read_full(rfd, &host, sizeof(host)))
		_exit(1);
	ts.tv_sec = host / NSEC_PER_SEC;
	ts.tv_nsec = host % NSEC_PER_SEC;
	r.e_settime = clock_settime(CLOCK_REALTIME, &ts) ? errno : 0;

	r.e_read = adjtimex(&tx) < 0 ? errno : 0;
	sys_cg(CLOCK_REALTIME, &now);
	r.d_read = timex_ns(&tx) - now;

	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET_SS_READ;
	r.e_ssread = clock_adjtime(CLOCK_REALTIME, &tx) < 0 ? errno : 0;
	sys_cg(CLOCK_REALTIME, &now);
	r.d_ssread = timex_ns(&tx) - now;

	/* the current frequency, written back: a no-op where it is allowed */
	memset(&tx, 0, sizeof(tx));
	adjtimex(&tx);
	tx.modes = ADJ_FREQUENCY;
	r.e_freq = adjtimex(&tx) < 0 ? errno : 0;

	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	_exit(0);
}

int main(void)
{
	int rfd, wfd;
	struct res r;
	pid_t pid;
	i64 h;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_dilation();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	unshare_timens_or_skip();
	ksft_set_plan(NPOINTS);
	pid = dil_fork_child("10", child, &rfd, &wfd);
	sleep_ns(NSEC_PER_SEC);
	h = host_ns(CLOCK_REALTIME);
	if (write(wfd, &h, sizeof(h)) != sizeof(h))
		ksft_exit_fail_msg("the child died\n");
	h = host_ns(CLOCK_REALTIME);
	if (write(wfd, &h, sizeof(h)) != sizeof(h) || read_full(rfd, &r, sizeof(r)))
		ksft_exit_fail_msg("the child died\n");
	waitpid(pid, NULL, 0);

	ksft_test_result(r.e_settod == EPERM, "settimeofday() in a dilated namespace fails with EPERM (%s)\n",
			 r.e_settod ? strerror(r.e_settod) : "accepted");
	ksft_test_result(r.e_settime == EPERM,
			 "clock_settime(CLOCK_REALTIME) in a dilated namespace fails with EPERM (%s)\n",
			 r.e_settime ? strerror(r.e_settime) : "accepted");
	ksft_test_result(r.e_freq == EPERM, "adjtimex(ADJ_FREQUENCY) in a dilated namespace fails with EPERM (%s)\n",
			 r.e_freq ? strerror(r.e_freq) : "accepted");
	ksft_print_msg("adjtimex(0): %s, time - namespace CLOCK_REALTIME = %lld us\n",
		       r.e_read ? strerror(r.e_read) : "ok", r.d_read / NSEC_PER_USEC);
	ksft_test_result(!r.e_read && r.d_read > -50 * NSEC_PER_MSEC && r.d_read <= 0,
			 "adjtimex(0) reads the namespace's CLOCK_REALTIME\n");
	ksft_print_msg("clock_adjtime(ADJ_OFFSET_SS_READ): %s, time - namespace CLOCK_REALTIME = %lld us\n",
		       r.e_ssread ? strerror(r.e_ssread) : "ok", r.d_ssread / NSEC_PER_USEC);
	ksft_test_result(!r.e_ssread && r.d_ssread > -50 * NSEC_PER_MSEC && r.d_ssread <= 0,
			 "clock_adjtime(CLOCK_REALTIME, ADJ_OFFSET_SS_READ) reads the namespace's CLOCK_REALTIME\n");
	ksft_finished();
	return 0;
}
