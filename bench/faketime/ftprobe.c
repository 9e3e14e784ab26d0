// SPDX-License-Identifier: GPL-2.0
/*
 * ftprobe: the program that runs under each time mechanism for
 * bench/faketime (built dynamic as ftprobe and with gcc -static as
 * ftprobe-static).  It only ever uses libc's clock_gettime(), which is what
 * libfaketime interposes and what reaches the vDSO otherwise.
 *
 *   ftprobe loop   worker: reads a u64 count N from stdin, makes N calls of
 *                  clock_gettime(CLOCK_MONOTONIC), writes back the last
 *                  reading (s64 ns; 0 for N == 0) on stdout; exits at EOF.
 *                  The parent times each batch with its own clock: ours is
 *                  dilated inside the namespace and libfaketime's is faked,
 *                  so the loop cannot time itself.
 *   ftprobe rate   reads CLOCK_MONOTONIC and CLOCK_REALTIME, writes "ready\n",
 *                  waits for a line on stdin, reads both clocks again and
 *                  prints "mono SECONDS real SECONDS" (the inside intervals);
 *                  the parent holds it for a known host interval in between.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int full(ssize_t (*op)(int, void *, size_t), int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t r = op(fd, p, len);

		if (r <= 0)
			return -1;
		p += r;
		len -= r;
	}
	return 0;
}

static ssize_t write_nc(int fd, void *buf, size_t len)
{
	return write(fd, buf, len);
}

static int do_loop(void)
{
	uint64_t n, i;
	int64_t last;

	while (!full(read, 0, &n, sizeof(n))) {
		last = 0;
		for (i = 0; i < n; i++)
			last = now(CLOCK_MONOTONIC);
		if (full(write_nc, 1, &last, sizeof(last)))
			return 1;
	}
	return 0;
}

static int do_rate(void)
{
	int64_t m0, r0, m1, r1;
	char line[64];

	m0 = now(CLOCK_MONOTONIC);
	r0 = now(CLOCK_REALTIME);
	if (full(write_nc, 1, "ready\n", 6))
		return 1;
	/* unbuffered: stdio could otherwise read ahead of the parent's line */
	if (read(0, line, sizeof(line)) <= 0)
		return 1;
	m1 = now(CLOCK_MONOTONIC);
	r1 = now(CLOCK_REALTIME);
	printf("mono %.6f real %.6f\n", (m1 - m0) / 1e9, (r1 - r0) / 1e9);
	return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "loop"))
		return do_loop();
	if (argc == 2 && !strcmp(argv[1], "rate"))
		return do_rate();
	fprintf(stderr, "usage: %s loop|rate\n", argv[0]);
	return 2;
}
