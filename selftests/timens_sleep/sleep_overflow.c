// SPDX-License-Identifier: GPL-2.0
/*
 * Overflowing timeouts in a dilated time namespace.  A relative timeout of
 * {LONG_MAX, 999999999}, or one so long that d * TDF does not fit in
 * ktime_t (d near KTIME_MAX, or 10^7 s at TDF 1000), or an absolute deadline
 * near KTIME_MAX, must mean "forever" (or at least: a very long time), never
 * "already expired": FOREVER_MS (1000) ms of host time after the call the
 * task must still be blocked (state S); then it is killed.  Also 10^4 s at
 * TDF 1000 (fits, but not in a 64-bit product with a 32.32 or 24.40 fixed-point
 * factor).  Factors 1000, 10 and 0.001 (where d / 1000 fits: a long but
 * finite sleep).
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <mqueue.h>
#include "timens_sleep.h"

enum {
	O_NANOSLEEP, O_CLOCK_NANOSLEEP, O_CLOCK_NANOSLEEP_ABS, O_TIMERFD, O_TIMERFD_ABS,
	O_TIMER, O_SETITIMER, O_SELECT, O_PSELECT6, O_POLL, O_PPOLL, O_EPOLL_WAIT, O_EPOLL_PWAIT2,
	O_FUTEX_WAIT, O_FUTEX_WAIT_BITSET_ABS, O_SIGTIMEDWAIT, O_SEMTIMEDOP, O_IO_GETEVENTS,
	O_MQ_ABS, O_SO_RCVTIMEO,
};

/* the durations / deadlines, by index in arg >> 8 */
enum { V_MAX, V_NEAR_KTIME_MAX, V_1E7S, V_1E4S };

static const struct timespec vals[] = {
	[V_MAX] = { LONG_MAX, 999999999 },
	[V_NEAR_KTIME_MAX] = { 9223372035, 0 },		/* KTIME_MAX - 0.85 s */
	[V_1E7S] = { 10000000, 0 },
	[V_1E4S] = { 10000, 0 },
};

#define OV(op, v)	((op) | ((v) << 8))

static void do_forever(struct ctx *c)
{
	int how = c->arg & 0xff, fd = -1, pfd[2], ret = -1, err = 0, semid = -1;
	struct timespec ts = vals[c->arg >> 8];
	struct timeval tv = { ts.tv_sec, ts.tv_nsec / 1000 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = { { 0, 0 }, ts };
	struct itimerval itv = { { 0, 0 }, tv };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN };
	struct sembuf sop = { 0, -1, 0 };
	struct io_event iev;
	aio_context_t aio = 0;
	uint32_t fword = 0;
	struct pollfd p;
	uint64_t n;
	siginfo_t si;
	sigset_t set;
	fd_set rfds;
	timer_t t;
	char buf[16];
	mqd_t q = (mqd_t)-1;

	if (pipe2(pfd, O_CLOEXEC)) {
		cfail(c, "pipe: %s", strerror(errno));
		return;
	}
	p.fd = pfd[0];
	p.events = POLLIN;
	FD_ZERO(&rfds);
	FD_SET(pfd[0], &rfds);
	switch (how) {
	case O_TIMERFD:
	case O_TIMERFD_ABS:
		fd = timerfd_create(c->clk, TFD_CLOEXEC);
		break;
	case O_TIMER:
		block_sig(SIGRTMIN);
		if (timer_create(c->clk, &sev, &t))
			fd = -1;
		else
			fd = 0;
		break;
	case O_SETITIMER:
		block_sig(SIGALRM);
		fd = 0;
		break;
	case O_EPOLL_WAIT:
	case O_EPOLL_PWAIT2:
		fd = epoll_create1(EPOLL_CLOEXEC);
		if (fd >= 0 && epoll_ctl(fd, EPOLL_CTL_ADD, pfd[0], &ev))
			fd = -1;
		break;
	case O_SIGTIMEDWAIT:
		block_sig(SIGUSR2);
		fd = 0;
		break;
	case O_SEMTIMEDOP:
		fd = semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
		break;
	case O_IO_GETEVENTS:
		fd = syscall(__NR_io_setup, 1, &aio);
		break;
	case O_MQ_ABS: {
		struct mq_attr at = { .mq_maxmsg = 1, .mq_msgsize = 16 };

		snprintf(buf, sizeof(buf), "/tsov.%d", (int)getpid());
		q = mq_open(buf, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &at);
		mq_unlink(buf);
		fd = q == (mqd_t)-1 ? -1 : 0;
		break;
	}
	case O_SO_RCVTIMEO: {
		int sv[2];

		fd = socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv);
		if (!fd) {
			fd = sv[0];
			if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
				fd = -1;
		}
		break;
	}
	default:
		fd = 0;
	}
	if (fd < 0) {
		if (errno == ENOSYS)
			cskip(c, "not supported (ENOSYS)");
		else
			cfail(c, "setup: %s", strerror(errno));
		return;
	}

	begin(c);
	switch (how) {
	case O_NANOSLEEP:
		ret = nanosleep(&ts, NULL);
		break;
	case O_CLOCK_NANOSLEEP:
		ret = clock_nanosleep(c->clk, 0, &ts, NULL);
		ret = ret ? (errno = ret, -1) : 0;
		break;
	case O_CLOCK_NANOSLEEP_ABS:
		ret = clock_nanosleep(c->clk, TIMER_ABSTIME, &ts, NULL);
		ret = ret ? (errno = ret, -1) : 0;
		break;
	case O_TIMERFD:
	case O_TIMERFD_ABS:
		ret = timerfd_settime(fd, how == O_TIMERFD_ABS ? TFD_TIMER_ABSTIME : 0, &its, NULL);
		if (!ret)
			ret = read(fd, &n, sizeof(n));
		break;
	case O_TIMER:
		ret = timer_settime(t, 0, &its, NULL);
		if (!ret)
			ret = wait_sig(SIGRTMIN, &si);
		break;
	case O_SETITIMER:
		ret = setitimer(ITIMER_REAL, &itv, NULL);
		if (!ret)
			ret = wait_sig(SIGALRM, &si);
		break;
	case O_SELECT:
		ret = select(pfd[0] + 1, &rfds, NULL, NULL, &tv);
		break;
	case O_PSELECT6:
		ret = syscall(SYS_pselect6, pfd[0] + 1, &rfds, NULL, NULL, &ts, NULL);
		break;
	case O_POLL:
		ret = poll(&p, 1, INT_MAX);
		break;
	case O_PPOLL:
		ret = syscall(SYS_ppoll, &p, 1, &ts, NULL, (size_t)8);
		break;
	case O_EPOLL_WAIT:
		ret = epoll_wait(fd, &ev, 1, INT_MAX);
		break;
	case O_EPOLL_PWAIT2:
#ifdef SYS_epoll_pwait2
		ret = syscall(SYS_epoll_pwait2, fd, &ev, 1, &ts, NULL, (size_t)8);
#else
		errno = ENOSYS;
#endif
		break;
	case O_FUTEX_WAIT:
		ret = syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		break;
	case O_FUTEX_WAIT_BITSET_ABS:
		ret = syscall(SYS_futex, &fword,
			      FUTEX_WAIT_BITSET_PRIVATE | (c->clk == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0),
			      0, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
		break;
	case O_SIGTIMEDWAIT:
		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		ret = sigtimedwait(&set, NULL, &ts);
		break;
	case O_SEMTIMEDOP:
		ret = semtimedop(semid, &sop, 1, &ts);
		break;
	case O_IO_GETEVENTS:
		ret = syscall(__NR_io_getevents, aio, 1, 1, &iev, &ts);
		break;
	case O_MQ_ABS:
		ret = mq_timedreceive(q, buf, sizeof(buf), NULL, &ts);
		break;
	case O_SO_RCVTIMEO:
		ret = recv(fd, buf, sizeof(buf), 0);
		break;
	}
	err = errno;
	end(c);
	cfail(c, "returned %d%s%s", ret, ret == -1 ? " " : "", ret == -1 ? strerror(err) : "");
}

#define MONO	CLOCK_MONOTONIC
#define REAL	CLOCK_REALTIME
#define BOOT	CLOCK_BOOTTIME
#define F(nm, op, v, ck)	TC(nm, do_forever, 0, ck, .arg = OV(op, v), FOREVER)

static const struct tcase c1000[] = {
	F("nanosleep {LONG_MAX, 999999999}", O_NANOSLEEP, V_MAX, MONO),
	F("nanosleep {9223372035, 0} (KTIME_MAX - 0.85s)", O_NANOSLEEP, V_NEAR_KTIME_MAX, MONO),
	F("nanosleep 1e7 s (d x TDF > KTIME_MAX)", O_NANOSLEEP, V_1E7S, MONO),
	F("nanosleep 1e4 s", O_NANOSLEEP, V_1E4S, MONO),
	F("clock_nanosleep CLOCK_MONOTONIC {LONG_MAX, 999999999}", O_CLOCK_NANOSLEEP, V_MAX, MONO),
	F("clock_nanosleep CLOCK_BOOTTIME 1e7 s", O_CLOCK_NANOSLEEP, V_1E7S, BOOT),
	F("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME KTIME_MAX - 0.85s", O_CLOCK_NANOSLEEP_ABS,
	  V_NEAR_KTIME_MAX, MONO),
	F("clock_nanosleep CLOCK_REALTIME TIMER_ABSTIME KTIME_MAX - 0.85s", O_CLOCK_NANOSLEEP_ABS,
	  V_NEAR_KTIME_MAX, REAL),
	F("clock_nanosleep CLOCK_BOOTTIME TIMER_ABSTIME KTIME_MAX - 0.85s", O_CLOCK_NANOSLEEP_ABS,
	  V_NEAR_KTIME_MAX, BOOT),
	F("timerfd relative {LONG_MAX, 999999999}", O_TIMERFD, V_MAX, MONO),
	F("timerfd relative 1e7 s", O_TIMERFD, V_1E7S, MONO),
	F("timerfd CLOCK_MONOTONIC absolute KTIME_MAX - 0.85s", O_TIMERFD_ABS, V_NEAR_KTIME_MAX, MONO),
	F("timerfd CLOCK_REALTIME absolute KTIME_MAX - 0.85s", O_TIMERFD_ABS, V_NEAR_KTIME_MAX, REAL),
	F("timer_settime relative {LONG_MAX, 999999999}", O_TIMER, V_MAX, MONO),
	F("timer_settime relative 1e7 s", O_TIMER, V_1E7S, MONO),
	F("setitimer ITIMER_REAL 1e7 s", O_SETITIMER, V_1E7S, MONO),
	F("select {LONG_MAX, 999999}", O_SELECT, V_MAX, MONO),
	F("pselect6 {LONG_MAX, 999999999}", O_PSELECT6, V_MAX, MONO),
	F("poll INT_MAX ms", O_POLL, V_MAX, MONO),
	F("ppoll {LONG_MAX, 999999999}", O_PPOLL, V_MAX, MONO),
	F("ppoll 1e7 s", O_PPOLL, V_1E7S, MONO),
	F("epoll_wait INT_MAX ms", O_EPOLL_WAIT, V_MAX, MONO),
	F("epoll_pwait2 {LONG_MAX, 999999999}", O_EPOLL_PWAIT2, V_MAX, MONO),
	F("FUTEX_WAIT {LONG_MAX, 999999999}", O_FUTEX_WAIT, V_MAX, MONO),
	F("FUTEX_WAIT 1e7 s", O_FUTEX_WAIT, V_1E7S, MONO),
	F("FUTEX_WAIT_BITSET CLOCK_MONOTONIC KTIME_MAX - 0.85s", O_FUTEX_WAIT_BITSET_ABS, V_NEAR_KTIME_MAX, MONO),
	F("FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME KTIME_MAX - 0.85s", O_FUTEX_WAIT_BITSET_ABS,
	  V_NEAR_KTIME_MAX, REAL),
	F("rt_sigtimedwait {LONG_MAX, 999999999}", O_SIGTIMEDWAIT, V_MAX, MONO),
	F("semtimedop {LONG_MAX, 999999999}", O_SEMTIMEDOP, V_MAX, MONO),
	F("io_getevents {LONG_MAX, 999999999}", O_IO_GETEVENTS, V_MAX, MONO),
	F("mq_timedreceive KTIME_MAX - 0.85s", O_MQ_ABS, V_NEAR_KTIME_MAX, REAL),
	F("SO_RCVTIMEO 1e7 s", O_SO_RCVTIMEO, V_1E7S, MONO),
};

static const struct tcase c10[] = {
	F("nanosleep {LONG_MAX, 999999999}", O_NANOSLEEP, V_MAX, MONO),
	F("nanosleep {9223372035, 0} (KTIME_MAX - 0.85s)", O_NANOSLEEP, V_NEAR_KTIME_MAX, MONO),
	F("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME KTIME_MAX - 0.85s", O_CLOCK_NANOSLEEP_ABS,
	  V_NEAR_KTIME_MAX, MONO),
	F("timerfd relative {LONG_MAX, 999999999}", O_TIMERFD, V_MAX, MONO),
	F("ppoll {LONG_MAX, 999999999}", O_PPOLL, V_MAX, MONO),
	F("FUTEX_WAIT {LONG_MAX, 999999999}", O_FUTEX_WAIT, V_MAX, MONO),
};

static const struct tcase cmilli[] = {
	F("nanosleep {LONG_MAX, 999999999}", O_NANOSLEEP, V_MAX, MONO),
	F("nanosleep {9223372035, 0} (KTIME_MAX - 0.85s)", O_NANOSLEEP, V_NEAR_KTIME_MAX, MONO),
	F("clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME KTIME_MAX - 0.85s", O_CLOCK_NANOSLEEP_ABS,
	  V_NEAR_KTIME_MAX, MONO),
	F("clock_nanosleep CLOCK_REALTIME TIMER_ABSTIME KTIME_MAX - 0.85s", O_CLOCK_NANOSLEEP_ABS,
	  V_NEAR_KTIME_MAX, REAL),
	F("timerfd relative {LONG_MAX, 999999999}", O_TIMERFD, V_MAX, MONO),
	F("ppoll {LONG_MAX, 999999999}", O_PPOLL, V_MAX, MONO),
	F("FUTEX_WAIT_BITSET CLOCK_MONOTONIC KTIME_MAX - 0.85s", O_FUTEX_WAIT_BITSET_ABS, V_NEAR_KTIME_MAX, MONO),
};

int main(void)
{
	ts_init(NCASES(c1000) + NCASES(c10) + NCASES(cmilli));
	RUN_CASES(&TDF_1000, c1000);
	RUN_CASES(&TDF_10, c10);
	RUN_CASES(&TDF_MILLI, cmilli);
	ksft_finished();
}
