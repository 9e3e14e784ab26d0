// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring timeouts that a factor change re-armed can still be cancelled
 * (issue 14, defect 5; a reviewer's finding on the io_uring patch): a
 * child of a dilated namespace arms a 100 ms timeout (or links one to a
 * read of an empty pipe), the parent, outside, raises the factor from 1 to
 * 10 at host +40 ms, so that the timer's old host expiry (100 ms) comes
 * while the deadline is 60 ms of the namespace away, and the child, at
 * 60 ms of its time, cancels it: TIMEOUT_REMOVE, the read completing, or
 * exiting. On an IORING_SETUP_DEFER_TASKRUN ring the re-arm waits in task
 * work that only runs when the child waits for completions, so there the
 * cancellation meets a timeout whose re-arm is pending, and the task work
 * completes it as the cancellation says; so do a timeout waiting for one
 * completion that a NOP brings (completed with 0, not -ETIME) and an
 * update to 10 ms (re-armed for it, -ETIME 10 ms later).
 *
 * Each cancellation must end the timeout at once: the child's wait ends
 * after 60 ms of its time (at most LATE_NS more, never at the deadline,
 * 100 ms), the completions are the cancellation's, and in host time the
 * child's case lasts 40 + 20 x 10 = 240 ms (-50/+150 ms): one that waited
 * for the deadline lasts 640 ms, twice the factor 440 ms, half 140 ms.
 *
 * The host time is predicted from stamps that bracket the child's own:
 * the parent stamps h0, pings the child, which stamps its start t0 and
 * answers, and the parent stamps again (repeated until the round trip is
 * at most PING_MAX_NS); the change's time is the parent's stamp after its
 * write. Every millisecond of the child's time at TDF 1 is 10 ms less of
 * host time after the change, so an origin guessed from a stamp taken after
 * the child's start made a case on time look early (a first case whose
 * child started 6 ms before the parent's stamp: 173 ms of host time where
 * 231 was predicted). The child cancels at t0 + 60 ms of its time, an
 * absolute sleep, so that the ping and the arming count in its 60 ms.
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "dilation.h"
#include "uring_raw.h"

#define D_NS		(100 * NSEC_PER_MSEC)	/* the timeout */
#define CANCEL_NS	(60 * NSEC_PER_MSEC)	/* the namespace's time it is cancelled at */
#define CHANGE_NS	(40 * NSEC_PER_MSEC)	/* host time of the change, 1 -> 10 */
#define LATE_NS		(15 * NSEC_PER_MSEC)	/* a TCG guest's stall, in the namespace */
#define HOST_EARLY_NS	(50 * NSEC_PER_MSEC)
#define HOST_LATE_NS	(150 * NSEC_PER_MSEC)
#define PING_MAX_NS	(2 * NSEC_PER_MSEC)	/* the widest bracket of the child's start */
#define PING_TRIES	50

enum how { REMOVE, LINK_READ, EXIT, DEFER_REMOVE, DEFER_EXIT, DEFER_COUNT, DEFER_UPDATE };

static const char * const how_name[] = {
	[REMOVE]	= "IORING_OP_TIMEOUT_REMOVE of a re-armed timeout",
	[LINK_READ]	= "a re-armed IORING_OP_LINK_TIMEOUT whose read completes",
	[EXIT]		= "the task exits with a re-armed timeout",
	[DEFER_REMOVE]	= "IORING_OP_TIMEOUT_REMOVE of a timeout whose re-arm is pending (DEFER_TASKRUN)",
	[DEFER_EXIT]	= "the task exits while a timeout's re-arm is pending (DEFER_TASKRUN)",
	[DEFER_COUNT]	= "a timeout for one completion reaches its count while its re-arm is pending (DEFER_TASKRUN)",
	[DEFER_UPDATE]	= "IORING_TIMEOUT_UPDATE to 10 ms while a timeout's re-arm is pending (DEFER_TASKRUN)",
};

/* DEFER_UPDATE: the new timeout, from the update on */
#define UPDATE_NS	(10 * NSEC_PER_MSEC)

struct result {
	int err;	/* the child's step that failed, 0 if none */
	int res[3];	/* the completions' results by user_data: 1 the cancellation or read, 2 the timeout */
	i64 elapsed;	/* namespace ns from the submission to the last completion */
};

static int is_defer(enum how how)
{
	return how >= DEFER_REMOVE;
}

/*
 * In the namespace: answer the parent's pings ('p') with 'S', stamping the
 * start at each; at 'a', arm, tell the parent 'G', sleep until CANCEL_NS
 * after the start, cancel, collect.
 */
static struct result child_case(enum how how, int wfd, int rfd)
{
	static const struct __kernel_timespec d = { 0, D_NS }, upd = { 0, UPDATE_NS };
	struct timespec t0, t1;
	struct result r = { .res = { 1, 1, 1 } };
	struct ring ur = { .fd = -1 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe cqes[2];
	int pfd[2], n = 1;
	char buf[4], c = 0;

	if (ring_setup_flags(&ur, is_defer(how) ?
			     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN : 0) ||
	    pipe(pfd)) {
		r.err = 1;
		return r;
	}
	while (read(rfd, &c, 1) == 1 && c == 'p') {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (write(wfd, "S", 1) != 1)
			break;
	}
	if (c != 'a') {
		r.err = 5;
		return r;
	}
	if (how == LINK_READ) {
		sqe = get_sqe(&ur);
		sqe->opcode = IORING_OP_READ;
		sqe->fd = pfd[0];
		sqe->addr = (uintptr_t)buf;
		sqe->len = 1;
		sqe->flags = IOSQE_IO_LINK;
		sqe->user_data = 1;
		n++;
	}
	sqe = get_sqe(&ur);
	sqe->opcode = how == LINK_READ ? IORING_OP_LINK_TIMEOUT : IORING_OP_TIMEOUT;
	sqe->addr = (uintptr_t)&d;
	sqe->len = 1;
	sqe->off = how == DEFER_COUNT;	/* or until one completion */
	sqe->user_data = 2;
	if (enter(&ur, n, 0, 0, NULL, 0) != n || write(wfd, "G", 1) != 1) {
		r.err = 2;
		return r;
	}
	/* past the timer's old host expiry: it has been re-armed, or is to be */
	sleep_until(ts_ns(&t0) + CANCEL_NS);
	switch (how) {
	case EXIT:
	case DEFER_EXIT:
		_exit(0);
	case LINK_READ:
		if (write(pfd[1], "x", 1) != 1)
			r.err = 3;
		break;
	case DEFER_COUNT:
		sqe = get_sqe(&ur);
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = 1;
		if (enter(&ur, 1, 0, 0, NULL, 0) != 1)
			r.err = 3;
		break;
	case DEFER_UPDATE:
		sqe = get_sqe(&ur);
		sqe->opcode = IORING_OP_TIMEOUT_REMOVE;
		sqe->addr = 2;
		sqe->addr2 = (uintptr_t)&upd;
		sqe->timeout_flags = IORING_TIMEOUT_UPDATE;
		sqe->user_data = 1;
		if (enter(&ur, 1, 0, 0, NULL, 0) != 1)
			r.err = 3;
		break;
	default:
		/* submitted, not waited for: on a DEFER_TASKRUN ring no task work runs */
		sqe = get_sqe(&ur);
		sqe->opcode = IORING_OP_TIMEOUT_REMOVE;
		sqe->addr = 2;
		sqe->user_data = 1;
		if (enter(&ur, 1, 0, 0, NULL, 0) != 1)
			r.err = 3;
		break;
	}
	if (!r.err && wait_cqes(&ur, cqes, 2) != 2)
		r.err = 4;
	for (n = 0; !r.err && n < 2; n++)
		r.res[cqes[n].user_data & 3] = cqes[n].res;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.elapsed = ts_ns(&t1) - ts_ns(&t0);
	return r;
}

/*
 * Ping the child until a round trip of at most PING_MAX_NS brackets its
 * start: its t0 is in [*h0, *h0 + return value] of host time.
 */
static i64 bracket_start(enum how how, int cfd, int gfd, i64 *h0)
{
	i64 rt = 0;
	char g;
	int i;

	for (i = 0; i < PING_TRIES; i++) {
		*h0 = host_ns(CLOCK_MONOTONIC);
		if (write(cfd, "p", 1) != 1 || read(gfd, &g, 1) != 1 || g != 'S')
			ksft_exit_fail_msg("%s: the child did not answer\n", how_name[how]);
		rt = host_ns(CLOCK_MONOTONIC) - *h0;
		if (rt <= PING_MAX_NS)
			return rt;
	}
	ksft_exit_fail_msg("%s: no round trip to the child of at most %lld us in %d (last %lld us)\n",
			   how_name[how], PING_MAX_NS / 1000, PING_TRIES, rt / 1000);
}

static void run_case(enum how how)
{
	int gp[2], cp[2], rp[2], st, ok = 1, exits = how == EXIT || how == DEFER_EXIT;
	struct result r = { 0 };
	i64 end = CANCEL_NS + (how == DEFER_UPDATE ? UPDATE_NS : 0);
	i64 h0, rt, hb, hc, h1, due_lo, due_hi;
	pid_t pid;
	char g;

	/* every case starts at TDF 1; the namespace is the one this task's children enter */
	if (dil_write(DIL_SELF, "1") || pipe(gp) || pipe(cp) || pipe(rp))
		ksft_exit_fail_msg("setting up the case: %s\n", strerror(errno));
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		r = child_case(how, gp[1], cp[0]);
		_exit(write(rp[1], &r, sizeof(r)) == sizeof(r) ? 0 : 9);
	}
	close(gp[1]);
	close(cp[0]);
	close(rp[1]);
	rt = bracket_start(how, cp[1], gp[0], &h0);
	if (write(cp[1], "a", 1) != 1 || read(gp[0], &g, 1) != 1)
		ksft_exit_fail_msg("%s: the child did not arm the timeout\n", how_name[how]);
	sleep_host_until(h0 + CHANGE_NS);
	hb = host_ns(CLOCK_MONOTONIC) - h0;
	if (dil_write(DIL_SELF, "10"))
		ksft_exit_fail_msg("writing 10: %s\n", strerror(errno));
	hc = host_ns(CLOCK_MONOTONIC) - h0;
	/*
	 * The child's time ran at TDF 1 from its start, in [0, rt], to the
	 * change, in [hb, hc], at 10 after: the end at its time @end comes at
	 * 10 end - 9 change + 10 start of host time.
	 */
	due_lo = hc < end ? 10 * end - 9 * hc : end;
	due_hi = hb < end ? 10 * end - 9 * hb + 10 * rt : end + rt;
	if (!exits && read(rp[0], &r, sizeof(r)) != sizeof(r))
		ksft_exit_fail_msg("%s: the child died\n", how_name[how]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		ksft_exit_fail_msg("%s: the child failed (status %#x)\n", how_name[how], st);
	h1 = host_ns(CLOCK_MONOTONIC);
	close(gp[0]);
	close(cp[1]);
	close(rp[0]);

	if (exits) {
		ksft_print_msg("%s: the child exited after %lld ms of host time (due %lld-%lld)\n",
			       how_name[how], (h1 - h0) / NSEC_PER_MSEC, due_lo / NSEC_PER_MSEC,
			       due_hi / NSEC_PER_MSEC);
	} else {
		ksft_print_msg("%s: completions %d (cancellation or read) and %d (timeout) after %lld.%03lld ms of namespace time, %lld ms of host time (due %lld-%lld)\n",
			       how_name[how], r.res[1], r.res[2], r.elapsed / NSEC_PER_MSEC,
			       r.elapsed / 1000 % 1000, (h1 - h0) / NSEC_PER_MSEC,
			       due_lo / NSEC_PER_MSEC, due_hi / NSEC_PER_MSEC);
		if (r.err) {
			ksft_print_msg("  step %d of the child failed\n", r.err);
			ok = 0;
		}
		/* removed, also while its re-arm is pending: 0, and the timeout -ECANCELED */
		if ((how == REMOVE || how == DEFER_REMOVE) &&
		    (r.res[1] != 0 || r.res[2] != -ECANCELED))
			ok = 0;
		/* its count reached: 0, as when the timer is armed */
		if (how == DEFER_COUNT && (r.res[1] != 0 || r.res[2] != 0))
			ok = 0;
		/* updated: 0, and it expires at the new time */
		if (how == DEFER_UPDATE && (r.res[1] != 0 || r.res[2] != -ETIME))
			ok = 0;
		if (how == LINK_READ && (r.res[1] != 1 || r.res[2] != -ECANCELED))
			ok = 0;
		if (!ok)
			ksft_print_msg("  not the completions of a cancellation\n");
		if (r.elapsed < end || r.elapsed > end + LATE_NS) {
			ksft_print_msg("  namespace time outside [%lld, %lld] ms\n",
				       end / NSEC_PER_MSEC, (end + LATE_NS) / NSEC_PER_MSEC);
			ok = 0;
		}
	}
	if (h1 - h0 < due_lo - HOST_EARLY_NS || h1 - h0 > due_hi + HOST_LATE_NS) {
		ksft_print_msg("  host time %lld ms outside [%lld, %lld] ms\n",
			       (h1 - h0) / NSEC_PER_MSEC, (due_lo - HOST_EARLY_NS) / NSEC_PER_MSEC,
			       (due_hi + HOST_LATE_NS) / NSEC_PER_MSEC);
		ok = 0;
	}
	ksft_test_result(ok, "%s: completes at once, as the cancellation, count or update says\n", how_name[how]);
}

int main(void)
{
	struct ring probe = { .fd = -1 };
	int i, ret;

	require_dilation();
	ksft_print_header();
	ret = ring_setup(&probe);
	if (ret == -ENOSYS || ret == -EPERM)
		ksft_exit_skip("io_uring unavailable (io_uring_setup: %s)\n", strerror(-ret));
	if (ret)
		ksft_exit_fail_msg("io_uring_setup: %s\n", strerror(-ret));
	close(probe.fd);
	unshare_timens_or_skip();
	ksft_set_plan(DEFER_UPDATE + 1);
	for (i = REMOVE; i <= DEFER_UPDATE; i++)
		run_case(i);
	ksft_finished();
	return 0;
}
