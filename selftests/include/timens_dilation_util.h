/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few helpers every selftest of time-namespace dilation needs, whatever
 * its harness (timens_dilation/dilation.h, timens_sleep/timens_sleep.h, the
 * churn and fuzz tests): writing a factor to /proc/PID/timens_dilation
 * (docs/interface.md), writing /proc/PID/timens_offsets, and forking a child
 * into the namespace linked by two pipes.  One implementation of each, so
 * that a change of the interface is made once.  lib.mk puts this directory
 * on the include path.
 */
#ifndef __TIMENS_DILATION_UTIL_H__
#define __TIMENS_DILATION_UTIL_H__

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>

#include "kselftest.h"

/* older libc headers */
#ifndef CLONE_NEWTIME
# define CLONE_NEWTIME	0x00000080
#endif
#ifndef CLOCK_TAI
# define CLOCK_TAI	11
#endif

#define DIL_SELF	0	/* pid argument meaning /proc/self */

static inline void require_timens(void)
{
	if (access("/proc/self/ns/time", F_OK))
		ksft_exit_skip("time namespaces are not supported (no /proc/self/ns/time)\n");
}

static inline void require_dilation(void)
{
	require_timens();
	if (access("/proc/self/timens_dilation", F_OK))
		ksft_exit_skip("kernel without time-namespace dilation (CONFIG_TIME_NS_DILATION): /proc/self/timens_dilation does not exist\n");
}

/* unshare(CLONE_NEWTIME): only time_for_children changes; we stay on the host. */
static inline void unshare_timens_or_skip(void)
{
	if (unshare(CLONE_NEWTIME)) {
		if (errno == EPERM)
			ksft_exit_skip("need CAP_SYS_ADMIN (run as root) for unshare(CLONE_NEWTIME)\n");
		ksft_exit_fail_msg("unshare(CLONE_NEWTIME): %s\n", strerror(errno));
	}
}

static inline void dil_path(char *buf, size_t sz, pid_t pid, const char *file)
{
	if (pid == DIL_SELF)
		snprintf(buf, sz, "/proc/self/%s", file);
	else
		snprintf(buf, sz, "/proc/%d/%s", (int)pid, file);
}

/*
 * Write @len bytes of @s to /proc/PID/@file at offset @off: with pwrite()
 * if @use_pwrite, else with lseek() and write() (the fuzz test tries both;
 * everybody else writes at 0).  0 on success (the whole buffer written),
 * else -errno.
 */
static inline int proc_write_at(pid_t pid, const char *file, const void *s, size_t len,
				off_t off, int use_pwrite)
{
	char path[64];
	ssize_t ret;
	int fd, err;

	dil_path(path, sizeof(path), pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (off && use_pwrite)
		ret = pwrite(fd, s, len, off);
	else if (off && lseek(fd, off, SEEK_SET) != off)
		ret = -1;
	else
		ret = write(fd, s, len);
	err = errno;
	close(fd);
	if (ret < 0)
		return -err;
	if ((size_t)ret != len)
		return -EMSGSIZE;	/* short write: not what the spec says */
	return 0;
}

static inline int dil_write_at(pid_t pid, const void *s, size_t len, off_t off, int use_pwrite)
{
	return proc_write_at(pid, "timens_dilation", s, len, off, use_pwrite);
}

static inline int dil_write_len(pid_t pid, const char *s, size_t len)
{
	return dil_write_at(pid, s, len, 0, 0);
}

/* The factor @s ("N", "N/D", decimal), for PID's children's namespace. */
static inline int dil_write(pid_t pid, const char *s)
{
	return dil_write_len(pid, s, strlen(s));
}

/* Raw content (newline included) into buf; 0 or -errno. */
static inline int dil_read(pid_t pid, char *buf, size_t sz)
{
	char path[64];
	ssize_t ret;
	int fd, err;

	dil_path(path, sizeof(path), pid, "timens_dilation");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = read(fd, buf, sz - 1);
	err = errno;
	close(fd);
	if (ret < 0)
		return -err;
	buf[ret] = '\0';
	return 0;
}

/*
 * "CLOCK SEC NSEC" to /proc/PID/timens_offsets (only before a task entered
 * the namespace).  0 or -errno.
 */
static inline int set_timens_offset_pid(pid_t pid, clockid_t c, long long sec, long nsec)
{
	char buf[128];
	int len;

	len = snprintf(buf, sizeof(buf), "%d %lld %ld", (int)c, sec, nsec);
	return proc_write_at(pid, "timens_offsets", buf, len, 0, 0);
}

static inline int set_timens_offset(clockid_t c, long long sec, long nsec)
{
	return set_timens_offset_pid(DIL_SELF, c, sec, nsec);
}

/*
 * fork() with two pipes, one each way.  In the parent and in the child,
 * *rfd and *wfd are this side's ends (the other side's are closed).
 * Returns what fork() returns; -1 also if a pipe cannot be made.
 */
static inline pid_t fork_piped(int *rfd, int *wfd)
{
	int down[2], up[2];
	pid_t pid;

	if (pipe(down))
		return -1;
	if (pipe(up)) {
		int err = errno;

		close(down[0]);
		close(down[1]);
		errno = err;
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(down[0]);
		close(down[1]);
		close(up[0]);
		close(up[1]);
		errno = err;
		return -1;
	}
	close(pid ? down[0] : down[1]);
	close(pid ? up[1] : up[0]);
	*rfd = pid ? up[0] : down[0];
	*wfd = pid ? down[1] : up[1];
	return pid;
}

/*
 * The usual start of a test with one child in a dilated namespace: write
 * @factor for our children (unless NULL), fork @child(rfd, wfd), which
 * must not return, into that namespace.  The parent gets its ends of the
 * pipes; any failure ends the test.
 */
static inline pid_t dil_fork_child(const char *factor, void (*child)(int rfd, int wfd),
				   int *rfd, int *wfd)
{
	pid_t pid;
	int err;

	err = factor ? dil_write(DIL_SELF, factor) : 0;
	if (err)
		ksft_exit_fail_msg("writing %s to /proc/self/timens_dilation: %s\n", factor,
				   strerror(-err));
	pid = fork_piped(rfd, wfd);
	if (pid < 0)
		ksft_exit_fail_msg("pipe/fork: %s\n", strerror(errno));
	if (!pid) {
		child(*rfd, *wfd);
		_exit(1);
	}
	return pid;
}

#endif /* __TIMENS_DILATION_UTIL_H__ */
