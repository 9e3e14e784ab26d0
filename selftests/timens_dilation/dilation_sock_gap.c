// SPDX-License-Identifier: GPL-2.0
/*
 * A socket wait counts its timeout (SO_RCVTIMEO here) down in host jiffies
 * over the sleeps of its loop. Between two sleeps, and between the scaling
 * of the timeout where the wait starts and its first sleep, the task runs
 * with those jiffies in a local variable that no timer keeps on the
 * namespace's clock. A factor change that comes then must neither shorten
 * nor lengthen what is left (a CI run of dilation_change saw a unix stream
 * recv() woken by sends every few hundred us end after 52 ms of its 100 ms
 * when the change from 1 to 10 fell between two of its sleeps: the jiffies
 * left at TDF 1 were slept at TDF 10).
 *
 * userfaultfd makes such a gap long, and the change certain to fall in it:
 * recv() on an AF_UNIX stream with SO_RCVLOWAT 2 and SO_RCVTIMEO 100 ms
 * copies the 1 byte there is into a page that is not there yet, and the
 * copy waits, between the sleeps, until a thread of the receiver has told
 * the parent, the parent has changed the factor, and the thread has put the
 * page in. The receive then sleeps for what is left of its timeout and
 * returns the 1 byte. Two cases, each up (TDF 1 -> 10) and down (10 -> 2):
 *
 *  - queued: the byte is there when recv() starts, so the copy comes after
 *    the scaling of the timeout and before the first sleep, which is the
 *    whole 100 ms;
 *  - woken: a thread of the receiver sends the byte at 30 ms; the first
 *    sleep ends then, and the copy comes before the second, the rest.
 *
 * The namespace's time of the receive outside the copy (from the thread's
 * stamp when it reads the fault to its stamp before it puts the page in)
 * must be the timeout, 100 ms: not less, but a host tick at each factor (a
 * timeout of n jiffies ends after n - 1 and a fraction, and what is left
 * after the change is counted again from the jiffy it falls in), at most
 * 15 ms more, 30 at TDF 2 (a TCG guest's stall of 150 or 60 ms of host
 * time, and the parts of the copy outside the stamps). What is left slept
 * at the old factor ends the up cases after 10 and 37 ms, the down cases
 * after 500 and 380; at twice the new factor after 200 and 170 ms, at half
 * after 50 and 65. The host time from the parent's change to the result
 * must be what the namespace's time from the thread's stamp after the
 * change to the end of the receive takes at the new factor (the parent's
 * stamp comes first, before it lets the thread go; -10 ms of slack; +150
 * ms at TDF 10, +60 at TDF 2: the stall the namespace's bound allows). A
 * kernel that dilates by twice the factor throughout takes twice that:
 * 2000 and about 1300 ms up, 400 and 280 down, due 1000, 650, 200 and 140.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include "dilation.h"

#define TIMEOUT_NS	(100 * NSEC_PER_MSEC)	/* SO_RCVTIMEO, of the namespace */
#define WAKE_NS		(30 * NSEC_PER_MSEC)	/* the woken cases' send */
#define LATE_NS		(15 * NSEC_PER_MSEC)	/* see the top */
#define LATE_HOST_NS	(60 * NSEC_PER_MSEC)	/* ... at least, of host time */
#define HOST_EARLY_NS	(10 * NSEC_PER_MSEC)
#define STEP_TIMEOUT_MS	10000			/* of the parent, per step */

struct gap_case {
	const char *from, *to;	/* the factors before and after the change */
	i64 from_tdf, to_tdf;	/* ... as integers */
	int woken;		/* the byte is sent at WAKE_NS, not queued */
};

static const struct gap_case cases[] = {
	{ "1", "10", 1, 10, 0 },
	{ "1", "10", 1, 10, 1 },
	{ "10", "2", 10, 2, 0 },
	{ "10", "2", 10, 2, 1 },
};

struct result {
	int step;		/* the child's step that failed, 0 if none */
	long ret;		/* recv()'s */
	int err;		/* its errno */
	char byte;		/* what it received */
	i64 t0, t1;		/* namespace CLOCK_MONOTONIC around recv() */
	i64 tf, tr;		/* ... at the fault's event, before the page goes in */
};

struct gap {
	int sk[2];		/* the stream pair; recv() on sk[0] */
	int uffd;
	char *page;		/* registered, missing until the handler fills it */
	int to_parent, from_parent;
	struct result *r;
	i64 send_at;		/* the woken cases' send, namespace time */
};

static i64 now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ts_ns(&t);
}

/* the fault of recv()'s copy: tell the parent, wait for its change, fill the page */
static void *fault_handler(void *arg)
{
	struct gap *g = arg;
	struct uffd_msg msg;
	struct uffdio_copy copy = { 0 };
	struct pollfd pfd = { .fd = g->uffd, .events = POLLIN };
	static char src[1 << 16] __attribute__((aligned(1 << 16)));
	char c;

	if (poll(&pfd, 1, STEP_TIMEOUT_MS) != 1 ||
	    read(g->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		g->r->step = 10;
		return NULL;
	}
	g->r->tf = now_ns();
	if (write(g->to_parent, "F", 1) != 1 || read(g->from_parent, &c, 1) != 1 || c != 'C') {
		g->r->step = 11;
		return NULL;
	}
	g->r->tr = now_ns();
	copy.dst = (uintptr_t)g->page;
	copy.src = (uintptr_t)src;
	copy.len = sysconf(_SC_PAGESIZE);
	if (ioctl(g->uffd, UFFDIO_COPY, &copy))
		g->r->step = 12;
	return NULL;
}

static void *late_send(void *arg)
{
	struct gap *g = arg;
	struct timespec at = { g->send_at / NSEC_PER_SEC, g->send_at % NSEC_PER_SEC };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
	if (send(g->sk[1], "x", 1, 0) != 1)
		g->r->step = 13;
	return NULL;
}

/* in the namespace: the receive, its page missing */
static void child_case(const struct gap_case *c, int to_parent, int from_parent, int rfd)
{
	struct timeval tv = { 0, TIMEOUT_NS / 1000 };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	long psz = sysconf(_SC_PAGESIZE);
	struct result r = { 0 };
	struct gap g = { .to_parent = to_parent, .from_parent = from_parent, .r = &r };
	pthread_t handler, sender;
	int two = 2;

	g.uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	g.page = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (uintptr_t)g.page;
	reg.range.len = psz;
	if (g.uffd < 0 || g.page == MAP_FAILED || ioctl(g.uffd, UFFDIO_API, &api) ||
	    ioctl(g.uffd, UFFDIO_REGISTER, &reg))
		r.step = 1;
	else if (socketpair(AF_UNIX, SOCK_STREAM, 0, g.sk) ||
		 setsockopt(g.sk[0], SOL_SOCKET, SO_RCVLOWAT, &two, sizeof(two)) ||
		 setsockopt(g.sk[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		r.step = 2;
	else if (!c->woken && send(g.sk[1], "x", 1, 0) != 1)
		r.step = 3;
	else if (pthread_create(&handler, NULL, fault_handler, &g))
		r.step = 4;
	if (r.step)
		_exit(write(rfd, &r, sizeof(r)) == sizeof(r) ? 0 : 1);

	g.send_at = now_ns() + WAKE_NS;
	if (c->woken && pthread_create(&sender, NULL, late_send, &g)) {
		r.step = 5;
	} else {
		r.t0 = now_ns();
		r.ret = recv(g.sk[0], g.page, 8, 0);
		r.err = r.ret < 0 ? errno : 0;
		r.t1 = now_ns();
		r.byte = g.page[0];
		if (c->woken)
			pthread_join(sender, NULL);
	}
	pthread_join(handler, NULL);
	_exit(write(rfd, &r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

/* one byte from @fd within STEP_TIMEOUT_MS, 0 if none */
static char read_step(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	return poll(&pfd, 1, STEP_TIMEOUT_MS) == 1 && read(fd, &c, 1) == 1 ? c : 0;
}

static void run_case(const struct gap_case *c)
{
	/* a host tick early at each factor: see the top */
	i64 early = tick_ns() / c->from_tdf + tick_ns() / c->to_tdf, slept, copy;
	i64 late = LATE_HOST_NS / c->to_tdf > LATE_NS ? LATE_HOST_NS / c->to_tdf : LATE_NS;
	/* the stall the namespace's bound allows, in host time */
	i64 host_late = late * c->to_tdf, hc = 0, h1, due;
	struct result r = { .step = 20 };
	int up[2], down[2], rp[2], st, ok = 1;
	char name[96];
	pid_t pid;

	snprintf(name, sizeof(name), "recv() %s, TDF %s -> %s in the copy",
		 c->woken ? "woken at 30 ms" : "of a queued byte", c->from, c->to);
	if (dil_write(DIL_SELF, c->from) || pipe(up) || pipe(down) || pipe(rp))
		ksft_exit_fail_msg("setting up the case: %s\n", strerror(errno));
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		close(up[0]);
		close(down[1]);
		close(rp[0]);
		child_case(c, up[1], down[0], rp[1]);
	}
	close(up[1]);
	close(down[0]);
	close(rp[1]);
	if (read_step(up[0]) == 'F') {
		if (dil_write(DIL_SELF, c->to))
			ksft_exit_fail_msg("writing %s: %s\n", c->to, strerror(errno));
		/*
		 * Before the child's thread is let go: stamped after the
		 * write, the woken thread could stamp first and the parent
		 * run later (a CI run had it 23 ms of host time late, and
		 * the receive 987 ms long against 1010 due).
		 */
		hc = host_ns(CLOCK_MONOTONIC);
		if (write(down[1], "C", 1) != 1)
			ksft_exit_fail_msg("to the child: %s\n", strerror(errno));
	}
	close(down[1]);
	if (read(rp[0], &r, sizeof(r)) != sizeof(r))
		r.step = 21;
	h1 = host_ns(CLOCK_MONOTONIC);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		r.step = r.step ?: 22;
	close(up[0]);
	close(rp[0]);

	copy = r.tr - r.tf;
	slept = r.t1 - r.t0 - copy;
	/* from the change, at the new factor: the child's tr comes after hc */
	due = (r.t1 - r.tr) * c->to_tdf;
	ksft_print_msg("%s: %ld (%s), %lld.%03lld ms of namespace time, %lld.%03lld ms of it in the copy, %lld.%03lld outside\n",
		       name, r.ret, r.err ? strerror(r.err) : "no error",
		       (r.t1 - r.t0) / NSEC_PER_MSEC, (r.t1 - r.t0) / 1000 % 1000,
		       copy / NSEC_PER_MSEC, copy / 1000 % 1000,
		       slept / NSEC_PER_MSEC, slept / 1000 % 1000);
	ksft_print_msg("  %lld ms of host time from the change to the result (due %lld)\n",
		       (h1 - hc) / NSEC_PER_MSEC, due / NSEC_PER_MSEC);
	if (r.step) {
		ksft_print_msg("  step %d failed (status %#x)\n", r.step, st);
		ok = 0;
	} else if (r.ret != 1 || r.byte != 'x') {
		ksft_print_msg("  not the 1 byte\n");
		ok = 0;
	} else if (r.tf < r.t0 || r.tr < r.tf || r.t1 < r.tr) {
		ksft_print_msg("  the copy's stamps are outside the receive\n");
		ok = 0;
	} else {
		if (slept < TIMEOUT_NS - early || slept > TIMEOUT_NS + late) {
			ksft_print_msg("  %lld.%03lld ms outside the copy, not in [%lld.%03lld, %lld]\n",
				       slept / NSEC_PER_MSEC, slept / 1000 % 1000,
				       (TIMEOUT_NS - early) / NSEC_PER_MSEC,
				       (TIMEOUT_NS - early) / 1000 % 1000,
				       (TIMEOUT_NS + late) / NSEC_PER_MSEC);
			ok = 0;
		}
		if (h1 - hc < due - HOST_EARLY_NS || h1 - hc > due + host_late) {
			ksft_print_msg("  host time outside [%lld, %lld] ms\n",
				       (due - HOST_EARLY_NS) / NSEC_PER_MSEC,
				       (due + host_late) / NSEC_PER_MSEC);
			ok = 0;
		}
	}
	ksft_test_result(ok, "%s: the timeout, 100 ms, outside the copy\n", name);
}

int main(void)
{
	unsigned int i;
	int fd;

	require_dilation();
	ksft_print_header();
	fd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (fd < 0 && errno == ENOSYS)
		ksft_exit_fail_msg("userfaultfd: not in this kernel (CONFIG_USERFAULTFD)\n");
	if (fd < 0)
		ksft_exit_fail_msg("userfaultfd: %s\n", strerror(errno));
	close(fd);
	unshare_timens_or_skip();
	ksft_set_plan(ARRAY_SIZE(cases));
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
	ksft_finished();
	return 0;
}
