// SPDX-License-Identifier: GPL-2.0
/*
 * Timeouts of waiting system calls in a dilated time namespace: select
 * (and its written-back timeout), pselect6, poll, ppoll, epoll_wait,
 * epoll_pwait, epoll_pwait2, rt_sigtimedwait, SO_RCVTIMEO / SO_SNDTIMEO
 * (recv/send timing and getsockopt read-back), SO_LINGER (close() of a
 * TCP socket whose data cannot leave), recvmmsg, io_getevents,
 * mq_timedreceive / mq_timedsend, semtimedop.
 *
 * Each wait has nothing to wait for and must time out after d on the
 * namespace's clock, d * TDF of host time.  Remaining times written back
 * after a signal are in namespace units.  The socket timeouts are kept in
 * jiffies, which makes them up to one tick short (schedule_timeout()), so
 * those cases allow one tick early, and the read-back one tick more.  See timens_sleep.h for the bounds.
 */
#define _GNU_SOURCE
#include <mqueue.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/aio_abi.h>
#include "timens_sleep.h"

enum {
	W_SELECT, W_PSELECT6, W_POLL, W_PPOLL, W_EPOLL_WAIT, W_EPOLL_PWAIT, W_EPOLL_PWAIT2,
	W_SIGTIMEDWAIT, W_IO_GETEVENTS, W_SEMTIMEDOP,
};

/*
 * A wait on an empty pipe (or on nothing) with a relative timeout d.
 * Written-back timeouts (select, pselect6, ppoll) must be 0 after a timeout,
 * or the remaining time (namespace units) after SIGUSR1 (K_SIGNAL cases,
 * which pass d with the "interrupted" bit).
 */
#define INTR	(1 << 8)

static void do_wait(struct ctx *c)
{
	int how = c->arg & 0xff, intr = c->arg & INTR, pfd[2], ep = -1, ret = 0, err;
	struct timespec ts = ns_ts(c->d);
	struct timeval tv = ns_tv(c->d);
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd p;
	i64 wb = -1, gran = 0;	/* written back, its granularity */
	aio_context_t aio = 0;
	struct io_event iev;
	struct sembuf sop = { 0, -1, 0 };
	int semid = -1;
	sigset_t set;
	fd_set rfds;

	if (pipe2(pfd, O_CLOEXEC)) {
		cfail(c, "pipe: %s", strerror(errno));
		return;
	}
	p.fd = pfd[0];
	p.events = POLLIN;
	FD_ZERO(&rfds);
	FD_SET(pfd[0], &rfds);
	switch (how) {
	case W_EPOLL_WAIT:
	case W_EPOLL_PWAIT:
	case W_EPOLL_PWAIT2:
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev)) {
			cfail(c, "epoll: %s", strerror(errno));
			return;
		}
		break;
	case W_SIGTIMEDWAIT:
		block_sig(SIGUSR2);
		break;
	case W_IO_GETEVENTS:
		if (syscall(__NR_io_setup, 1, &aio)) {
			if (errno == ENOSYS)
				cskip(c, "no AIO (io_setup: ENOSYS)");
			else
				cfail(c, "io_setup: %s", strerror(errno));
			return;
		}
		break;
	case W_SEMTIMEDOP:
		semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
		if (semid < 0) {
			if (errno == ENOSYS)
				cskip(c, "no SysV IPC (semget: ENOSYS)");
			else
				cfail(c, "semget: %s", strerror(errno));
			return;
		}
		break;
	}

	begin(c);
	switch (how) {
	case W_SELECT:
		ret = select(pfd[0] + 1, &rfds, NULL, NULL, &tv);
		break;
	case W_PSELECT6:
		ret = syscall(SYS_pselect6, pfd[0] + 1, &rfds, NULL, NULL, &ts, NULL);
		break;
	case W_POLL:
		ret = poll(&p, 1, (int)(c->d / NS_MS));
		break;
	case W_PPOLL:
		ret = syscall(SYS_ppoll, &p, 1, &ts, NULL, (size_t)8);
		break;
	case W_EPOLL_WAIT:
		ret = epoll_wait(ep, &ev, 1, (int)(c->d / NS_MS));
		break;
	case W_EPOLL_PWAIT:
		sigemptyset(&set);
		ret = epoll_pwait(ep, &ev, 1, (int)(c->d / NS_MS), &set);
		break;
	case W_EPOLL_PWAIT2:
#ifdef SYS_epoll_pwait2
		ret = syscall(SYS_epoll_pwait2, ep, &ev, 1, &ts, NULL, (size_t)8);
#else
		ret = -1;
		errno = ENOSYS;
#endif
		break;
	case W_SIGTIMEDWAIT:
		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		ret = sigtimedwait(&set, NULL, &ts);
		break;
	case W_IO_GETEVENTS:
		ret = syscall(__NR_io_getevents, aio, 1, 1, &iev, &ts);
		break;
	case W_SEMTIMEDOP:
		ret = semtimedop(semid, &sop, 1, &ts);
		break;
	}
	err = errno;
	end(c);

	if (how == W_EPOLL_PWAIT2 && ret == -1 && err == ENOSYS) {
		cskip(c, "no epoll_pwait2 (ENOSYS)");
		return;
	}
	switch (how) {
	case W_SELECT:
		wb = tv_ns(&tv);
		gran = NS_US;
		break;
	case W_PSELECT6:
	case W_PPOLL:
		wb = ts_ns(&ts);
		break;
	}
	if (intr) {
		c->r->nobounds = 1;
		if (ret != -1 || err != EINTR) {
			cfail(c, "returned %d (%s), expected EINTR from the signal", ret,
			      ret == -1 ? strerror(err) : "no error");
			return;
		}
		check_rem(c, "written-back timeout", wb, c->d, REM_TOL + gran);
		return;
	}
	switch (how) {
	case W_SIGTIMEDWAIT:
	case W_SEMTIMEDOP:
		errno = err;
		EXPECT_ERR(c, ret, EAGAIN, how == W_SEMTIMEDOP ? "semtimedop" : "sigtimedwait");
		break;
	default:
		if (ret != 0)
			cfail(c, "returned %d (%s), expected 0 (timeout)", ret,
			      ret == -1 ? strerror(err) : "ready?");
	}
	if (wb > 0)
		cfail(c, "written-back timeout %s after the timeout, expected 0", fmt_ns(wb));
	if (aio)
		syscall(__NR_io_destroy, aio);
	if (semid >= 0)
		semctl(semid, 0, IPC_RMID);
}

/* ---- sockets ---- */

static i64 sock_readback(int fd, int opt)
{
	struct timeval tv;
	socklen_t l = sizeof(tv);

	if (getsockopt(fd, SOL_SOCKET, opt, &tv, &l))
		return -1;
	return tv_ns(&tv);
}

/* one tick, in namespace units, whichever way the kernel scales jiffies */
static i64 tick_allowance(struct ctx *c)
{
	i64 a = to_ns(c->tdf, jiffy_ns);

	return a > jiffy_ns ? a : jiffy_ns;
}

/*
 * Stored in jiffies, rounded up: the read-back may exceed the value set by
 * one tick, of host time scaled to namespace units if the kernel keeps host
 * jiffies (4 s at TDF 0.001 and HZ 250).
 */
static void check_readback(struct ctx *c, const char *what, i64 rb)
{
	i64 tick = tick_allowance(c);

	cdiag(c, "%s read back %s", what, fmt_ns(rb));
	if (rb < c->d - NS_US || rb > c->d + tick)
		cfail(c, "%s read back as %s, set to %s (namespace units, up to one tick, %s, more)",
		      what, fmt_ns(rb), fmt_ns(c->d), fmt_ns(tick));
}

/* arg 0: SO_RCVTIMEO, recv on an empty socket; 1: SO_SNDTIMEO, send to a full one */
static void do_sock_timeo(struct ctx *c)
{
	int sv[2], opt = c->arg ? SO_SNDTIMEO : SO_RCVTIMEO, err;
	struct timeval tv = ns_tv(c->d);
	static char buf[65536];
	ssize_t ret;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		cfail(c, "socketpair: %s", strerror(errno));
		return;
	}
	if (c->arg)	/* fill the pipe */
		while (send(sv[0], buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	if (setsockopt(sv[0], SOL_SOCKET, opt, &tv, sizeof(tv))) {
		cfail(c, "setsockopt: %s", strerror(errno));
		return;
	}
	c->r->min_e = c->d - tick_allowance(c);
	begin(c);
	if (c->arg)
		ret = send(sv[0], buf, sizeof(buf), 0);
	else
		ret = recv(sv[0], buf, sizeof(buf), 0);
	err = errno;
	end(c);
	errno = err;
	EXPECT_ERR(c, ret, EAGAIN, c->arg ? "send" : "recv");
	check_readback(c, c->arg ? "SO_SNDTIMEO" : "SO_RCVTIMEO", sock_readback(sv[0], opt));
	close(sv[0]);
	close(sv[1]);
}

/*
 * SO_LINGER (whole seconds): close() of a TCP socket over 127.0.0.1 whose
 * data cannot leave (the peer reads nothing and its small receive buffer
 * is full) waits the linger time for it, in jiffies like the socket
 * timeouts, then returns 0 and leaves the rest to TCP.
 */
static void do_sock_linger(struct ctx *c)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = (int)(c->d / NS_S) };
	int l, cl = -1, sv = -1, small = 4096, ret, err;
	socklen_t len = sizeof(a);
	static char buf[65536];

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len)) {
		cfail(c, "listening socket on 127.0.0.1: %s", strerror(errno));
		goto out;
	}
	cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cl < 0 || setsockopt(cl, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) ||
	    connect(cl, (struct sockaddr *)&a, sizeof(a))) {
		cfail(c, "connect: %s", strerror(errno));
		goto out;
	}
	sv = accept(l, NULL, NULL);
	if (sv < 0) {
		cfail(c, "accept: %s", strerror(errno));
		goto out;
	}
	while (send(cl, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	if (errno != EAGAIN || setsockopt(cl, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg))) {
		cfail(c, "filling the connection, SO_LINGER: %s", strerror(errno));
		goto out;
	}
	c->r->min_e = c->d - tick_allowance(c);
	begin(c);
	ret = close(cl);
	err = errno;
	end(c);
	cl = -1;
	if (ret)
		cfail(c, "close returned %d (%s), expected 0", ret, strerror(err));
out:
	if (cl >= 0)
		close(cl);
	if (sv >= 0)
		close(sv);
	if (l >= 0)
		close(l);
}

/* only the read-back: set inside, read inside */
static void do_sock_readback(struct ctx *c)
{
	struct timeval tv = ns_tv(c->d);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	c->r->nobounds = 1;
	if (fd < 0)
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	begin(c);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		cfail(c, "setsockopt: %s", strerror(errno));
	end(c);
	check_readback(c, "SO_RCVTIMEO", sock_readback(fd, SO_RCVTIMEO));
	check_readback(c, "SO_SNDTIMEO", sock_readback(fd, SO_SNDTIMEO));
	close(fd);
}

struct sender {
	int fd;
	i64 every;
	volatile int stop;
};

static void *sender_fn(void *arg)
{
	struct sender *s = arg;
	struct timespec t = ns_ts(s->every);

	while (!s->stop) {
		if (send(s->fd, "x", 1, MSG_DONTWAIT) < 0 && errno != EAGAIN)
			break;
		nanosleep(&t, NULL);
	}
	return NULL;
}

#define MMSG_VLEN	1024

/*
 * recvmmsg's timeout is only looked at after each datagram: a thread sends
 * one every d/30; recvmmsg(vlen 1024) must return once the timeout expired,
 * with fewer than vlen datagrams and the written-back timeout 0.
 */
static void do_recvmmsg(struct ctx *c)
{
	static struct mmsghdr msgs[MMSG_VLEN];
	static struct iovec iov[MMSG_VLEN];
	static char bufs[MMSG_VLEN][4];
	struct sender s = { .every = c->d / 30 };
	struct timespec ts = ns_ts(c->d);
	int sv[2], i, ret, err;
	pthread_t th;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		cfail(c, "socketpair: %s", strerror(errno));
		return;
	}
	for (i = 0; i < MMSG_VLEN; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	s.fd = sv[1];
	begin(c);
	if (pthread_create(&th, NULL, sender_fn, &s)) {
		end(c);
		cfail(c, "pthread_create failed");
		return;
	}
	ret = recvmmsg(sv[0], msgs, MMSG_VLEN, 0, &ts);
	err = errno;
	end(c);
	s.stop = 1;
	pthread_join(th, NULL);
	cdiag(c, "%d datagrams", ret);
	if (ret < 0)
		cfail(c, "recvmmsg: %s", strerror(err));
	else if (ret >= MMSG_VLEN)
		cfail(c, "recvmmsg returned a full vector (%d): the sender was too fast", ret);
	if (ts_ns(&ts) != 0)
		cfail(c, "written-back timeout %s, expected 0", fmt_ns(ts_ns(&ts)));
}

/* ---- POSIX message queues ---- */

/* arg 0: mq_timedreceive from an empty queue; 1: mq_timedsend to a full one */
static void do_mq(struct ctx *c)
{
	struct mq_attr at = { .mq_maxmsg = 1, .mq_msgsize = 16 };
	char name[64], buf[16] = "x";
	struct timespec abs;
	i64 deadline;
	int ret, err;
	mqd_t q;

	snprintf(name, sizeof(name), "/timens_sleep.%d", (int)getpid());
	q = mq_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &at);
	if (q == (mqd_t)-1) {
		if (errno == ENOSYS)
			cskip(c, "no POSIX message queues (ENOSYS)");
		else
			cfail(c, "mq_open: %s", strerror(errno));
		return;
	}
	mq_unlink(name);
	if (c->arg && mq_send(q, buf, 1, 0)) {
		cfail(c, "mq_send: %s", strerror(errno));
		return;
	}
	begin(c);
	deadline = now_ns(CLOCK_REALTIME) + c->d;	/* c->clk is CLOCK_REALTIME */
	abs = ns_ts(deadline);
	c->r->min_e = deadline - c->r->t0;
	if (c->arg)
		ret = mq_timedsend(q, buf, 1, 0, &abs);
	else
		ret = mq_timedreceive(q, buf, sizeof(buf), NULL, &abs);
	err = errno;
	end(c);
	errno = err;
	EXPECT_ERR(c, ret, ETIMEDOUT, c->arg ? "mq_timedsend" : "mq_timedreceive");
	if (c->r->t1 < deadline)
		cfail(c, "returned %s before the deadline", fmt_ns(deadline - c->r->t1));
	mq_close(q);
}

#define MONO	CLOCK_MONOTONIC
#define REAL	CLOCK_REALTIME
#define D10	(30 * NS_MS)
#define D1	(100 * NS_MS)
#define DMILLI	(100 * NS_S)	/* 100 ms of host time: enough for a two-sided bound */
#define SIG10	SIG_AT(250 * NS_MS)

static const struct tcase c10[] = {
	TC("select 30ms, timeout written back as 0", do_wait, D10, MONO, .arg = W_SELECT),
	TC("select 60ms interrupted at host +250ms: written-back timeout", do_wait, 60 * NS_MS, MONO,
	   .arg = W_SELECT | INTR, SIG10),
	TC("pselect6 30ms, timeout written back as 0", do_wait, D10, MONO, .arg = W_PSELECT6),
	TC("pselect6 60ms interrupted at host +250ms: written-back timeout", do_wait, 60 * NS_MS, MONO,
	   .arg = W_PSELECT6 | INTR, SIG10),
	TC("poll 30ms", do_wait, D10, MONO, .arg = W_POLL),
	TC("ppoll 30ms, timeout written back as 0", do_wait, D10, MONO, .arg = W_PPOLL),
	TC("ppoll 60ms interrupted at host +250ms: written-back timeout", do_wait, 60 * NS_MS, MONO,
	   .arg = W_PPOLL | INTR, SIG10),
	TC("epoll_wait 30ms", do_wait, D10, MONO, .arg = W_EPOLL_WAIT),
	TC("epoll_pwait 30ms", do_wait, D10, MONO, .arg = W_EPOLL_PWAIT),
	TC("epoll_pwait2 30ms", do_wait, D10, MONO, .arg = W_EPOLL_PWAIT2),
	TC("rt_sigtimedwait 30ms", do_wait, D10, MONO, .arg = W_SIGTIMEDWAIT),
	TC("io_getevents 30ms", do_wait, D10, MONO, .arg = W_IO_GETEVENTS),
	TC("semtimedop 30ms", do_wait, D10, MONO, .arg = W_SEMTIMEDOP),
	TC("SO_RCVTIMEO 30ms: recv times out, getsockopt reads back 30ms", do_sock_timeo, D10, MONO, .arg = 0),
	TC("SO_SNDTIMEO 30ms: send times out, getsockopt reads back 30ms", do_sock_timeo, D10, MONO, .arg = 1),
	TC("SO_RCVTIMEO/SO_SNDTIMEO 1.5s read back unchanged", do_sock_readback, 1500 * NS_MS, MONO),
	TC("recvmmsg timeout 30ms", do_recvmmsg, D10, MONO),
	TC("mq_timedreceive CLOCK_REALTIME now+30ms", do_mq, D10, REAL, .arg = 0),
	TC("mq_timedsend CLOCK_REALTIME now+30ms", do_mq, D10, REAL, .arg = 1),
};

static const struct tcase c1[] = {
	TC("select 100ms", do_wait, D1, MONO, .arg = W_SELECT),
	TC("poll 100ms", do_wait, D1, MONO, .arg = W_POLL),
	TC("epoll_pwait2 100ms", do_wait, D1, MONO, .arg = W_EPOLL_PWAIT2),
	TC("SO_RCVTIMEO 100ms", do_sock_timeo, D1, MONO, .arg = 0),
};

static const struct tcase cmilli[] = {
	TC("select 100s", do_wait, DMILLI, MONO, .arg = W_SELECT),
	TC("poll 100s", do_wait, DMILLI, MONO, .arg = W_POLL),
	TC("ppoll 100s", do_wait, DMILLI, MONO, .arg = W_PPOLL),
	TC("epoll_wait 100s", do_wait, DMILLI, MONO, .arg = W_EPOLL_WAIT),
	TC("epoll_pwait2 100s", do_wait, DMILLI, MONO, .arg = W_EPOLL_PWAIT2),
	TC("rt_sigtimedwait 100s", do_wait, DMILLI, MONO, .arg = W_SIGTIMEDWAIT),
	TC("semtimedop 100s", do_wait, DMILLI, MONO, .arg = W_SEMTIMEDOP),
	TC("SO_RCVTIMEO 100s", do_sock_timeo, DMILLI, MONO, .arg = 0),
	TC("SO_LINGER 100s: close() waits for unsent TCP data", do_sock_linger, DMILLI, MONO),
	TC("mq_timedreceive CLOCK_REALTIME now+100s", do_mq, DMILLI, REAL, .arg = 0),
	TC("ppoll 60s interrupted at host +30ms: written-back timeout", do_wait, 60 * NS_S, MONO,
	   .arg = W_PPOLL | INTR, SIG_AT(30 * NS_MS)),
};

int main(void)
{
	ts_init(NCASES(c10) + NCASES(c1) + NCASES(cmilli));
	RUN_CASES(&TDF_10, c10);
	RUN_CASES(&TDF_1, c1);
	RUN_CASES(&TDF_MILLI, cmilli);
	ksft_finished();
}
