// SPDX-License-Identifier: GPL-2.0
/*
 * Each sleep of a socket wait (schedule_timeout_timens()) takes two things
 * from the namespace's maps: what is left of the timeout, in host jiffies,
 * rescaled if the maps changed since the task noted it, and the end those
 * jiffies give, as a time of the namespace's clock. Read from two versions
 * of the maps, they put an end at the old factor on the new clock: after
 * TDF 1 -> 10 the sleep ends at its old host time, nine tenths of what was
 * left early in the namespace's time; after 10 -> 1/10 at its old host
 * expiry (dilation_change 94 once waited 8.2 s of the namespace's time for
 * its 100 ms).
 *
 * No pause can hold a task between those two readings (no user memory is
 * touched there, unlike the gap dilation_sock_gap holds), so this test
 * makes them meet a change often: a child in the dilated namespace
 * receives again and again with SO_RCVTIMEO 50 ms on an AF_UNIX stream
 * that a second thread sends on and a third drains from the peer without
 * a pause (busy_unix.h: the receiver is woken as often as the CPUs
 * allow), while the parent switches the factor between 1 and 10 every 1
 * to 8 ms of host time for RUN_NS.
 *
 * No receive may end early by more than a host tick at TDF 1: a timeout of
 * n jiffies ends after n - 1 and a fraction, on any kernel, and a change
 * only moves the end later (what is left is rescaled with a jiffy more
 * than it takes, and counted again from the jiffy a sleep falls in). A
 * change that met the window, up, ends the receive early by nine tenths
 * of what was left: before the fix, 3 of 3 runs had receives end after 12
 * to 42 ms. The late side is not checked: each change rounds what is left
 * up to a host tick, and a receive here sees dozens of changes;
 * dilation_change bounds it for one.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/wait.h>
#include "dilation.h"
#include "busy_unix.h"

#define TIMEOUT_NS	(50 * NSEC_PER_MSEC)	/* SO_RCVTIMEO, of the namespace */
#define RUN_NS		(20 * NSEC_PER_SEC)	/* of host time, switching */

struct result {
	int err;		/* errno of a receive that failed otherwise, or 0 */
	long long got;		/* what a receive returned instead, or -1 */
	long long n;		/* receives that timed out */
	long long early;	/* of them, ended early */
	i64 min, max;		/* namespace ns of the shortest and longest receive */
	i64 first[8];		/* the first early ones */
};

/* in the namespace: receive until the parent closes @stop_fd */
static void __attribute__((noreturn)) child(int stop_fd, int res_fd)
{
	struct result r = { .got = -1, .min = INT64_MAX };
	i64 allowed = TIMEOUT_NS - tick_ns();
	struct busy_unix busy;
	char buf[8];
	int sk[2];

	if (busy_unix_open(sk, TIMEOUT_NS) || fcntl(stop_fd, F_SETFL, O_NONBLOCK))
		_exit(2);
	if (busy_unix_start(&busy, sk, 0))
		_exit(3);
	while (read(stop_fd, buf, 1) < 0 && errno == EAGAIN) {
		struct timespec t0, t1;
		ssize_t got;
		i64 d;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		got = recv(sk[0], buf, sizeof(buf), 0);
		if (got >= 0) {
			r.got = got;
			break;
		}
		if (errno != EAGAIN) {
			r.err = errno;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		d = ts_ns(&t1) - ts_ns(&t0);
		r.n++;
		if (d < allowed && r.early < 8)
			r.first[r.early] = d;
		r.early += d < allowed;
		r.min = d < r.min ? d : r.min;
		r.max = d > r.max ? d : r.max;
	}
	busy_unix_stop(&busy);
	_exit(write(res_fd, &r, sizeof(r)) == sizeof(r) ? 0 : 4);
}

int main(void)
{
	int stop_p[2], res_p[2], st, werr = 0, ok = 1, i;
	long long changes = 0;
	struct result r;
	i64 h0;
	pid_t pid;

	require_dilation();
	ksft_print_header();
	unshare_timens_or_skip();
	ksft_set_plan(1);
	if (dil_write(DIL_SELF, "1") || pipe(stop_p) || pipe(res_p))
		ksft_exit_fail_msg("setting up: %s\n", strerror(errno));
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		close(stop_p[1]);
		close(res_p[0]);
		child(stop_p[0], res_p[1]);
	}
	close(stop_p[0]);
	close(res_p[1]);

	/* a fixed seed: the same intervals in every run */
	srandom(1);
	h0 = host_ns(CLOCK_MONOTONIC);
	while (host_ns(CLOCK_MONOTONIC) - h0 < RUN_NS && !werr) {
		sleep_ns(NSEC_PER_MSEC + random() % (7 * NSEC_PER_MSEC));
		werr = dil_write(DIL_SELF, changes % 2 ? "1" : "10");
		changes++;
	}
	close(stop_p[1]);
	if (read(res_p[0], &r, sizeof(r)) != sizeof(r) ||
	    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		ksft_exit_fail_msg("the child failed (status %#x)\n", st);

	ksft_print_msg("%lld factor changes in %lld s; %lld receives timed out, %lld.%03lld to %lld.%03lld ms of namespace time (timeout %lld ms, at least %lld.%03lld)\n",
		       changes, RUN_NS / NSEC_PER_SEC, r.n,
		       r.min / NSEC_PER_MSEC, r.min / 1000 % 1000,
		       r.max / NSEC_PER_MSEC, r.max / 1000 % 1000, TIMEOUT_NS / NSEC_PER_MSEC,
		       (TIMEOUT_NS - tick_ns()) / NSEC_PER_MSEC,
		       (TIMEOUT_NS - tick_ns()) / 1000 % 1000);
	if (werr) {
		ksft_print_msg("  writing the factor: %s\n", strerror(-werr));
		ok = 0;
	}
	if (r.err) {
		ksft_print_msg("  a receive failed: %s\n", strerror(r.err));
		ok = 0;
	}
	if (r.got >= 0) {
		ksft_print_msg("  a receive returned %lld instead of timing out\n", r.got);
		ok = 0;
	}
	if (r.early) {
		ksft_print_msg("  %lld receives ended early\n", r.early);
		for (i = 0; i < r.early && i < 8; i++)
			ksft_print_msg("    after %lld us\n", r.first[i] / 1000);
		ok = 0;
	}
	/* a receive lasts 50 ms of host time at TDF 1, 500 at 10 */
	if (r.n < 40) {
		ksft_print_msg("  too few receives to tell\n");
		ok = 0;
	}
	ksft_test_result(ok, "socket timeouts end no earlier than due while the factor switches 1 <-> 10 every 1-8 ms\n");
	ksft_finished();
	return 0;
}
