// SPDX-License-Identifier: GPL-2.0
/*
 * The timeout of IORING_REGISTER_SYNC_CANCEL is a duration the task gives
 * in its own time (issue 14, defect 5; a reviewer's finding on the
 * io_uring patch): a synchronous cancellation of a request that an io-wq
 * worker is running waits for the request to finish, at most that long,
 * and then fails with ETIME. The request here is a write that blocks,
 * whatever signal the cancellation sends its worker, on a frozen ext4
 * file system (a loop device on a private tmpfs): a child of a dilated
 * namespace submits it, waits until its worker sleeps in the freeze, and
 * cancels it with a timeout:
 *
 *  - at TDF 10, 30 ms: ETIME after 30 ms of the namespace, 300 ms of host
 *    time (a kernel that does not dilate the timeout: 3 ms and 30 ms;
 *    twice the factor: 60 ms and 600 ms);
 *  - at TDF 1/10, 1 s: ETIME after 1 s of the namespace, 100 ms of host
 *    time (undilated: 10 s; twice the factor: 2 s);
 *  - at TDF 1, 100 ms, with the parent raising the factor to 10 at host
 *    +40 ms: ETIME after 100 ms of the namespace, 40 + 60 x 10 = 640 ms of
 *    host time (a timeout converted once, where the wait starts: 46 ms of
 *    the namespace, 100 ms of host time);
 *  - at TDF 10, -1 s: ETIME at once, as before the series, not a sleep
 *    until a signal (a reviewer's finding: the saturating addition took a
 *    negative timeout for one beyond KTIME_MAX).
 *
 * The same holds for io_uring_enter()'s wait with a timeout of -1 s, in
 * the initial time namespace and at TDF 10: -ETIME at once. A wait that
 * does not end in time is stopped by an alarm (EINTR): after twice its
 * timeout, at least 200 ms more, of the caller's time.
 *
 * The namespace's time must be in [timeout, timeout + late], late being a
 * TCG guest's stall: 15 ms of the namespace, 150 ms at TDF 1/10 (15 ms of
 * host time); there the namespace's bound is what rejects twice and half
 * the factor (2 s, 500 ms). The host time must be within -50/+150 ms of
 * what the factors predict, from the parent's stamp after it woke to the
 * child's start; across the change -150 ms: the child's time runs at TDF 1
 * for as long as the parent takes to wake before its stamp, which the
 * factor 10 after the change makes ten times shorter in host time (a
 * 7 ms late wake-up has been seen; half the factor ends 300 ms early,
 * twice 600 ms late).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include "dilation.h"
#include "uring_raw.h"

#define MNT		"/mnt"			/* a tmpfs of this test's mount namespace */
#define IMG		MNT "/img"
#define FS		MNT "/fs"
#define IMG_BYTES	(8 << 20)
#define CHANGE_NS	(40 * NSEC_PER_MSEC)	/* host time of the change, 1 -> 10 */
#define HOST_EARLY_NS	(50 * NSEC_PER_MSEC)
#define CHANGE_EARLY_NS	(150 * NSEC_PER_MSEC)	/* see the top */
#define HOST_SLACK_NS	(150 * NSEC_PER_MSEC)
#define WRITE_TAG	7
#define ALARM_NS	(200 * NSEC_PER_MSEC)	/* see child_case() */

struct sync_case {
	const char *name;
	const char *tdf;	/* the factor the child starts at */
	i64 num, den;		/* ... as a fraction */
	i64 timeout_ns;		/* of the namespace */
	i64 late_ns;		/* of the namespace: a TCG guest's stall */
	int change;		/* the parent writes 10 at host +CHANGE_NS */
};

static const struct sync_case cases[] = {
	{ "TDF 10, a 30 ms timeout", "10", 10, 1, 30 * NSEC_PER_MSEC, 15 * NSEC_PER_MSEC, 0 },
	{ "TDF 1/10, a 1 s timeout", "1/10", 1, 10, NSEC_PER_SEC, 150 * NSEC_PER_MSEC, 0 },
	{ "TDF 1 -> 10 at host +40 ms, a 100 ms timeout", "1", 1, 1, 100 * NSEC_PER_MSEC,
	  15 * NSEC_PER_MSEC, 1 },
	{ "TDF 10, a timeout of -1 s", "10", 10, 1, -NSEC_PER_SEC, 15 * NSEC_PER_MSEC, 0 },
};

struct result {
	int step;	/* the child's step that failed, 0 if none */
	int ret;	/* io_uring_register()'s result, -errno */
	i64 elapsed;	/* namespace ns of the cancellation */
};

static int fs_fd = -1, file_fd = -1, frozen;

/* only interrupts the wait */
static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * A failing test must not leave a child in the freeze for ever. EINVAL:
 * a child that failed thawed it (child_exit()). Also an atexit() handler:
 * it prints, it does not exit.
 */
static void thaw(void)
{
	if (frozen && ioctl(fs_fd, FITHAW, 0) && errno != EINVAL)
		ksft_print_msg("FITHAW: %s\n", strerror(errno));
	frozen = 0;
}

/*
 * The child's way out while its write may still sleep in the freeze: its
 * exit waits for its io-wq worker, and the parent may be waiting for it
 */
static __attribute__((noreturn)) void child_exit(int code)
{
	ioctl(fs_fd, FITHAW, 0);
	_exit(code);
}

/* a wait that does not end in time ends with EINTR, after @ns of the caller's time */
static void arm_alarm(i64 ns)
{
	struct itimerval it = { .it_value = { ns / NSEC_PER_SEC, ns % NSEC_PER_SEC / 1000 } };
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_alarm(void)
{
	struct itimerval it = { 0 };

	setitimer(ITIMER_REAL, &it, NULL);
}

/* a frozen-able ext4 on a loop device, in a tmpfs this mount namespace alone sees */
static void setup_fs(void)
{
	struct loop_config lc = { .info.lo_flags = LO_FLAGS_AUTOCLEAR };
	char dev[32];
	int ctl, nr, img, loop;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", MNT, "tmpfs", 0, "size=16m"))
		ksft_exit_fail_msg("a private tmpfs on " MNT ": %s\n", strerror(errno));
	img = open(IMG, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (img < 0 || ftruncate(img, IMG_BYTES) || mkdir(FS, 0700))
		ksft_exit_fail_msg("the image file: %s\n", strerror(errno));
	if (system("PATH=/usr/sbin:/sbin:$PATH mkfs.ext4 -q -F " IMG " >/dev/null"))
		ksft_exit_fail_msg("mkfs.ext4 " IMG " failed (e2fsprogs)\n");
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	nr = ctl < 0 ? -1 : ioctl(ctl, LOOP_CTL_GET_FREE);
	if (nr < 0)
		ksft_exit_fail_msg("a free loop device: %s\n", strerror(errno));
	snprintf(dev, sizeof(dev), "/dev/loop%d", nr);
	loop = open(dev, O_RDWR | O_CLOEXEC);
	lc.fd = img;
	if (loop < 0 || ioctl(loop, LOOP_CONFIGURE, &lc))
		ksft_exit_fail_msg("%s on " IMG ": %s\n", dev, strerror(errno));
	if (mount(dev, FS, "ext4", 0, NULL))
		ksft_exit_fail_msg("mounting %s: %s\n", dev, strerror(errno));
	/* the loop device goes with the last reference: the mount's */
	close(loop);
	close(img);
	close(ctl);
	fs_fd = open(FS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	atexit(thaw);
	file_fd = open(FS "/f", O_RDWR | O_CREAT, 0600);
	if (fs_fd < 0 || file_fd < 0)
		ksft_exit_fail_msg("opening " FS "/f: %s\n", strerror(errno));
}

static void teardown_fs(void)
{
	close(file_fd);
	close(fs_fd);
	if (umount2(FS, 0) || umount2(MNT, 0))
		ksft_print_msg("unmounting: %s\n", strerror(errno));
}

/* 1 once an io-wq worker of this process sleeps uninterruptibly (in the freeze) */
static int worker_blocked(void)
{
	struct dirent *de;
	char path[sizeof(de->d_name) + 32], buf[256], *p;
	int fd, n, found = 0;
	DIR *d = opendir("/proc/self/task");

	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		p = strrchr(buf, ')');
		found = strstr(buf, "(iou-wrk-") && p && p[1] == ' ' && p[2] == 'D';
	}
	if (d)
		closedir(d);
	return found;
}

/* in the namespace: a write that blocks in io-wq, then its cancellation with a timeout */
static struct result child_case(const struct sync_case *c, int wfd, int rfd)
{
	static char data[4096];
	struct io_uring_sync_cancel_reg reg = {
		.addr = WRITE_TAG,
		.timeout = { c->timeout_ns / NSEC_PER_SEC, c->timeout_ns % NSEC_PER_SEC },
	};
	/* twice the timeout, at least 200 ms more: what ends a wait that does not */
	i64 stop = c->timeout_ns < 0 ? ALARM_NS :
		   c->timeout_ns > ALARM_NS ? 2 * c->timeout_ns : c->timeout_ns + ALARM_NS;
	struct result r = { 0 };
	struct ring ur = { .fd = -1 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe cqe;
	struct timespec t0, t1, nap = { 0, NSEC_PER_MSEC };
	int i;

	if (ring_setup(&ur)) {
		r.step = 1;
		return r;
	}
	sqe = get_sqe(&ur);
	sqe->opcode = IORING_OP_WRITE;
	sqe->fd = file_fd;
	sqe->addr = (uintptr_t)data;
	sqe->len = sizeof(data);
	sqe->flags = IOSQE_ASYNC;	/* to io-wq, which blocks without IOCB_NOWAIT */
	sqe->user_data = WRITE_TAG;
	if (enter(&ur, 1, 0, 0, NULL, 0) != 1) {
		r.step = 2;
		return r;
	}
	/* running, not queued: a queued request is cancelled at once */
	for (i = 0; !worker_blocked(); i++) {
		if (i == 500) {
			r.step = 3;
			return r;
		}
		nanosleep(&nap, NULL);
	}
	if (write(wfd, "G", 1) != 1) {
		r.step = 4;
		return r;
	}
	arm_alarm(stop);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r.ret = syscall(__NR_io_uring_register, ur.fd, IORING_REGISTER_SYNC_CANCEL, &reg, 1);
	if (r.ret < 0)
		r.ret = -errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	disarm_alarm();
	r.elapsed = ts_ns(&t1) - ts_ns(&t0);
	if (write(rfd, &r, sizeof(r)) != sizeof(r))
		child_exit(8);
	/* the parent thaws the file system: the write completes before the ring goes */
	if (wait_cqes(&ur, &cqe, 1) != 1)
		child_exit(9);
	_exit(cqe.user_data == WRITE_TAG ? 0 : 10);
}

/* io_uring_enter() waiting for a completion with a timeout of -1 s: -errno */
static int enter_negative(i64 *elapsed)
{
	static const struct __kernel_timespec neg = { -1, 0 };
	struct io_uring_getevents_arg ga = { .sigmask_sz = _NSIG / 8, .ts = (uintptr_t)&neg };
	struct ring ur = { .fd = -1 };
	struct timespec t0, t1;
	int ret;

	if (ring_setup(&ur))
		return -ENOMEM;
	arm_alarm(ALARM_NS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* not enter(): it would retry after the alarm's EINTR */
	ret = syscall(__NR_io_uring_enter, ur.fd, 0, 1,
		      IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof(ga));
	if (ret < 0)
		ret = -errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	disarm_alarm();
	close(ur.fd);
	*elapsed = ts_ns(&t1) - ts_ns(&t0);
	return ret;
}

static void enter_negative_case(int dilated)
{
	struct { int ret; i64 elapsed; } r = { -EPIPE, 0 };
	int rp[2], st;
	pid_t pid;

	if (!dilated) {
		r.ret = enter_negative(&r.elapsed);
	} else {
		if (dil_write(DIL_SELF, "10") || pipe(rp))
			ksft_exit_fail_msg("setting up the case: %s\n", strerror(errno));
		pid = fork();
		if (pid < 0)
			ksft_exit_fail_msg("fork: %s\n", strerror(errno));
		if (!pid) {
			r.ret = enter_negative(&r.elapsed);
			_exit(write(rp[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
		}
		close(rp[1]);
		if (read(rp[0], &r, sizeof(r)) != sizeof(r))
			r.ret = -EPIPE;
		waitpid(pid, &st, 0);
		close(rp[0]);
	}
	ksft_print_msg("io_uring_enter() wait, a timeout of -1 s, %s: %s after %lld.%03lld ms\n",
		       dilated ? "TDF 10" : "initial time namespace", strerror(-r.ret),
		       r.elapsed / NSEC_PER_MSEC, r.elapsed / 1000 % 1000);
	/* at once: 15 ms of a TCG guest's stall, in the namespace's time */
	ksft_test_result(r.ret == -ETIME && r.elapsed >= 0 && r.elapsed <= 15 * NSEC_PER_MSEC,
			 "io_uring_enter() wait, a timeout of -1 s, %s: -ETIME at once\n",
			 dilated ? "TDF 10" : "initial time namespace");
}

static void run_case(const struct sync_case *c)
{
	i64 lo = c->timeout_ns > 0 ? c->timeout_ns : 0, late = c->late_ns, h0, hc, h1, due;
	i64 early = c->change ? CHANGE_EARLY_NS : HOST_EARLY_NS;
	struct result r = { 0 };
	int gp[2], rp[2], st, ok = 1;
	pid_t pid;
	char g;

	if (dil_write(DIL_SELF, c->tdf) || pipe(gp) || pipe(rp))
		ksft_exit_fail_msg("setting up the case: %s\n", strerror(errno));
	if (ioctl(fs_fd, FIFREEZE, 0))
		ksft_exit_fail_msg("FIFREEZE: %s\n", strerror(errno));
	frozen = 1;
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		/* returns only when a step failed */
		r = child_case(c, gp[1], rp[1]);
		child_exit(write(rp[1], &r, sizeof(r)) == sizeof(r) ? 11 : 12);
	}
	close(gp[1]);
	close(rp[1]);
	if (read(gp[0], &g, 1) != 1)
		g = 0;
	h0 = host_ns(CLOCK_MONOTONIC);
	hc = 0;
	if (g == 'G' && c->change) {
		sleep_ns(CHANGE_NS);
		if (dil_write(DIL_SELF, "10"))
			ksft_exit_fail_msg("writing 10: %s\n", strerror(errno));
		hc = host_ns(CLOCK_MONOTONIC) - h0;
	}
	/* the child's time ran at its first factor until the change, at 10 after */
	if (c->change)
		due = hc < lo ? hc + (lo - hc) * 10 : lo;
	else
		due = lo * c->num / c->den;
	if (read(rp[0], &r, sizeof(r)) != sizeof(r))
		r.step = 20;
	h1 = host_ns(CLOCK_MONOTONIC);
	thaw();
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		ksft_print_msg("%s: the child ended with status %#x\n", c->name, st);
	close(gp[0]);
	close(rp[0]);

	ksft_print_msg("%s: %s after %lld.%03lld ms of namespace time, %lld ms of host time (due %lld)\n",
		       c->name, r.ret ? strerror(-r.ret) : "0", r.elapsed / NSEC_PER_MSEC,
		       r.elapsed / 1000 % 1000, (h1 - h0) / NSEC_PER_MSEC, due / NSEC_PER_MSEC);
	if (r.step || !WIFEXITED(st) || WEXITSTATUS(st)) {
		ksft_print_msg("  step %d of the child failed\n", r.step);
		ok = 0;
	}
	if (r.ret != -ETIME) {
		ksft_print_msg("  not ETIME\n");
		ok = 0;
	}
	if (r.elapsed < lo || r.elapsed > lo + late) {
		ksft_print_msg("  namespace time outside [%lld, %lld] ms\n",
			       lo / NSEC_PER_MSEC, (lo + late) / NSEC_PER_MSEC);
		ok = 0;
	}
	if (h1 - h0 < due - early || h1 - h0 > due + HOST_SLACK_NS) {
		ksft_print_msg("  host time outside [%lld, %lld] ms\n",
			       (due - early) / NSEC_PER_MSEC,
			       (due + HOST_SLACK_NS) / NSEC_PER_MSEC);
		ok = 0;
	}
	ksft_test_result(ok, "IORING_REGISTER_SYNC_CANCEL, %s: ETIME after the timeout in namespace time\n",
			 c->name);
}

int main(void)
{
	struct ring probe = { .fd = -1 };
	unsigned int i;
	int ret;

	require_dilation();
	ksft_print_header();
	ret = ring_setup(&probe);
	if (ret == -ENOSYS || ret == -EPERM)
		ksft_exit_skip("io_uring unavailable (io_uring_setup: %s)\n", strerror(-ret));
	if (ret)
		ksft_exit_fail_msg("io_uring_setup: %s\n", strerror(-ret));
	close(probe.fd);
	setup_fs();
	unshare_timens_or_skip();
	ksft_set_plan(ARRAY_SIZE(cases) + 2);
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
	enter_negative_case(0);
	enter_negative_case(1);
	teardown_fs();
	ksft_finished();
	return 0;
}
