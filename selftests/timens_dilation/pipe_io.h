/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whole reads and writes on the pipes between a test's parent, outside the
 * time namespace, and its children inside: shared by the selftests and the
 * benchmark.
 */
#ifndef PIPE_IO_H
#define PIPE_IO_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* Read exactly @len bytes; -1 on error or end of file */
static inline int read_full(int fd, void *buf, size_t len)
{
	size_t o = 0;
	ssize_t r;

	while (o < len) {
		r = read(fd, (char *)buf + o, len - o);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		o += r;
	}
	return 0;
}

/* Write exactly @len bytes; -1 on error */
static inline int write_full(int fd, const void *buf, size_t len)
{
	size_t o = 0;
	ssize_t r;

	while (o < len) {
		r = write(fd, (const char *)buf + o, len - o);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		o += r;
	}
	return 0;
}

#endif /* PIPE_IO_H */
