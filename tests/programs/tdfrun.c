// SPDX-License-Identifier: GPL-2.0
/*
 * tdfrun: run a program in a new time namespace dilated by TDF and check its
 * sleeps against the host clock.
 *
 *   tdfrun TDF CMD [ARGS...]
 *
 * unshare(CLONE_NEWTIME), write TDF to /proc/self/timens_dilation, fork; the
 * child execs CMD inside the namespace with stdout and stderr on a pipe.  We
 * stay in the root time namespace, copy every line of CMD's output to our
 * stdout and stamp it with our (host) CLOCK_MONOTONIC when it arrives.  The
 * program brackets each sleep phase with
 *
 *   MARK begin NAME NS      (NS: the phase's length in its own, namespace, ns)
 *   MARK end NAME
 *
 * and after "MARK begin" waits for a line on its stdin (TDFRUN_ACK=1 in its
 * environment says so), which we send right after stamping the begin line:
 * the phase starts after our begin stamp and ends before our end stamp.  For
 * each pair we print
 *
 *   HOST ok|fail NAME: host X ms, expected NS * TDF = Y ms
 *
 * ok iff Y - 1 ms <= X <= 1.25 Y + 500 ms (the lower bound holds for any
 * correct kernel, the 1 ms is for rounding in the programs' own timing; the
 * upper bound allows interpreter overhead and QEMU TCG wake-up latency, in
 * host time).  A kernel that does not dilate sleeps gives X ~ NS, far below
 * Y at TDF 10.  Exit status: CMD's (128 + N if killed by
 * signal N), 1 if we could not set it up.  Needs CAP_SYS_ADMIN/CAP_SYS_TIME.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define NS_MS 1000000LL
#define MAXMARKS 64

static long long host_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct {
	char name[64];
	long long stamp, ns;
} marks[MAXMARKS];
static int nmarks;
static long double tdf;

static int ackfd = -1;

static void line(char *s, long long stamp)
{
	char name[64];
	long long ns;
	int i;

	printf("%s\n", s);
	if (sscanf(s, "MARK begin %63s %lld", name, &ns) == 2 && nmarks < MAXMARKS) {
		snprintf(marks[nmarks].name, sizeof(marks[nmarks].name), "%s", name);
		marks[nmarks].stamp = stamp;
		marks[nmarks].ns = ns;
		nmarks++;
		if (write(ackfd, "G\n", 2) != 2)
			perror("tdfrun: ack");
	} else if (sscanf(s, "MARK end %63s", name) == 1) {
		for (i = nmarks - 1; i >= 0; i--)
			if (!strcmp(marks[i].name, name))
				break;
		if (i < 0) {
			printf("HOST fail %s: MARK end without MARK begin\n", name);
		} else {
			long double x = stamp - marks[i].stamp, y = marks[i].ns * tdf;
			int ok = x >= y - NS_MS && x <= 1.25L * y + 500 * NS_MS;

			printf("HOST %s %s: host %.1Lf ms, expected %lld ns x TDF %s = %.1Lf ms (in [%.1Lf, %.1Lf])\n",
			       ok ? "ok" : "fail", name, x / NS_MS, marks[i].ns, getenv("TDFRUN_TDF"),
			       y / NS_MS, (y - NS_MS) / NS_MS, (1.25L * y + 500 * NS_MS) / NS_MS);
			marks[i].name[0] = '\0';
		}
	}
	fflush(stdout);
}

static long double parse_tdf(const char *s)
{
	long double n, d;

	if (strchr(s, '/')) {
		if (sscanf(s, "%Lf/%Lf", &n, &d) == 2 && d > 0)
			return n / d;
		return 0;
	}
	return strtold(s, NULL);
}

int main(int argc, char **argv)
{
	char buf[4096], *nl;
	size_t used = 0;
	int fd, p[2], in[2], status;
	ssize_t r;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: %s TDF CMD [ARGS...]\n", argv[0]);
		return 2;
	}
	tdf = parse_tdf(argv[1]);
	if (tdf <= 0) {
		fprintf(stderr, "tdfrun: bad TDF %s\n", argv[1]);
		return 2;
	}
	setenv("TDFRUN_TDF", argv[1], 1);
	if (unshare(CLONE_NEWTIME)) {
		perror("tdfrun: unshare(CLONE_NEWTIME)");
		return 1;
	}
	/* TDFRUN_PRETEND=1: do not write the factor (developing on a kernel without it) */
	if (!getenv("TDFRUN_PRETEND")) {
		fd = open("/proc/self/timens_dilation", O_WRONLY);
		if (fd < 0 || write(fd, argv[1], strlen(argv[1])) < 0) {
			fprintf(stderr, "tdfrun: writing %s to /proc/self/timens_dilation: %s\n",
				argv[1], strerror(errno));
			return 1;
		}
		close(fd);
	}
	setenv("TDFRUN_ACK", "1", 1);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(p) || pipe(in)) {
		perror("tdfrun: pipe");
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("tdfrun: fork");
		return 1;
	}
	if (pid == 0) {
		close(p[0]);
		close(in[1]);
		dup2(in[0], 0);
		close(in[0]);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[1]);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "tdfrun: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	close(in[0]);
	ackfd = in[1];
	for (;;) {
		r = read(p[0], buf + used, sizeof(buf) - 1 - used);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		long long stamp = host_ns();

		used += r;
		buf[used] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			line(buf, stamp);
			used -= nl + 1 - buf;
			memmove(buf, nl + 1, used + 1);
		}
		if (used == sizeof(buf) - 1) {	/* overlong line */
			line(buf, stamp);
			used = 0;
		}
	}
	if (used) {
		buf[used] = '\0';
		line(buf, host_ns());
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("tdfrun: waitpid");
			return 1;
		}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
