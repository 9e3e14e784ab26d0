/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A witness of the machine's stalls: one thread pinned to each online CPU,
 * SCHED_FIFO where allowed, sleeps STALL_PERIOD_NS of host time in a loop
 * and adds up how much longer than that its sleeps lasted. Under emulation
 * (QEMU TCG) a vCPU can stop running for hundreds of ms while its host
 * thread waits; every timer of the guest on that CPU then fires late by as
 * much. A late timer on a CPU whose witness saw no stall is the kernel's
 * doing; a late timer while a witness stalled long enough to explain it
 * is the machine's, and a test may measure again. How much lateness a
 * stall explains is the test's to say: one before a factor increase
 * moves a dilated namespace's deadline, and the new factor stretches that.
 *
 * Sleeps of the witness's own clock, CLOCK_MONOTONIC of the test process:
 * it must run in the root time namespace (undilated).
 */
#ifndef TIMENS_STALL_WITNESS_H
#define TIMENS_STALL_WITNESS_H

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define STALL_PERIOD_NS	(2 * NSEC_PER_MSEC)
/* a sleep longer than its period by more than this is a stall, all of it counted */
#define STALL_JITTER_NS	(2 * NSEC_PER_MSEC)
#define STALL_MAX_CPUS	64

struct stall_cpu {
	pthread_t th;
	int cpu;
	i64 stalled;		/* ns since the last stall_reset(), atomic */
};

static struct stall_cpu stall_cpus[STALL_MAX_CPUS];
static int stall_ncpus;

static void *stall_witness_main(void *arg)
{
	struct stall_cpu *w = arg;
	struct timespec p = { 0, STALL_PERIOD_NS };
	i64 prev, now, over;

	prev = host_ns(CLOCK_MONOTONIC);
	for (;;) {
		clock_nanosleep(CLOCK_MONOTONIC, 0, &p, NULL);
		now = host_ns(CLOCK_MONOTONIC);
		over = now - prev - STALL_PERIOD_NS;
		if (over > STALL_JITTER_NS)
			__atomic_add_fetch(&w->stalled, over, __ATOMIC_RELAXED);
		prev = now;
	}
	return NULL;
}

/* Start a witness on each CPU this process may run on; 0 if none could start. */
static inline int stall_witness_start(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	cpu_set_t allowed, one;
	int cpu;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return 0;
	for (cpu = 0; cpu < CPU_SETSIZE && stall_ncpus < STALL_MAX_CPUS; cpu++) {
		struct stall_cpu *w = &stall_cpus[stall_ncpus];
		pthread_attr_t a;

		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		w->cpu = cpu;
		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof(one), &one);
		if (pthread_create(&w->th, &a, stall_witness_main, w) == 0) {
			/* ahead of the tasks it watches; without CAP_SYS_NICE, as it is */
			pthread_setschedparam(w->th, SCHED_FIFO, &sp);
			stall_ncpus++;
		}
		pthread_attr_destroy(&a);
	}
	return stall_ncpus;
}

static inline void stall_reset(void)
{
	int i;

	for (i = 0; i < stall_ncpus; i++)
		__atomic_store_n(&stall_cpus[i].stalled, 0, __ATOMIC_RELAXED);
}

/* The most any one CPU's witness saw stalled since stall_reset(), and where. */
static inline i64 stall_most(int *cpu)
{
	i64 most = 0, s;
	int i;

	*cpu = -1;
	for (i = 0; i < stall_ncpus; i++) {
		s = __atomic_load_n(&stall_cpus[i].stalled, __ATOMIC_RELAXED);
		if (s > most) {
			most = s;
			*cpu = stall_cpus[i].cpu;
		}
	}
	return most;
}

#endif /* TIMENS_STALL_WITNESS_H */
