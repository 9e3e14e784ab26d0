// SPDX-License-Identifier: GPL-2.0
/*
 * Churn: many dilated time namespaces created and destroyed while two
 * writer threads re-anchor them and their tasks read every clock through
 * the vDSO and the syscall.  Meant for a debug kernel (KASAN, lockdep,
 * UBSAN, DEBUG_ATOMIC_SLEEP), where the run passes only if dmesg stays
 * clean (tests/guest/run-all checks that); on any kernel it checks that no
 * clock of a namespace went backwards across the re-anchors and that every
 * factor write either took or found its task gone.
 *
 * CHURN_NAMESPACES (default 1000) namespaces in all, CHURN_PARALLEL
 * (default 8) alive at once, CHURN_READS (default 4000) reads in each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest.h"
#include "timens_dilation_util.h"
#include "../timens_dilation/vdso_sym.h"

#define MAX_PARALLEL	64

/* Shared between the parent, its writer threads and the reader tasks. */
struct shared {
	_Atomic pid_t reader[MAX_PARALLEL];	/* 0: slot free */
	_Atomic long reads, backwards, read_errors;
	_Atomic long writes, writes_gone, write_errors;
	_Atomic int stop;
	char first_error[256];
	_Atomic int have_error;
};

static struct shared *sh;
static int parallel = 8;

static const char * const factors[] = {
	"1", "10", "1000", "1/1000", "0.001", "5/2", "3", "7/3", "100", "1/10",
};
#define NFACTORS	((int)(sizeof(factors) / sizeof(factors[0])))

static const clockid_t clocks[] = {
	CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME,
	CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI,
};
#define NCLOCKS		((int)(sizeof(clocks) / sizeof(clocks[0])))

static void note_error(const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&sh->have_error, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(sh->first_error, sizeof(sh->first_error), fmt, ap);
	va_end(ap);
}

/* Re-anchor the namespace of a live reader with a random factor, forever. */
static void *writer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!atomic_load(&sh->stop)) {
		pid_t pid = atomic_load(&sh->reader[rand_r(&seed) % parallel]);
		const char *f = factors[rand_r(&seed) % NFACTORS];
		int err;

		if (!pid) {
			sched_yield();
			continue;
		}
		err = dil_write(pid, f);
		if (!err)
			atomic_fetch_add(&sh->writes, 1);
		else if (err == -ENOENT || err == -ESRCH)
			atomic_fetch_add(&sh->writes_gone, 1);	/* the reader exited */
		else {
			atomic_fetch_add(&sh->write_errors, 1);
			note_error("writing %s to /proc/%d/timens_dilation: %s", f, (int)pid,
				   strerror(-err));
		}
	}
	return NULL;
}

static long long ts_ns(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* In the namespace: read every clock, alternating vDSO and syscall. */
static void reader(int slot, int reads, struct vdso_fns *v)
{
	long long last[NCLOCKS];
	long back = 0, errs = 0;
	int i, k;

	atomic_store(&sh->reader[slot], getpid());
	for (k = 0; k < NCLOCKS; k++)
		last[k] = 0;
	for (i = 0; i < reads; i++) {
		struct timespec t;
		int ret;

		k = i % NCLOCKS;
		if ((i / NCLOCKS) & 1 && v->clock_gettime)
			ret = v->clock_gettime(clocks[k], &t);
		else
			ret = syscall(SYS_clock_gettime, clocks[k], &t);
		if (ret) {
			errs++;
			continue;
		}
		if (ts_ns(&t) < last[k]) {
			if (!back)
				note_error("clock %d went back by %lld ns in pid %d", (int)clocks[k],
					   last[k] - ts_ns(&t), (int)getpid());
			back++;
		}
		last[k] = ts_ns(&t);
		if (!(i & 63))
			sched_yield();
	}
	atomic_fetch_add(&sh->reads, reads);
	atomic_fetch_add(&sh->backwards, back);
	atomic_fetch_add(&sh->read_errors, errs);
	atomic_store(&sh->reader[slot], 0);
}

/* A namespace's life: its creator writes a factor, one task reads in it. */
static int namespace_life(int slot, unsigned int seed, int reads, struct vdso_fns *v)
{
	pid_t pid;
	int st, err;

	if (unshare(CLONE_NEWTIME))
		return 10;
	err = dil_write(DIL_SELF, factors[rand_r(&seed) % NFACTORS]);
	if (err) {
		note_error("initial factor: %s", strerror(-err));
		return 11;
	}
	pid = fork();
	if (pid < 0)
		return 12;
	if (!pid) {
		reader(slot, reads, v);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 13;
	return 0;
}

static int env_int(const char *name, int def, int min, int max)
{
	const char *s = getenv(name);
	int v = s ? atoi(s) : def;

	return v < min ? min : v > max ? max : v;
}

int main(void)
{
	int total = env_int("CHURN_NAMESPACES", 1000, 1, 1000000);
	int reads = env_int("CHURN_READS", 4000, 1, 100000000);
	pid_t slot_pid[MAX_PARALLEL] = { 0 };
	int started = 0, finished = 0, failed = 0, i, st;
	struct vdso_fns v = { 0 };
	pthread_t w[2];
	struct timespec t0, t1;

	parallel = env_int("CHURN_PARALLEL", 8, 1, MAX_PARALLEL);
	ksft_print_header();
	if (access("/proc/self/timens_dilation", F_OK))
		ksft_exit_skip("kernel without time-namespace dilation (no /proc/self/timens_dilation)\n");
	ksft_set_plan(3);
	vdso_init(&v);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < 2; i++)
		if (pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)(i + 1)))
			ksft_exit_fail_msg("pthread_create\n");
	clock_gettime(CLOCK_MONOTONIC, &t0);

	while (finished < total) {
		int slot = -1;

		for (i = 0; i < parallel && started < total; i++)
			if (!slot_pid[i]) {
				slot = i;
				break;
			}
		if (slot >= 0) {
			pid_t pid = fork();

			if (pid < 0)
				ksft_exit_fail_msg("fork: %s\n", strerror(errno));
			if (!pid)
				_exit(namespace_life(slot, 1000 + started, reads, &v));
			slot_pid[slot] = pid;
			started++;
			continue;
		}
		pid_t pid = wait(&st);

		if (pid < 0)
			ksft_exit_fail_msg("wait: %s\n", strerror(errno));
		for (i = 0; i < parallel; i++)
			if (slot_pid[i] == pid)
				slot_pid[i] = 0;
		finished++;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			if (!failed)
				ksft_print_msg("namespace %d: status 0x%x\n", finished, st);
			failed++;
		}
	}
	atomic_store(&sh->stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	ksft_print_msg("%d namespaces in %.1f s (%d at once), %ld reads, %ld re-anchors, %ld writes to exited tasks\n",
		       total, (ts_ns(&t1) - ts_ns(&t0)) / 1e9, parallel, atomic_load(&sh->reads),
		       atomic_load(&sh->writes), atomic_load(&sh->writes_gone));
	if (sh->have_error)
		ksft_print_msg("first error: %s\n", sh->first_error);
	ksft_test_result(!failed, "%d dilated namespaces created, read in and destroyed (%d failed)\n",
			 total, failed);
	ksft_test_result(!atomic_load(&sh->backwards) && !atomic_load(&sh->read_errors) &&
			 atomic_load(&sh->reads) == (long)total * reads,
			 "no clock went backwards in %ld reads (vDSO and syscall) across %ld re-anchors (%ld backwards, %ld errors)\n",
			 atomic_load(&sh->reads), atomic_load(&sh->writes),
			 atomic_load(&sh->backwards), atomic_load(&sh->read_errors));
	ksft_test_result(!atomic_load(&sh->write_errors) && atomic_load(&sh->writes) > 0,
			 "every re-anchor took or found its task gone (%ld took, %ld errors)\n",
			 atomic_load(&sh->writes), atomic_load(&sh->write_errors));
	ksft_finished();
}
