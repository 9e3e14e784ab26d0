// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring timeouts in a dilated time namespace (raw system calls, no
 * liburing): IORING_OP_TIMEOUT relative and absolute (CLOCK_MONOTONIC,
 * IORING_TIMEOUT_REALTIME, IORING_TIMEOUT_BOOTTIME), IORING_OP_LINK_TIMEOUT
 * cancelling a read of an empty pipe, IORING_OP_TIMEOUT_REMOVE updating a
 * timeout of 1000 s to d (IORING_TIMEOUT_UPDATE, relative and absolute, and
 * absolute on a CLOCK_REALTIME timeout),
 * and io_uring_enter() waiting for a completion with a timeout
 * (IORING_ENTER_EXT_ARG).
 *
 * Each timeout must expire after d on the namespace's clock (at or after an
 * absolute deadline), d * TDF of host time.  Every point is skipped when
 * io_uring is unavailable (ENOSYS, or disabled: EPERM).  See timens_sleep.h.
 */
#define _GNU_SOURCE
#include "timens_sleep.h"
#include "uring_raw.h"

static int ring_or_skip(struct ctx *c, struct ring *r)
{
	int ret = ring_setup(r);

	if (ret == -ENOSYS || ret == -EPERM)
		cskip(c, "io_uring unavailable (io_uring_setup: %s)", strerror(-ret));
	else if (ret)
		cfail(c, "io_uring_setup: %s", strerror(-ret));
	return ret;
}

/* the result of the completion of @user_data among @n, or 1 if there is none */
static int cqe_res(const struct io_uring_cqe *cqe, int n, __u64 user_data)
{
	int i;

	for (i = 0; i < n; i++)
		if (cqe[i].user_data == user_data)
			return cqe[i].res;
	return 1;
}

enum { U_TIMEOUT, U_LINK_TIMEOUT, U_ENTER_WAIT, U_ENTER_ABS, U_ENTER_MINWAIT, U_UPDATE };

/* arg: what, and for U_TIMEOUT and U_UPDATE the timeout_flags << 8 */
static void do_uring(struct ctx *c)
{
	int how = c->arg & 0xff, ret = 0, n = 0, pfd[2] = { -1, -1 };
	unsigned int tflags = (unsigned int)(c->arg >> 8);
	struct __kernel_timespec kts;
	struct io_uring_cqe cqe[2];
	struct io_uring_sqe *sqe;
	struct ring r = { .fd = -1 };
	i64 deadline = 0;
	char buf[8];

	if (ring_or_skip(c, &r))
		return;
	if (how == U_ENTER_WAIT && !(r.features & IORING_FEAT_EXT_ARG)) {
		cskip(c, "no IORING_FEAT_EXT_ARG");
		return;
	}
	if ((how == U_ENTER_ABS || how == U_ENTER_MINWAIT) && !(r.features & IORING_FEAT_MIN_TIMEOUT)) {
		cskip(c, "no IORING_FEAT_MIN_TIMEOUT (IORING_ENTER_ABS_TIMER, min_wait_usec)");
		return;
	}
	if (how == U_LINK_TIMEOUT && pipe(pfd)) {
		cfail(c, "pipe: %s", strerror(errno));
		return;
	}

	begin(c);
	if ((tflags & IORING_TIMEOUT_ABS) || how == U_ENTER_ABS) {
		deadline = now_ns(c->clk) + c->d;
		kts.tv_sec = deadline / NS_S;
		kts.tv_nsec = deadline % NS_S;
		c->r->min_e = deadline - c->r->t0;
	} else {
		kts.tv_sec = c->d / NS_S;
		kts.tv_nsec = c->d % NS_S;
	}
	switch (how) {
	case U_TIMEOUT:
		sqe = get_sqe(&r);
		sqe->opcode = IORING_OP_TIMEOUT;
		sqe->addr = (uintptr_t)&kts;
		sqe->len = 1;
		sqe->off = 0;		/* no completion count: pure timeout */
		sqe->timeout_flags = tflags;
		sqe->user_data = 1;
		ret = enter(&r, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
		break;
	case U_UPDATE: {
		/*
		 * a timeout of 1000 s on the clock of @tflags, updated to d,
		 * absolute if @tflags say so (an update has no clock flags:
		 * it is on the clock of the timeout it updates)
		 */
		static const struct __kernel_timespec far = { 1000, 0 };

		sqe = get_sqe(&r);
		sqe->opcode = IORING_OP_TIMEOUT;
		sqe->addr = (uintptr_t)&far;
		sqe->len = 1;
		sqe->timeout_flags = tflags & IORING_TIMEOUT_CLOCK_MASK;
		sqe->user_data = 1;
		sqe = get_sqe(&r);
		sqe->opcode = IORING_OP_TIMEOUT_REMOVE;
		sqe->addr = 1;
		sqe->addr2 = (uintptr_t)&kts;
		sqe->timeout_flags = IORING_TIMEOUT_UPDATE | (tflags & IORING_TIMEOUT_ABS);
		sqe->user_data = 2;
		ret = enter(&r, 2, 2, IORING_ENTER_GETEVENTS, NULL, 0);
		break;
	}
	case U_LINK_TIMEOUT:
		sqe = get_sqe(&r);
		sqe->opcode = IORING_OP_READ;
		sqe->fd = pfd[0];
		sqe->addr = (uintptr_t)buf;
		sqe->len = sizeof(buf);
		sqe->flags = IOSQE_IO_LINK;
		sqe->user_data = 1;
		sqe = get_sqe(&r);
		sqe->opcode = IORING_OP_LINK_TIMEOUT;
		sqe->addr = (uintptr_t)&kts;
		sqe->len = 1;
		sqe->user_data = 2;
		ret = enter(&r, 2, 2, IORING_ENTER_GETEVENTS, NULL, 0);
		break;
	case U_ENTER_WAIT: {
		struct io_uring_getevents_arg ga = {
			.sigmask = 0, .sigmask_sz = _NSIG / 8, .ts = (uintptr_t)&kts,
		};

		ret = enter(&r, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof(ga));
		break;
	}
	case U_ENTER_ABS: {
		/* the deadline is on the ring's clock, CLOCK_MONOTONIC */
		struct io_uring_getevents_arg ga = {
			.sigmask = 0, .sigmask_sz = _NSIG / 8, .ts = (uintptr_t)&kts,
		};

		ret = enter(&r, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG |
			    IORING_ENTER_ABS_TIMER, &ga, sizeof(ga));
		break;
	}
	case U_ENTER_MINWAIT: {
		/*
		 * One NOP completes at once; waiting for two, the wait ends
		 * when min_wait_usec (d) has passed with one completion
		 * there, long before the 1000 s timeout.
		 */
		struct __kernel_timespec far = { 1000, 0 };
		struct io_uring_getevents_arg ga = {
			.sigmask = 0, .sigmask_sz = _NSIG / 8, .ts = (uintptr_t)&far,
			.min_wait_usec = c->d / NS_US,
		};

		sqe = get_sqe(&r);
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = 1;
		ret = enter(&r, 1, 2, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof(ga));
		break;
	}
	}
	/* a completion of the first wait may still trail its partner */
	if (ret >= 0 && (how == U_LINK_TIMEOUT || how == U_UPDATE))
		n = wait_cqes(&r, cqe, 2);
	end(c);

	switch (how) {
	case U_TIMEOUT:
		if (ret < 0)
			cfail(c, "io_uring_enter: %s", strerror(-ret));
		else if (!pop_cqe(&r, &cqe[0]))
			cfail(c, "no completion");
		else if (cqe[0].res != -ETIME)
			cfail(c, "timeout completed with %d, expected -ETIME", cqe[0].res);
		break;
	case U_LINK_TIMEOUT: {
		int read_res = cqe_res(cqe, n, 1), to_res = cqe_res(cqe, n, 2);

		cdiag(c, "read %d, link timeout %d", read_res, to_res);
		if (ret < 0)
			cfail(c, "io_uring_enter: %s", strerror(-ret));
		else if (n != 2)
			cfail(c, "%d completions, expected 2", n);
		else if (read_res != -ECANCELED && read_res != -EINTR)
			cfail(c, "read completed with %d, expected -ECANCELED", read_res);
		else if (to_res != -ETIME && to_res != -EALREADY)
			cfail(c, "link timeout completed with %d, expected -ETIME", to_res);
		break;
	}
	case U_UPDATE: {
		int to_res = cqe_res(cqe, n, 1), upd_res = cqe_res(cqe, n, 2);

		if (ret < 0)
			cfail(c, "io_uring_enter: %s", strerror(-ret));
		else if (n != 2)
			cfail(c, "%d completions, expected 2", n);
		else if (upd_res)
			cfail(c, "the update completed with %d, expected 0", upd_res);
		else if (to_res != -ETIME)
			cfail(c, "the timeout completed with %d, expected -ETIME", to_res);
		break;
	}
	case U_ENTER_WAIT:
	case U_ENTER_ABS:
		if (ret != -ETIME)
			cfail(c, "io_uring_enter returned %d (%s), expected -ETIME", ret,
			      ret < 0 ? strerror(-ret) : "completions?");
		break;
	case U_ENTER_MINWAIT:
		if (ret < 0)
			cfail(c, "io_uring_enter: %s", strerror(-ret));
		else if (!pop_cqe(&r, &cqe[0]))
			cfail(c, "no completion of the NOP");
		break;
	}
	if (deadline && c->r->t1 < deadline)
		cfail(c, "expired %s before the deadline", fmt_ns(deadline - c->r->t1));
	close(r.fd);
}

#define MONO	CLOCK_MONOTONIC
#define REAL	CLOCK_REALTIME
#define BOOT	CLOCK_BOOTTIME
#define D10	(30 * NS_MS)
#define DMILLI	(100 * NS_S)	/* 100 ms of host time: enough for a two-sided bound */
#define TFL(f)	((i64)(f) << 8)

static const struct tcase c10[] = {
	TC("IORING_OP_TIMEOUT relative 30ms", do_uring, D10, MONO, .arg = U_TIMEOUT),
	TC("IORING_OP_TIMEOUT IORING_TIMEOUT_ABS CLOCK_MONOTONIC now+30ms", do_uring, D10, MONO,
	   .arg = U_TIMEOUT | TFL(IORING_TIMEOUT_ABS)),
	TC("IORING_OP_TIMEOUT IORING_TIMEOUT_ABS|IORING_TIMEOUT_REALTIME now+30ms", do_uring, D10, REAL,
	   .arg = U_TIMEOUT | TFL(IORING_TIMEOUT_ABS | IORING_TIMEOUT_REALTIME)),
	TC("IORING_OP_TIMEOUT IORING_TIMEOUT_ABS|IORING_TIMEOUT_BOOTTIME now+30ms", do_uring, D10, BOOT,
	   .arg = U_TIMEOUT | TFL(IORING_TIMEOUT_ABS | IORING_TIMEOUT_BOOTTIME)),
	TC("IORING_OP_LINK_TIMEOUT 30ms on a read of an empty pipe", do_uring, D10, MONO, .arg = U_LINK_TIMEOUT),
	TC("IORING_TIMEOUT_UPDATE of a 1000s timeout to 30ms", do_uring, D10, MONO, .arg = U_UPDATE),
	TC("IORING_TIMEOUT_UPDATE of a 1000s timeout to IORING_TIMEOUT_ABS now+30ms", do_uring, D10,
	   MONO, .arg = U_UPDATE | TFL(IORING_TIMEOUT_ABS)),
	TC("IORING_TIMEOUT_UPDATE of a 1000s IORING_TIMEOUT_REALTIME timeout to IORING_TIMEOUT_ABS now+30ms",
	   do_uring, D10, REAL, .arg = U_UPDATE | TFL(IORING_TIMEOUT_ABS | IORING_TIMEOUT_REALTIME)),
	TC("io_uring_enter IORING_ENTER_EXT_ARG wait 30ms", do_uring, D10, MONO, .arg = U_ENTER_WAIT),
	TC("io_uring_enter IORING_ENTER_ABS_TIMER CLOCK_MONOTONIC now+30ms", do_uring, D10, MONO,
	   .arg = U_ENTER_ABS),
	TC("io_uring_enter min_wait_usec 30ms, one of two completions", do_uring, D10, MONO,
	   .arg = U_ENTER_MINWAIT),
};

static const struct tcase c1[] = {
	TC("IORING_OP_TIMEOUT relative 100ms", do_uring, 100 * NS_MS, MONO, .arg = U_TIMEOUT),
};

static const struct tcase cmilli[] = {
	TC("IORING_OP_TIMEOUT relative 100s", do_uring, DMILLI, MONO, .arg = U_TIMEOUT),
	TC("IORING_OP_TIMEOUT IORING_TIMEOUT_ABS|IORING_TIMEOUT_REALTIME now+100s", do_uring, DMILLI, REAL,
	   .arg = U_TIMEOUT | TFL(IORING_TIMEOUT_ABS | IORING_TIMEOUT_REALTIME)),
	TC("io_uring_enter IORING_ENTER_EXT_ARG wait 100s", do_uring, DMILLI, MONO, .arg = U_ENTER_WAIT),
};

int main(void)
{
	ts_init(NCASES(c10) + NCASES(c1) + NCASES(cmilli));
	RUN_CASES(&TDF_10, c10);
	RUN_CASES(&TDF_1, c1);
	RUN_CASES(&TDF_MILLI, cmilli);
	ksft_finished();
}
