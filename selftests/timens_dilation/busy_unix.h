/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A socket wait woken again and again before its timeout: recv() on an
 * AF_UNIX stream with small buffers while one thread sends on the same
 * socket and a second drains the peer. Each read of the peer frees send
 * space, and unix_write_space() wakes the socket's queue, the receiver
 * with it, once the send queue is down to a quarter; the recv() itself
 * never gets data (nothing is sent to its end) and must time out.
 *
 * dilation_change holds one such wait across one factor change, the
 * drainer pausing 200 us between reads (the recv() then sleeps about 44
 * times in its 100 ms); dilation_timeo_race holds many across thousands
 * of changes, the drainer without a pause, to wake as often as the CPUs
 * allow. (TCP is not used: its receiver also waits for the socket lock
 * the sender holds, time that no socket timeout counts, on any kernel.)
 */
#ifndef BUSY_UNIX_H
#define BUSY_UNIX_H

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

struct busy_unix {
	int sk[2];		/* sk[0]: the receiver's and the sender's end */
	long drain_pause_ns;	/* between the drainer's reads; 0: none */
	pthread_t sender, drainer;
	int stop;		/* set by busy_unix_stop(), read by the sender */
	int running;
};

/*
 * A helper thread with every signal blocked: a test's signals are for the
 * thread it measures.
 */
static inline int helper_thread_create(pthread_t *thr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(thr, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* The stream, in @sk; its receiver (sk[0]) times out after @rcvtimeo_ns */
static inline int busy_unix_open(int sk[2], long long rcvtimeo_ns)
{
	struct timeval tv = {
		.tv_sec = rcvtimeo_ns / 1000000000,
		.tv_usec = rcvtimeo_ns / 1000 % 1000000,
	};
	int small = 4096;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sk))
		return -1;
	if (setsockopt(sk[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) ||
	    setsockopt(sk[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) ||
	    setsockopt(sk[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -1;
	return 0;
}

static inline void *busy_unix_send(void *arg)
{
	struct busy_unix *b = arg;
	char chunk[4096] = { 0 };

	while (!__atomic_load_n(&b->stop, __ATOMIC_RELAXED) &&
	       send(b->sk[0], chunk, sizeof(chunk), MSG_NOSIGNAL) > 0)
		;
	return NULL;
}

static inline void *busy_unix_drain(void *arg)
{
	struct busy_unix *b = arg;
	struct timespec pause = { 0, b->drain_pause_ns };
	char buf[1024];

	while (recv(b->sk[1], buf, sizeof(buf), 0) > 0)
		if (b->drain_pause_ns)
			nanosleep(&pause, NULL);
	return NULL;
}

/* Start the sender and the drainer on the stream @sk (of busy_unix_open()) */
static inline int busy_unix_start(struct busy_unix *b, const int sk[2], long drain_pause_ns)
{
	b->sk[0] = sk[0];
	b->sk[1] = sk[1];
	b->drain_pause_ns = drain_pause_ns;
	b->stop = 0;
	b->running = 0;
	if (helper_thread_create(&b->drainer, busy_unix_drain, b))
		return -1;
	if (helper_thread_create(&b->sender, busy_unix_send, b)) {
		shutdown(b->sk[1], SHUT_RDWR);
		pthread_join(b->drainer, NULL);
		return -1;
	}
	b->running = 1;
	return 0;
}

/* Stop both threads; the stream stays open, for its owner to close */
static inline void busy_unix_stop(struct busy_unix *b)
{
	if (!b->running)
		return;
	/* the sender's next send fails, the drainer reads the end of file */
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
	shutdown(b->sk[0], SHUT_WR);
	pthread_join(b->sender, NULL);
	pthread_join(b->drainer, NULL);
	b->running = 0;
}

#endif /* BUSY_UNIX_H */
