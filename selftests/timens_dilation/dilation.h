/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the time-namespace dilation selftests
 * (/proc/PID/timens_dilation, see docs/interface.md).
 *
 * Measurement model used by the rate / continuity tests
 * -----------------------------------------------------
 * The test process stays in the root time namespace ("host").  It forks a
 * "server" child inside the namespace under test and talks to it over two
 * pipes.  To take one reading, the parent reads the host clock (h0), sends a
 * request, the child reads its clock and answers, the parent reads the host
 * clock again (h1).  By causality the child's reading was taken at a host
 * instant inside [h0, h1].  Each reading is repeated a few times and the
 * narrowest bracket is kept.  Two readings A and B taken ~250 ms apart bound
 * the host interval between them to [h0B - h1A, h1B - h0A]; the rate check
 * accepts iff 1/TDF times some interval in that range equals the child's
 * delta up to the child's own reading granularity ("slack").  This is
 * rigorous: a correct kernel cannot fail it however noisy the machine (QEMU
 * TCG) is; noise only widens the bracket, which is reported (and checked to
 * be small enough for the test to mean something).
 */
#ifndef __TIMENS_DILATION_H__
#define __TIMENS_DILATION_H__

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "kselftest.h"
#include "timens_dilation_util.h"
#include "vdso_sym.h"
#include "pipe_io.h"

#ifndef CLOCK_REALTIME_ALARM
# define CLOCK_REALTIME_ALARM	8
#endif
#ifndef CLOCK_BOOTTIME_ALARM
# define CLOCK_BOOTTIME_ALARM	9
#endif

typedef long long i64;

#include <netinet/in.h>
#ifndef IPPROTO_SMC
#define IPPROTO_SMC	256	/* SMC sockets over AF_INET (glibc < 2.41) */
#endif

#define NSEC_PER_SEC	1000000000LL
#define NSEC_PER_MSEC	1000000LL
#define NSEC_PER_USEC	1000LL

static struct vdso_fns vdso;

static inline i64 ts_ns(const struct timespec *t)
{
	return (i64)t->tv_sec * NSEC_PER_SEC + t->tv_nsec;
}

/* A reading of the root namespace ("host") clock @c by the test process. */
static inline i64 host_ns(clockid_t c)
{
	struct timespec t;

	if (clock_gettime(c, &t))
		ksft_exit_fail_msg("clock_gettime(%d): %s\n", (int)c, strerror(errno));
	return ts_ns(&t);
}

static inline i64 host_res_ns(clockid_t c)
{
	struct timespec t;

	if (syscall(SYS_clock_getres, c, &t))
		return -errno;
	return ts_ns(&t);
}

static inline void sleep_ns(i64 ns)
{
	struct timespec t = { ns / NSEC_PER_SEC, ns % NSEC_PER_SEC };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* Sleep until this namespace's CLOCK_MONOTONIC reads @t (at once if it has). */
static inline void sleep_until(i64 t)
{
	struct timespec ts = { t / NSEC_PER_SEC, t % NSEC_PER_SEC };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Sleep until the host's CLOCK_MONOTONIC reads @t (at once if it has). */
static inline void sleep_host_until(i64 t)
{
	i64 now = host_ns(CLOCK_MONOTONIC);

	if (t > now)
		sleep_ns(t - now);
}

/* ------------------------------------------------------------------ */
/* Clocks                                                              */

struct clk {
	clockid_t id;
	const char *name;
	clockid_t host;		/* root-namespace clock to bracket readings with */
	int coarse;		/* tick granularity */
	int vdso;		/* served by the vDSO (not the alarm clocks) */
	int offset;		/* 0: none, 1: monotonic offset, 2: boottime offset */
};

static const struct clk clocks[] = {
	{ CLOCK_REALTIME,	  "CLOCK_REALTIME",	    CLOCK_REALTIME,	    0, 1, 0 },
	{ CLOCK_REALTIME_COARSE,  "CLOCK_REALTIME_COARSE",  CLOCK_REALTIME_COARSE,  1, 1, 0 },
	{ CLOCK_MONOTONIC,	  "CLOCK_MONOTONIC",	    CLOCK_MONOTONIC,	    0, 1, 1 },
	{ CLOCK_MONOTONIC_COARSE, "CLOCK_MONOTONIC_COARSE", CLOCK_MONOTONIC_COARSE, 1, 1, 1 },
	{ CLOCK_MONOTONIC_RAW,	  "CLOCK_MONOTONIC_RAW",    CLOCK_MONOTONIC_RAW,    0, 1, 1 },
	{ CLOCK_BOOTTIME,	  "CLOCK_BOOTTIME",	    CLOCK_BOOTTIME,	    0, 1, 2 },
	{ CLOCK_TAI,		  "CLOCK_TAI",		    CLOCK_TAI,		    0, 1, 0 },
	{ CLOCK_REALTIME_ALARM,	  "CLOCK_REALTIME_ALARM",   CLOCK_REALTIME,	    0, 0, 0 },
	{ CLOCK_BOOTTIME_ALARM,	  "CLOCK_BOOTTIME_ALARM",   CLOCK_BOOTTIME,	    0, 0, 2 },
};
#define NCLOCKS		((int)ARRAY_SIZE(clocks))
#define NVDSO_CLOCKS	7	/* clocks[0..6] are the vDSO clocks */

/*
 * The alarm clocks need an RTC registered with the alarmtimer; without one
 * clock_gettime() returns EINVAL.  Reading them needs no CAP_WAKE_ALARM (that
 * is only checked for timer_create()/timerfd_create()).
 */
static inline int clock_readable(int i)
{
	struct timespec t;

	return syscall(SYS_clock_gettime, clocks[i].id, &t) == 0;
}

/* Kernel tick: the resolution of the coarse clocks. */
static inline i64 tick_ns(void)
{
	i64 r = host_res_ns(CLOCK_MONOTONIC_COARSE);

	return r > 0 ? r : 10 * NSEC_PER_MSEC;
}

/* ------------------------------------------------------------------ */
/* TDFs                                                                */

struct tdf {
	const char *str;	/* what is written */
	i64 n, d;		/* TDF = n / d */
	const char *readback;	/* expected read, without the newline */
};

/* rate of the namespace clocks relative to the host: 1/TDF = d/n */
static inline long double tdf_rate(i64 n, i64 d)
{
	return (long double)d / (long double)n;
}

/* ------------------------------------------------------------------ */
/* Names (reading and writing the files: timens_dilation_util.h)       */

/* "a\nb" -> "a\\nb", for test names and diagnostics. */
static inline const char *esc(const char *s, char *buf, size_t sz)
{
	size_t o = 0;

	for (; *s && o + 5 < sz; s++) {
		if (*s == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else if ((unsigned char)*s < 0x20 || *s == '#') {
			o += snprintf(buf + o, sz - o, "\\x%02x", (unsigned char)*s);
		} else {
			buf[o++] = *s;
		}
	}
	buf[o] = '\0';
	return buf;
}

static inline ino_t ns_inode(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	return st.st_ino;
}

static inline void print_clocksource(void)
{
	char buf[64] = "?";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			strcpy(buf, "?");
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	ksft_print_msg("clocksource: %s, tick (coarse resolution): %lld ns, %ld CPUs\n",
		       buf, tick_ns(), sysconf(_SC_NPROCESSORS_ONLN));
}

/*
 * The start of a test of the namespace's clocks through the vDSO: TAP
 * header; skip without dilation, root or a vDSO clock_gettime.
 */
static inline void start_vdso_test(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_dilation();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	vdso_init(&vdso);
	if (!vdso.clock_gettime)
		ksft_exit_skip("no vDSO clock_gettime found\n");
	print_clocksource();
}

/* ------------------------------------------------------------------ */
/* Is the vDSO really answering in user space?                         */

/*
 * A throwaway child installs a seccomp filter that makes the time system
 * calls fail with a distinctive errno, then calls the vDSO entry points.  A
 * vDSO that falls back to the system call (clocksource without vDSO support,
 * or an implementation that punts dilated namespaces to the kernel) returns
 * -VDSO_PROBE_ERRNO.  Bits: 0..6 clocks[i] via clock_gettime, 8 gettimeofday,
 * 9 time, 16..22 clocks[i] via clock_getres.  -1 if seccomp is unavailable.
 */
#define VDSO_PROBE_ERRNO	4000
#define PROBE_GTOD		(1 << 8)
#define PROBE_TIME		(1 << 9)
#define PROBE_GETRES(i)		(1 << (16 + (i)))

#if defined(__x86_64__)
# define PROBE_AUDIT_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
# define PROBE_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#endif

static inline int vdso_probe_child(void)
{
#ifdef PROBE_AUDIT_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_getres, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_gettimeofday, 2, 0),
#ifdef __NR_time
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_time, 1, 0),
#else
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_gettimeofday, 1, 0),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | VDSO_PROBE_ERRNO),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(f), .filter = f };
	struct timespec ts;
	struct timeval tv;
	int i, mask = 0;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	for (i = 0; i < NVDSO_CLOCKS; i++) {
		if (vdso.clock_gettime && vdso.clock_gettime(clocks[i].id, &ts) == 0)
			mask |= 1 << i;
		if (vdso.clock_getres && vdso.clock_getres(clocks[i].id, &ts) == 0)
			mask |= PROBE_GETRES(i);
	}
	if (vdso.gettimeofday && vdso.gettimeofday(&tv, NULL) == 0)
		mask |= PROBE_GTOD;
	if (vdso.time && vdso.time(NULL) > 0)
		mask |= PROBE_TIME;
	return mask;
#else
	return -1;
#endif
}

static inline int vdso_userspace_mask(void)
{
	int p[2], mask = -1, st;
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		mask = vdso_probe_child();
		if (write(p[1], &mask, sizeof(mask)) != sizeof(mask))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &mask, sizeof(mask)) != sizeof(mask))
		mask = -1;
	close(p[0]);
	waitpid(pid, &st, 0);
	return mask;
}

static inline void mask_names(int mask, char *buf, size_t sz)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < NVDSO_CLOCKS; i++)
		if (mask & (1 << i))
			o += snprintf(buf + o, o < sz ? sz - o : 0, "%s%s", o ? "," : "", clocks[i].name + 6);
	if (mask & PROBE_GTOD)
		o += snprintf(buf + o, o < sz ? sz - o : 0, "%sgettimeofday", o ? "," : "");
	if (mask & PROBE_TIME)
		o += snprintf(buf + o, o < sz ? sz - o : 0, "%stime", o ? "," : "");
	for (i = 0; i < NVDSO_CLOCKS; i++)
		if (mask & PROBE_GETRES(i))
			o += snprintf(buf + o, o < sz ? sz - o : 0, "%sres:%s", o ? "," : "", clocks[i].name + 6);
	if (!o)
		snprintf(buf, sz, "(none)");
}

/* ------------------------------------------------------------------ */
/* The server child, inside the namespace under test                  */

enum {
	OP_CG_VDSO = 1,		/* arg: clock index; v0 = ns */
	OP_CG_SYS,
	OP_GTOD_VDSO,		/* v0 = tv in ns (usec granularity) */
	OP_GTOD_SYS,
	OP_TIME_VDSO,		/* v0 = REALTIME_COARSE, v1 = time() in ns, v2 = REALTIME */
	OP_TIME_SYS,
	OP_UPTIME,		/* v0 = uptime ns, v1 = idle ns, v2/v3 = BOOTTIME before/after */
	OP_SYSINFO,		/* v0 = sysinfo.uptime in ns, v2/v3 = BOOTTIME before/after */
	OP_STARTTIME,		/* v0 = BOOTTIME before fork, v1 = stat field 22, v2 = BOOTTIME after, v3 = CLK_TCK */
	OP_GETRES_VDSO,		/* arg: clock index; v0 = res ns */
	OP_GETRES_SYS,
	OP_VDSO_PROBE,		/* v0 = vdso_userspace_mask() */
	OP_CPUTIME,		/* arg: ms of thread CPU time to burn; v0 = thread cpu delta, v1 = process cpu delta */
	OP_READ_DIL,		/* s = /proc/self/timens_dilation */
	OP_NS_INODE,		/* v0 = inode of /proc/self/ns/time */
	OP_EXT = 100,		/* handed to srv_ext */
};

struct req {
	int op;
	int arg;
};

struct resp {
	int err;		/* errno of the operation, 0 if fine */
	int pad;
	i64 v[4];
	char s[48];
};

struct srv {
	pid_t pid;
	int wfd, rfd;
};

/* optional handler for OP_EXT.. requests (runs in the server child) */
static void (*srv_ext)(const struct req *rq, struct resp *rs);

static inline int sys_cg(clockid_t c, i64 *v)
{
	struct timespec t;

	if (syscall(SYS_clock_gettime, c, &t))
		return errno;
	*v = ts_ns(&t);
	return 0;
}

static inline int vdso_cg(clockid_t c, i64 *v)
{
	struct timespec t;
	int ret;

	if (!vdso.clock_gettime)
		return ENOSYS;
	ret = vdso.clock_gettime(c, &t);
	if (ret)
		return ret < 0 ? -ret : ret;
	*v = ts_ns(&t);
	return 0;
}

static inline int read_uptime(i64 *up, i64 *idle)
{
	unsigned long us, uc, is, ic;
	char buf[128];
	int fd, n;

	fd = open("/proc/uptime", O_RDONLY);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%lu.%2lu %lu.%2lu", &us, &uc, &is, &ic) != 4)
		return EINVAL;
	*up = (i64)us * NSEC_PER_SEC + (i64)uc * 10 * NSEC_PER_MSEC;
	*idle = (i64)is * NSEC_PER_SEC + (i64)ic * 10 * NSEC_PER_MSEC;
	return 0;
}

static inline int read_stat_starttime(pid_t pid, i64 *ticks)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	int fd, n, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');		/* comm may contain spaces */
	if (!p)
		return EINVAL;
	p++;
	/* after ")" come fields 3, 4, ...: skip to field 22 */
	for (i = 3; i <= 22; i++) {
		while (*p == ' ')
			p++;
		if (i == 22)
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (sscanf(p, "%llu", &v) != 1)
		return EINVAL;
	*ticks = (i64)v;
	return 0;
}

static inline void srv_do(const struct req *rq, struct resp *rs)
{
	struct timespec ts;
	struct timeval tv;
	struct sysinfo si = { 0 };
	int i = rq->arg, ret, p[2];
	char c;
	pid_t pid;

	memset(rs, 0, sizeof(*rs));
	switch (rq->op) {
	case OP_CG_VDSO:
		rs->err = vdso_cg(clocks[i].id, &rs->v[0]);
		break;
	case OP_CG_SYS:
		rs->err = sys_cg(clocks[i].id, &rs->v[0]);
		break;
	case OP_GTOD_VDSO:
	case OP_GTOD_SYS:
		if (rq->op == OP_GTOD_VDSO) {
			if (!vdso.gettimeofday) {
				rs->err = ENOSYS;
				break;
			}
			ret = vdso.gettimeofday(&tv, NULL);
			rs->err = ret < 0 ? -ret : ret;
		} else {
			ret = syscall(SYS_gettimeofday, &tv, NULL);
			rs->err = ret ? errno : 0;
		}
		rs->v[0] = (i64)tv.tv_sec * NSEC_PER_SEC + (i64)tv.tv_usec * NSEC_PER_USEC;
		break;
	case OP_TIME_VDSO:
	case OP_TIME_SYS:
		rs->err = sys_cg(CLOCK_REALTIME_COARSE, &rs->v[0]);
		if (rs->err)
			break;
		if (rq->op == OP_TIME_VDSO) {
			if (!vdso.time) {
				rs->err = ENOSYS;
				break;
			}
			rs->v[1] = (i64)vdso.time(NULL) * NSEC_PER_SEC;
		} else {
#ifdef SYS_time
			rs->v[1] = (i64)syscall(SYS_time, NULL) * NSEC_PER_SEC;
#else
			rs->err = ENOSYS;
			break;
#endif
		}
		rs->err = sys_cg(CLOCK_REALTIME, &rs->v[2]);
		break;
	case OP_UPTIME:
		rs->err = sys_cg(CLOCK_BOOTTIME, &rs->v[2]);
		if (!rs->err)
			rs->err = read_uptime(&rs->v[0], &rs->v[1]);
		if (!rs->err)
			rs->err = sys_cg(CLOCK_BOOTTIME, &rs->v[3]);
		break;
	case OP_SYSINFO:
		rs->err = sys_cg(CLOCK_BOOTTIME, &rs->v[2]);
		if (!rs->err && sysinfo(&si))
			rs->err = errno;
		rs->v[0] = (i64)si.uptime * NSEC_PER_SEC;
		if (!rs->err)
			rs->err = sys_cg(CLOCK_BOOTTIME, &rs->v[3]);
		break;
	case OP_STARTTIME:
		if (pipe(p)) {
			rs->err = errno;
			break;
		}
		sys_cg(CLOCK_BOOTTIME, &rs->v[0]);
		pid = fork();
		if (pid == 0) {
			close(p[1]);
			if (read(p[0], &c, 1) < 0)
				_exit(1);
			_exit(0);
		}
		sys_cg(CLOCK_BOOTTIME, &rs->v[2]);
		close(p[0]);
		if (pid < 0) {
			rs->err = errno;
			close(p[1]);
			break;
		}
		rs->err = read_stat_starttime(pid, &rs->v[1]);
		rs->v[3] = sysconf(_SC_CLK_TCK);
		close(p[1]);
		waitpid(pid, NULL, 0);
		break;
	case OP_GETRES_VDSO:
		if (!vdso.clock_getres) {
			rs->err = ENOSYS;
			break;
		}
		ret = vdso.clock_getres(clocks[i].id, &ts);
		rs->err = ret < 0 ? -ret : ret;
		rs->v[0] = ts_ns(&ts);
		break;
	case OP_GETRES_SYS:
		if (syscall(SYS_clock_getres, clocks[i].id, &ts))
			rs->err = errno;
		rs->v[0] = ts_ns(&ts);
		break;
	case OP_VDSO_PROBE:
		rs->v[0] = vdso_userspace_mask();
		break;
	case OP_CPUTIME: {
		i64 t0 = 0, t = 0, p0 = 0, p1 = 0;

		rs->err = sys_cg(CLOCK_THREAD_CPUTIME_ID, &t0);
		if (!rs->err)
			rs->err = sys_cg(CLOCK_PROCESS_CPUTIME_ID, &p0);
		while (!rs->err && t - t0 < (i64)i * NSEC_PER_MSEC)
			rs->err = sys_cg(CLOCK_THREAD_CPUTIME_ID, &t);
		if (!rs->err)
			rs->err = sys_cg(CLOCK_PROCESS_CPUTIME_ID, &p1);
		rs->v[0] = t - t0;
		rs->v[1] = p1 - p0;
		break;
	}
	case OP_READ_DIL:
		ret = dil_read(DIL_SELF, rs->s, sizeof(rs->s));
		rs->err = ret < 0 ? -ret : 0;
		break;
	case OP_NS_INODE:
		rs->v[0] = ns_inode("/proc/self/ns/time");
		break;
	default:
		if (rq->op >= OP_EXT && srv_ext)
			srv_ext(rq, rs);
		else
			rs->err = EINVAL;
	}
}

/* The server loop, in the child: answer requests until the parent's end closes. */
static inline __attribute__((noreturn)) void srv_serve(int rfd, int wfd)
{
	struct req rq;
	struct resp rs;

	while (read_full(rfd, &rq, sizeof(rq)) == 0) {
		srv_do(&rq, &rs);
		if (write(wfd, &rs, sizeof(rs)) != sizeof(rs))
			_exit(1);
	}
	_exit(0);
}

/* Fork the server; it lands in the parent's time_for_children namespace. */
static inline int srv_start(struct srv *s)
{
	int rfd, wfd;

	s->pid = fork_piped(&rfd, &wfd);
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		srv_serve(rfd, wfd);
	}
	s->rfd = rfd;
	s->wfd = wfd;
	return 0;
}

static inline void srv_stop(struct srv *s)
{
	if (s->pid <= 0)
		return;
	close(s->wfd);
	close(s->rfd);
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

/* One request; timeout_ms < 0: wait forever.  0 or -1 (server gone/timeout). */
static inline int srv_call_timeout(struct srv *s, int op, int arg, struct resp *rs, int timeout_ms)
{
	struct req rq = { op, arg };
	struct pollfd pfd = { s->rfd, POLLIN, 0 };

	if (s->pid <= 0)
		return -1;
	if (write(s->wfd, &rq, sizeof(rq)) != sizeof(rq))
		return -1;
	if (timeout_ms >= 0 && poll(&pfd, 1, timeout_ms) != 1)
		return -1;
	return read_full(s->rfd, rs, sizeof(*rs));
}

static inline int srv_call(struct srv *s, int op, int arg, struct resp *rs)
{
	return srv_call_timeout(s, op, arg, rs, -1);
}

/*
 * A reading bracketed by host readings of @hclk; the narrowest of @tries.
 * Returns 0, or -1 if the server is gone.
 */
static inline int srv_bracket(struct srv *s, int op, int arg, clockid_t hclk, int tries,
			      i64 *h0, i64 *h1, struct resp *rs)
{
	struct resp r;
	i64 a, b;
	int k;

	*h0 = 0;
	*h1 = LLONG_MAX;
	for (k = 0; k < tries; k++) {
		a = host_ns(hclk);
		if (srv_call(s, op, arg, &r))
			return -1;
		b = host_ns(hclk);
		if (k == 0 || b - a < *h1 - *h0) {
			*h0 = a;
			*h1 = b;
			*rs = r;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Bracketed rate check                                                */

/*
 * A reading of some namespace clock taken at two instants A and B, each
 * bracketed by host readings.  slack: bound on |reading - ideal value of the
 * namespace clock| (granularity of the interface, 1 ns of rounding).
 */
struct sample2 {
	i64 vA, vB;
	i64 h0A, h1A, h0B, h1B;
	i64 slack;
};

struct rate_out {
	long double meas;	/* measured rate, child delta / host delta (midpoint) */
	long double expect;
	long double unc;	/* relative half-width of what the data allows */
	int ok;
};

/* eps: relative rate error the kernel is allowed (the spec asks < 1 ppm) */
#define RATE_EPS	2e-6L

static inline struct rate_out rate_check(const struct sample2 *s, long double expect)
{
	struct rate_out o;
	long double dc = (long double)(s->vB - s->vA);
	long double dmin = (long double)(s->h0B - s->h1A);
	long double dmax = (long double)(s->h1B - s->h0A);
	long double dmid = (dmin + dmax) / 2;
	long double sl = 2.0L * s->slack;

	o.expect = expect;
	o.meas = dmid > 0 ? dc / dmid : 0;
	o.unc = dmid > 0 ? (dmax - dmin) / 2 / dmid + (expect > 0 ? sl / (expect * dmid) : 0) : 1;
	o.ok = dmin > 0 &&
	       dc - sl <= expect * dmax * (1 + RATE_EPS) &&
	       dc + sl >= expect * dmin * (1 - RATE_EPS);
	return o;
}

/*
 * Can the check tell the TDF under test from twice and from half of it?
 * rate_check() accepts a child delta dc iff
 *	expect * dmin * (1 - eps) - sl <= dc <= expect * dmax * (1 + eps) + sl
 * (sl = 2 * slack).  A kernel applying 2 * TDF advances 1/2 as fast: its
 * true delta is at most expect/2 * dmax and its reading at most sl above
 * that; one applying TDF/2 reads at least 2 * expect * dmin - sl.  Both are
 * rejected, whatever the noise inside the bracket, iff
 *	expect/2 * dmax + 2 sl < expect * dmin * (1 - eps)	and
 *	2 * expect * dmin - 2 sl > expect * dmax * (1 + eps),
 * roughly 2 dmin - dmax > 4 sl / expect: the bracket may be at most about
 * twice as wide as it is long.  (unc <= WEAK_UNC implies both.)
 */
static inline int rate_resolves(const struct sample2 *s, long double expect)
{
	long double dmin = (long double)(s->h0B - s->h1A);
	long double dmax = (long double)(s->h1B - s->h0A);
	long double sl = 2.0L * s->slack;

	return dmin > 0 &&
	       expect / 2 * dmax + 2 * sl < expect * dmin * (1 - RATE_EPS) &&
	       2 * expect * dmin - 2 * sl > expect * dmax * (1 + RATE_EPS);
}

/*
 * Scheduling noise (TCG, shared host CPUs) can widen a bracket; it does not
 * repeat, while a wrong rate does.  A measurement whose bracket is wider than
 * +-WEAK_UNC is taken again (both snapshots), up to RATE_ROUNDS times in all,
 * and the narrowest bracket is kept.  The bounds are never widened: every
 * round must be within them (a correct kernel cannot fail one, so a round
 * out of bounds is final), and the narrowest bracket must still reject
 * TDF x2 and /2 (rate_resolves()), or the point fails.
 */
#define WEAK_UNC	0.25L			/* wider: the snapshots are re-taken */
#define RATE_ROUNDS	5			/* at most, narrowest bracket kept */

/* the rounds of one such measurement */
struct rate_acc {
	struct sample2 best;	/* narrowest bracket so far */
	struct rate_out bo;	/* its check */
	int rounds;		/* rounds taken */
	int out;		/* rounds out of bounds */
};

static inline void rate_acc_add(struct rate_acc *a, const struct sample2 *s, long double expect)
{
	struct rate_out o = rate_check(s, expect);

	if (!o.ok)
		a->out++;
	if (!a->rounds || o.unc < a->bo.unc) {
		a->best = *s;
		a->bo = o;
	}
	a->rounds++;
}

/* no further round needed: out of bounds once (final), or tight */
static inline int rate_acc_settled(const struct rate_acc *a)
{
	return a->rounds && (a->out || a->bo.unc <= WEAK_UNC);
}

/* every round within the bounds, and the narrowest bracket resolves the TDF */
static inline int rate_acc_ok(const struct rate_acc *a)
{
	return a->rounds && !a->out && rate_resolves(&a->best, a->bo.expect);
}

/* " (narrowest of N rounds)", "  <== OUT OF BOUNDS ...", "  <== FAIL: ..." */
static inline const char *rate_acc_note(const struct rate_acc *a, char *buf, size_t sz)
{
	int o = 0;

	buf[0] = '\0';
	if (a->rounds > 1)
		o += snprintf(buf + o, sz - o, " (narrowest of %d rounds)", a->rounds);
	if (a->out)
		snprintf(buf + o, sz - o, "  <== OUT OF BOUNDS in %d of %d rounds", a->out, a->rounds);
	else if (!rate_resolves(&a->best, a->bo.expect))
		snprintf(buf + o, sz - o, "  <== FAIL: bracket too wide after %d rounds to tell the TDF from twice or half of it",
			 a->rounds);
	return buf;
}

/*
 * One clock reading op(arg), value v[vi], of the server, as a rate
 * measurement against the host clock @host.
 */
struct rate_item {
	int op, arg, vi;
	clockid_t host;
	i64 slack;
	long double expect;	/* rate, 1/TDF */
	struct rate_acc acc;
	int err;		/* errno of a failed reading, -1: server gone */
	struct resp r[2];	/* the readings of the last round */
	i64 h0[2], h1[2];
};

static inline int rate_item_settled(const struct rate_item *x)
{
	return x->err || rate_acc_settled(&x->acc);
}

/*
 * Up to @rounds rounds of the items not settled yet: snapshot A of each,
 * @interval_ns of host time, snapshot B of each (every reading the
 * narrowest of @tries exchanges).  Returns the rounds taken.
 */
static inline int rate_rounds(struct srv *s, struct rate_item *it, int n, int rounds, int tries,
			      i64 interval_ns, const char *what)
{
	char act[n];
	int round, k, j, pending, again;

	for (round = 0; round < rounds; round++) {
		for (pending = again = 0, k = 0; k < n; k++) {
			act[k] = !rate_item_settled(&it[k]);
			pending += act[k];
			again += act[k] && it[k].acc.rounds;
		}
		if (!pending)
			break;
		if (again)
			ksft_print_msg("%s: %d bracket(s) wider than +-%.0Lf%%, measuring again\n",
				       what, again, WEAK_UNC * 100);
		for (j = 0; j < 2; j++) {
			if (j)
				sleep_ns(interval_ns);
			for (k = 0; k < n; k++) {
				struct rate_item *x = &it[k];

				if (!act[k] || x->err)
					continue;
				if (srv_bracket(s, x->op, x->arg, x->host, tries, &x->h0[j], &x->h1[j],
						&x->r[j]))
					x->err = -1;
				else if (x->r[j].err)
					x->err = x->r[j].err;
			}
		}
		for (k = 0; k < n; k++) {
			struct rate_item *x = &it[k];
			struct sample2 sm = {
				x->r[0].v[x->vi], x->r[1].v[x->vi],
				x->h0[0], x->h1[0], x->h0[1], x->h1[1], x->slack
			};

			if (act[k] && !x->err)
				rate_acc_add(&x->acc, &sm, x->expect);
		}
	}
	return round;
}

/* ------------------------------------------------------------------ */
/* TAP helpers                                                         */

/*
 * A skipped point with its name before the directive, "ok N NAME # SKIP WHY"
 * (ksft_test_result_skip() prints "ok N # SKIP ...", with no name, which
 * some TAP consumers do not read as a skip).
 */
static inline __printf(2, 3) void skip_point(const char *why, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	name[strcspn(name, "\n")] = '\0';
	ksft_test_result_code(KSFT_SKIP, name, "%s", why);
}

/* Report the remaining @n planned points as failed (setup broke). */
static inline void fail_points(int n, const char *why)
{
	while (n-- > 0)
		ksft_test_result_fail("%s\n", why);
}

#endif
