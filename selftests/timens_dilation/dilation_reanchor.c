// SPDX-License-Identifier: GPL-2.0
/*
 * Re-anchoring under load: a task inside a dilated namespace runs two
 * threads that read every clock in a tight loop, alternating between the
 * vDSO entry point and syscall(SYS_clock_gettime), and check that no clock
 * ever goes backwards (per thread, hence also between a vDSO and a syscall
 * reading), while the parent rewrites the namespace's TDF ~200 times from
 * outside, cycling 0.001, 1, 7/3, 10, 1000.  Afterwards the clocks must run
 * at the rate of the last TDF written, measured from right after the write
 * (no waiting for a tick).
 *
 * Coarse leap: going from TDF 1/1000 to 1000, a coarse clock must not
 * catch up at its next tick with the old-rate time between its last tick
 * and the change (up to a host tick times 1000, seconds): a reader thread
 * records the largest step of each coarse clock between two readings taken
 * after the write returned.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include "dilation.h"

#define NTHREADS	2
#define NWRITES		200
#define TRIES		5
#define INTERVAL_NS	(250 * NSEC_PER_MSEC)

static const char * const cycle[] = { "0.001", "1", "7/3", "10", "1000" };

struct viol {
	int m_prev, m_cur;	/* 0 vdso, 1 syscall */
	i64 prev, cur;
};

struct tstat {
	volatile unsigned long iters;
	unsigned long reads[NCLOCKS];
	unsigned long back[NCLOCKS];
	unsigned long errs[NCLOCKS];
	int first_err[NCLOCKS];
	struct viol first[NCLOCKS];
	struct viol worst[NCLOCKS];
};

#define LEAP_REPS	12
#define LEAP_WINDOW_NS	(30 * NSEC_PER_MSEC)
/* a step of 1 ms at TDF 1000 would be a host second without a tick */
#define LEAP_MAX_NS	NSEC_PER_MSEC

struct shared {
	volatile int stop;
	volatile int phase;		/* 1: the factor change has been written */
	volatile i64 step[2];		/* largest step seen in phase 1 */
	volatile unsigned long steps[2];	/* steps recorded in phase 1 */
	int readable[NCLOCKS];
	struct tstat t[NTHREADS];
};

static struct shared *sh;
static pthread_t th[NTHREADS];

static void *reader(void *arg)
{
	struct tstat *st = &sh->t[(long)arg];
	i64 last[NCLOCKS], v = 0;
	int lastm[NCLOCKS] = { 0 }, c, m, err;
	unsigned long i;

	for (c = 0; c < NCLOCKS; c++)
		last[c] = LLONG_MIN;
	for (i = 0; !sh->stop; i++) {
		/* alternate the method per clock and per round */
		for (c = 0; c < NCLOCKS; c++) {
			if (!sh->readable[c])
				continue;
			m = (i + c) & 1;
			/* the alarm clocks are not in the vDSO: it falls back itself */
			err = m ? sys_cg(clocks[c].id, &v) : vdso_cg(clocks[c].id, &v);
			if (err) {
				if (!st->errs[c]++)
					st->first_err[c] = err;
				continue;
			}
			st->reads[c]++;
			if (v < last[c]) {
				struct viol x = { lastm[c], m, last[c], v };

				if (!st->back[c]++)
					st->first[c] = x;
				if (last[c] - v > st->worst[c].prev - st->worst[c].cur)
					st->worst[c] = x;
			}
			last[c] = v;
			lastm[c] = m;
		}
		st->iters = i + 1;
	}
	return NULL;
}

/* Records the largest step of the coarse clocks while sh->phase is 1 */
static void *stepper(void *arg)
{
	static const clockid_t cc[2] = { CLOCK_MONOTONIC_COARSE, CLOCK_REALTIME_COARSE };
	int prevph[2] = { 0, 0 }, ph, k;
	i64 prev[2] = { 0, 0 }, v;

	(void)arg;
	while (!sh->stop) {
		for (k = 0; k < 2; k++) {
			ph = __atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE);
			if (vdso_cg(cc[k], &v))
				continue;
			if (ph == 1 && prevph[k] == 1) {
				if (v - prev[k] > sh->step[k])
					sh->step[k] = v - prev[k];
				if (v != prev[k])
					sh->steps[k]++;
			}
			prev[k] = v;
			prevph[k] = ph;
		}
	}
	return NULL;
}

enum { OP_READERS_START = OP_EXT, OP_READERS_STOP, OP_STEPPER_START, OP_STEPPER_STOP };

static void ext(const struct req *rq, struct resp *rs)
{
	long i;

	switch (rq->op) {
	case OP_READERS_START:
		sh->stop = 0;
		for (i = 0; i < NTHREADS; i++)
			if (pthread_create(&th[i], NULL, reader, (void *)i))
				rs->err = EAGAIN;
		break;
	case OP_READERS_STOP:
		sh->stop = 1;
		for (i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		break;
	case OP_STEPPER_START:
		sh->stop = 0;
		if (pthread_create(&th[0], NULL, stepper, NULL))
			rs->err = EAGAIN;
		break;
	case OP_STEPPER_STOP:
		sh->stop = 1;
		pthread_join(th[0], NULL);
		break;
	}
}

/*
 * Rate checks of a few clocks after the TDF @t (n/d) was written, the first
 * round starting right after the write: both sides bounded (rate_check()),
 * every round in bounds, and the narrowest bracket able to tell n/d from
 * twice and half of it; wider ones are measured again, up to RATE_ROUNDS
 * times in all (dilation.h).
 */
static void rate_after(struct srv *s, const char *t, i64 n, i64 d, const char *when)
{
	static const struct { int op, clk; } which[] = {
		{ OP_CG_VDSO, 2 }, { OP_CG_SYS, 2 },	/* MONOTONIC */
		{ OP_CG_VDSO, 0 }, { OP_CG_SYS, 5 },	/* REALTIME, BOOTTIME */
		{ OP_CG_VDSO, 4 }, { OP_CG_VDSO, 3 },	/* MONOTONIC_RAW, MONOTONIC_COARSE */
	};
	struct rate_item it[ARRAY_SIZE(which)];
	char what[96], note[160];
	int k, ok = 1, ret;
	i64 tick = tick_ns();

	ret = dil_write(s->pid, t);
	if (ret) {
		ksft_test_result_fail("rate follows the new TDF %s %s: write failed: %s\n", t, when,
				      strerror(-ret));
		return;
	}
	memset(it, 0, sizeof(it));
	for (k = 0; k < (int)ARRAY_SIZE(which); k++) {
		int c = which[k].clk;

		it[k].op = which[k].op;
		it[k].arg = c;
		it[k].host = clocks[c].host;
		it[k].slack = 1 + (clocks[c].coarse ? (tick * d + n - 1) / n : 0);
		it[k].expect = tdf_rate(n, d);
	}
	snprintf(what, sizeof(what), "TDF %s %s", t, when);
	rate_rounds(s, it, ARRAY_SIZE(which), RATE_ROUNDS, TRIES, INTERVAL_NS, what);
	for (k = 0; k < (int)ARRAY_SIZE(which); k++) {
		const struct rate_item *x = &it[k];
		const struct rate_out *o = &x->acc.bo;
		int c = which[k].clk;
		const char *how = which[k].op == OP_CG_VDSO ? "vdso" : "syscall";

		if (x->err) {
			ksft_print_msg("%s: %s %s: %s\n", what, clocks[c].name, how,
				       x->err < 0 ? "server gone" : strerror(x->err));
			ok = 0;
			continue;
		}
		ksft_print_msg("%s: %s %s: rate %.9Lf, expected %.9Lf (%+.1Lf ppm), resolution +-%.4Lf%%%s\n",
			       what, clocks[c].name, how, o->meas, o->expect, (o->meas / o->expect - 1) * 1e6L,
			       o->unc * 100, rate_acc_note(&x->acc, note, sizeof(note)));
		ok &= rate_acc_ok(&x->acc);
	}
	ksft_test_result(ok, "rate follows the new TDF %s %s (MONOTONIC, REALTIME, BOOTTIME, RAW, COARSE)\n",
			 t, when);
}

/*
 * 1/1000 -> 1000, LEAP_REPS times: no coarse clock may step by more than
 * LEAP_MAX_NS after the change (a tick at TDF 1000 is a few us).
 */
static void coarse_leap(struct srv *s)
{
	static const char * const name[2] = { "CLOCK_MONOTONIC_COARSE", "CLOCK_REALTIME_COARSE" };
	i64 worst[2] = { 0, 0 };
	unsigned long steps[2] = { 0, 0 };
	int rep, k, bad[2] = { 0, 0 }, werr = 0;
	struct resp rs;

	if (srv_call(s, OP_STEPPER_START, 0, &rs) || rs.err) {
		ksft_test_result_fail("no coarse clock leaps going from TDF 1/1000 to 1000: cannot start the reader\n");
		return;
	}
	for (rep = 0; rep < LEAP_REPS; rep++) {
		__atomic_store_n(&sh->phase, 0, __ATOMIC_RELEASE);
		werr |= dil_write(s->pid, "0.001");
		/* at least a few ticks at 1/1000, and a random phase to the tick */
		sleep_ns(10 * NSEC_PER_MSEC + rep * 317 * NSEC_PER_USEC);
		sh->step[0] = sh->step[1] = 0;
		sh->steps[0] = sh->steps[1] = 0;
		werr |= dil_write(s->pid, "1000");
		__atomic_store_n(&sh->phase, 1, __ATOMIC_RELEASE);
		sleep_ns(LEAP_WINDOW_NS);
		__atomic_store_n(&sh->phase, 2, __ATOMIC_RELEASE);
		sleep_ns(NSEC_PER_MSEC);
		for (k = 0; k < 2; k++) {
			steps[k] += sh->steps[k];
			if (sh->step[k] > worst[k])
				worst[k] = sh->step[k];
			bad[k] += sh->step[k] > LEAP_MAX_NS;
		}
	}
	srv_call(s, OP_STEPPER_STOP, 0, &rs);
	for (k = 0; k < 2; k++)
		ksft_print_msg("%s after 1/1000 -> 1000: %d of %d changes leapt, largest step %lld ns (bound %lld), %lu steps seen\n",
			       name[k], bad[k], LEAP_REPS, worst[k], LEAP_MAX_NS, steps[k]);
	ksft_test_result(!werr && !bad[0] && !bad[1] && steps[0] && steps[1],
			 "no coarse clock leaps going from TDF 1/1000 to 1000 (%d changes)\n", LEAP_REPS);
}

#define NPOINTS	(2 + NCLOCKS + 3 + 1)

int main(void)
{
	unsigned long before[NTHREADS], during[NTHREADS];
	struct srv s = { 0 };
	struct resp rs;
	int i, c, fails = 0, firsterr = 0, ok;
	i64 t0, t1;

	start_vdso_test();

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	for (c = 0; c < NCLOCKS; c++)
		sh->readable[c] = clock_readable(c);

	unshare_timens_or_skip();
	i = dil_write(DIL_SELF, "10");
	if (i)
		ksft_exit_fail_msg("writing '10' to /proc/self/timens_dilation: %s\n", strerror(-i));
	srv_ext = ext;
	if (srv_start(&s))
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));

	ksft_set_plan(NPOINTS);

	if (srv_call(&s, OP_READERS_START, 0, &rs) || rs.err)
		ksft_exit_fail_msg("starting the reader threads failed\n");
	sleep_ns(20 * NSEC_PER_MSEC);
	for (i = 0; i < NTHREADS; i++)
		before[i] = sh->t[i].iters;

	/* the storm: ~200 writes, 1..3 ms apart, from outside */
	t0 = host_ns(CLOCK_MONOTONIC);
	for (i = 0; i < NWRITES; i++) {
		int ret = dil_write(s.pid, cycle[i % ARRAY_SIZE(cycle)]);

		if (ret) {
			if (!fails++)
				firsterr = -ret;
		}
		sleep_ns((1 + i % 3) * NSEC_PER_MSEC);
	}
	t1 = host_ns(CLOCK_MONOTONIC);
	for (i = 0; i < NTHREADS; i++)
		during[i] = sh->t[i].iters - before[i];
	sleep_ns(20 * NSEC_PER_MSEC);
	if (srv_call(&s, OP_READERS_STOP, 0, &rs))
		ksft_exit_fail_msg("the child died\n");

	ksft_print_msg("%d TDF writes in %lld ms; reader rounds during the storm: %lu and %lu\n",
		       NWRITES, (t1 - t0) / NSEC_PER_MSEC, during[0], during[1]);
	ksft_test_result(!fails, "storm: %d TDF writes from outside succeeded (%d failed%s%s)\n",
			 NWRITES, fails, fails ? ", first: " : "", fails ? strerror(firsterr) : "");
	/* at least a few rounds per thread per 10 writes, or the test tested nothing */
	ok = during[0] >= NWRITES / 10 && during[1] >= NWRITES / 10;
	ksft_test_result(ok, "storm: both reader threads ran throughout the writes\n");

	for (c = 0; c < NCLOCKS; c++) {
		unsigned long back = 0, errs = 0, reads = 0;

		if (!sh->readable[c]) {
			skip_point("not readable (alarm clocks need an RTC)",
				   "%s never goes backwards while re-anchored (2 threads, vdso+syscall alternating)",
				   clocks[c].name);
			continue;
		}
		for (i = 0; i < NTHREADS; i++) {
			struct tstat *st = &sh->t[i];

			back += st->back[c];
			errs += st->errs[c];
			reads += st->reads[c];
			if (st->back[c])
				ksft_print_msg("%s thread %d: went backwards %lu times; first %lld (%s) -> %lld (%s), worst by %lld ns\n",
					       clocks[c].name, i, st->back[c],
					       st->first[c].prev, st->first[c].m_prev ? "syscall" : "vdso",
					       st->first[c].cur, st->first[c].m_cur ? "syscall" : "vdso",
					       st->worst[c].prev - st->worst[c].cur);
			if (st->errs[c])
				ksft_print_msg("%s thread %d: %lu failed reads (%s)\n", clocks[c].name, i,
					       st->errs[c], strerror(st->first_err[c]));
		}
		ksft_print_msg("%s: %lu reads, %lu backwards, %lu errors\n", clocks[c].name, reads, back, errs);
		ksft_test_result(!back && !errs && reads,
				 "%s never goes backwards while re-anchored (2 threads, vdso+syscall alternating)\n",
				 clocks[c].name);
	}

	rate_after(&s, "7/3", 7, 3, "after the storm");
	rate_after(&s, "0.001", 1, 1000, "after the storm");
	rate_after(&s, "1000", 1000, 1, "after the storm");
	coarse_leap(&s);

	srv_stop(&s);
	ksft_finished();
	return 0;
}
