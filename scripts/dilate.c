// SPDX-License-Identifier: GPL-2.0
/*
 * dilate: run a command in a new, dilated time namespace.
 *
 *   dilate TDF CMD [ARGS...]
 *
 * unshare(CLONE_NEWTIME), write TDF to /proc/self/timens_dilation (which, like
 * timens_offsets, refers to the namespace our children will be in), fork; the
 * child execs CMD inside the dilated namespace, the parent waits and exits
 * with CMD's status (128+N if killed by signal N). TDF is anything the kernel
 * accepts: "10", "2.5", "1/1000". Needs CAP_SYS_TIME.
 * Built by `make build` into build/bin/dilate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

int main(int argc, char **argv)
{
	int fd, status;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: %s TDF CMD [ARGS...]\n", argv[0]);
		return 2;
	}
	if (unshare(CLONE_NEWTIME)) {
		perror("dilate: unshare(CLONE_NEWTIME)");
		return 1;
	}
	fd = open("/proc/self/timens_dilation", O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "dilate: /proc/self/timens_dilation: %s%s\n", strerror(errno),
			errno == ENOENT ? " (kernel without CONFIG_TIME_NS_DILATION)" : "");
		return 1;
	}
	if (write(fd, argv[1], strlen(argv[1])) < 0) {
		fprintf(stderr, "dilate: writing \"%s\" to timens_dilation: %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(fd);
	pid = fork();
	if (pid < 0) {
		perror("dilate: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "dilate: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("dilate: waitpid");
			return 1;
		}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
