// SPDX-License-Identifier: GPL-2.0
/*
 * timens_scale: how the dilated time namespace scales with their number.
 *
 * For each N and each mode ("offset": a time namespace with offsets only,
 * "dilated": the same plus a factor), start N processes, each in a time
 * namespace of its own, each on a periodic CLOCK_MONOTONIC timer
 * (clock_nanosleep TIMER_ABSTIME, PERIOD of namespace time), and measure:
 *
 *   create/s   namespaces created per second: unshare(CLONE_NEWTIME), the
 *              offsets and factor written, fork(), until every child has
 *              entered its namespace and said so;
 *   kmem/ns    Slab + KernelStack + PageTables growth (/proc/meminfo) per
 *              namespace, and used/ns: the fall of MemFree per namespace
 *              (this one also sees the timens vvar page, which is a plain
 *              page, and the children's own pages);
 *   cpu/ns     host CPU time (/proc/stat, all CPUs, not idle) over the
 *              measurement window, per namespace, in % of one CPU;
 *   lateness   of each expiry in namespace time (now - deadline, both read
 *              on the namespace's own CLOCK_MONOTONIC), p50 / p99 / max;
 *   fired      expiries seen in the window against the expected number;
 *              every namespace must have fired at least once;
 *   teardown/s SIGKILL to every child and reap them all.
 *
 * The offset-only run uses the same period in *host* time (PERIOD x TDF) so
 * that both modes wake up equally often and the differences between the two
 * rows are the price of dilation, not of a different load.
 *
 * A process per namespace is needed (a time namespace belongs to an mm: no
 * threads in different ones).  The children are forks of this small static
 * program and touch only their stack and a shared result page, so each costs
 * a kernel stack, a task, an mm with a few page tables and a few user pages.
 *
 * Usage: timens_scale [-n N[,N...]] [-t TDF] [-p PERIOD_MS] [-w SECONDS]
 *                     [-m both|dilated|offset] [-S MIN_SAMPLES]
 * Output: a table, then one "# result ..." line per run (key=value) for
 * scripts.  Exit 0 if every run completed (all N namespaces created, no
 * wake-up before its deadline, no clock error), 1 if not, 2 on usage
 * errors.  Needs root (CLONE_NEWTIME, CAP_SYS_TIME).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
# define CLONE_NEWTIME	0x00000080
#endif

typedef long long i64;
typedef unsigned long long u64;
#define NSEC_PER_SEC	1000000000LL
#define NSEC_PER_MSEC	1000000LL

/* Log-linear histogram: 16 buckets per power of two, exact below 16 ns. */
#define SUB		16
#define NBUCKETS	(64 * SUB)

enum phase { PH_WAIT, PH_RUN, PH_MEASURE };

/*
 * Shared with every child (MAP_SHARED | MAP_ANONYMOUS before the forks).
 * The children add to one histogram with atomics: per-child histograms
 * would cost N x 8 KiB of user memory and blur the memory figures.
 */
struct shared {
	int phase;		/* futex word: children wait here for PH_RUN */
	int ready;		/* children that have entered their namespace */
	int errors;		/* failed clock calls in children */
	int pad;
	u64 early;		/* wake-ups before the deadline: must stay 0 */
	u64 overruns;		/* whole periods missed (in the window) */
	u64 samples;
	u64 hist[NBUCKETS];
	struct per_child {
		unsigned int fires;	/* expiries in the window */
		unsigned int cpu_done;	/* cpu0 and cpu1 are both set */
		unsigned int ever;	/* expiries since the start */
		u64 cpu0, cpu1;		/* own CPU time at the first expiry in
					 * the window and the first after it */
	} c[];
};

static struct shared *sh;
static size_t sh_size;

static i64 ts_ns(const struct timespec *t)
{
	return (i64)t->tv_sec * NSEC_PER_SEC + t->tv_nsec;
}

static i64 now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return ts_ns(&t);
}

static int bucket_of(u64 v)
{
	int e;

	if (v < SUB)
		return v;
	e = 63 - __builtin_clzll(v);			/* e >= 4 */
	return (e - 3) * SUB + ((v >> (e - 4)) & (SUB - 1));
}

/* The middle of bucket b, for the percentiles. */
static double bucket_mid(int b)
{
	int e, m;
	double lo, w;

	if (b < SUB)
		return b;
	e = b / SUB + 3;
	m = b % SUB;
	lo = (double)((u64)(SUB + m) << (e - 4));
	w = (double)(1ULL << (e - 4));
	return lo + w / 2;
}

static double percentile(const u64 *h, u64 total, double p)
{
	u64 want = (u64)(p * (double)total), acc = 0;
	int b;

	if (!total)
		return -1;
	if (want >= total)
		want = total - 1;
	for (b = 0; b < NBUCKETS; b++) {
		acc += h[b];
		if (acc > want)
			return bucket_mid(b);
	}
	return -1;
}

static void futex_wait(int *w, int val)
{
	syscall(SYS_futex, w, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake_all(int *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * The child, in its own time namespace: wait for the start, then sleep to
 * absolute deadlines on the grid start + k * period of its own clock.  The
 * first deadline is staggered by idx/n of a period, so that the namespaces
 * behave as independent containers rather than one thundering herd.
 */
static void __attribute__((noreturn)) child(int idx, int n, i64 period)
{
	struct per_child *me = &sh->c[idx];
	struct timespec t;
	i64 next, now, late;
	int ph, err, was = PH_RUN;

	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE) == PH_WAIT)
		futex_wait(&sh->phase, PH_WAIT);

	next = now_ns(CLOCK_MONOTONIC) + period + period * idx / n;
	for (;;) {
		t.tv_sec = next / NSEC_PER_SEC;
		t.tv_nsec = next % NSEC_PER_SEC;
		do
			err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		while (err == EINTR);
		now = now_ns(CLOCK_MONOTONIC);
		if (err)
			__atomic_add_fetch(&sh->errors, 1, __ATOMIC_RELAXED);
		late = now - next;
		ph = __atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE);
		me->ever++;
		if (ph == PH_MEASURE) {
			if (late < 0) {
				__atomic_add_fetch(&sh->early, 1, __ATOMIC_RELAXED);
				late = 0;
			}
			__atomic_add_fetch(&sh->hist[bucket_of(late)], 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&sh->samples, 1, __ATOMIC_RELAXED);
			me->fires++;
		}
		/*
		 * The child's own CPU time (exact, from the scheduler) at the
		 * edges of the window only: two calls per run, not per expiry,
		 * so that measuring does not add to what is measured.
		 */
		if (ph != was && ph == PH_MEASURE) {
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
			me->cpu0 = ts_ns(&t);
		} else if (ph != was && was == PH_MEASURE) {
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
			me->cpu1 = ts_ns(&t);
			__atomic_store_n(&me->cpu_done, 1, __ATOMIC_RELEASE);
		}
		was = ph;
		next += period;
		if (next <= now) {
			/* missed whole periods: count them and rejoin the grid */
			i64 miss = (now - next) / period + 1;

			if (ph == PH_MEASURE)
				__atomic_add_fetch(&sh->overruns, miss, __ATOMIC_RELAXED);
			next += miss * period;
		}
	}
}

struct meminfo {
	long long memfree, slab, kstack, pagetables;	/* KiB */
};

static int read_meminfo(struct meminfo *m)
{
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");
	long long v;

	if (!f)
		return -1;
	memset(m, 0, sizeof(*m));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemFree: %lld", &v) == 1)
			m->memfree = v;
		else if (sscanf(line, "Slab: %lld", &v) == 1)
			m->slab = v;
		else if (sscanf(line, "KernelStack: %lld", &v) == 1)
			m->kstack = v;
		else if (sscanf(line, "PageTables: %lld", &v) == 1)
			m->pagetables = v;
	}
	fclose(f);
	return 0;
}

/* Busy and total jiffies of all CPUs (the "cpu" line of /proc/stat). */
static int read_stat(u64 *busy, u64 *total)
{
	u64 v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	int i, got;

	if (!f)
		return -1;
	got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		     &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (got < 4)
		return -1;
	/* guest and guest_nice are already in user and nice */
	*total = 0;
	for (i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];	/* minus idle and iowait */
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = write(fd, s, strlen(s));
	close(fd);
	return r == (ssize_t)strlen(s) ? 0 : -1;
}

static void sleep_ns(i64 ns)
{
	struct timespec t = { ns / NSEC_PER_SEC, ns % NSEC_PER_SEC };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* Let lazily freed memory (RCU-freed tasks, per-cpu caches) settle. */
static void settle(void)
{
	sleep_ns(300 * NSEC_PER_MSEC);
	write_file("/proc/sys/vm/drop_caches", "3");
	sleep_ns(200 * NSEC_PER_MSEC);
}

struct result {
	int n, dilated, created, ok;
	double create_s, teardown_s, window_s;
	double kmem_per_ns, used_per_ns;	/* bytes */
	double cpu_pct_per_ns, busy_cpus;
	double task_us_per_fire;		/* the children's own CPU */
	double p50, p99, pmax;			/* ns of namespace time */
	u64 samples, expected, overruns, early;
	int errors, silent, quiet;
};

static const char *tdf_str;
static i64 period_ns = 10 * NSEC_PER_MSEC;
static double tdf_val = 10;
static double window_min = 5;
static u64 min_samples = 2000;
static int ncpus;

static int run(int n, int dilated, struct result *r)
{
	struct meminfo m0, m1;
	u64 busy0, tot0, busy1, tot1;
	i64 t0, t1, host_period, w;
	pid_t *pids;
	int i, b;
	char off[64];

	memset(r, 0, sizeof(*r));
	r->n = n;
	r->dilated = dilated;
	pids = calloc(n, sizeof(*pids));
	if (!pids)
		return -1;
	memset(sh, 0, sh_size);
	host_period = (i64)(period_ns * tdf_val);
	settle();
	read_meminfo(&m0);

	/*
	 * The same offsets in both modes (a day on CLOCK_MONOTONIC), so that
	 * the only difference is the factor.
	 */
	snprintf(off, sizeof(off), "%d 86400 0\n", CLOCK_MONOTONIC);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (i = 0; i < n; i++) {
		if (unshare(CLONE_NEWTIME)) {
			fprintf(stderr, "timens_scale: unshare(CLONE_NEWTIME) #%d: %s\n", i, strerror(errno));
			break;
		}
		if (write_file("/proc/self/timens_offsets", off)) {
			fprintf(stderr, "timens_scale: timens_offsets #%d: %s\n", i, strerror(errno));
			break;
		}
		if (dilated && write_file("/proc/self/timens_dilation", tdf_str)) {
			fprintf(stderr, "timens_scale: timens_dilation #%d: %s\n", i, strerror(errno));
			break;
		}
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "timens_scale: fork #%d: %s\n", i, strerror(errno));
			break;
		}
		if (pids[i] == 0)
			/* offset-only children get the host period in their time */
			child(i, n, dilated ? period_ns : host_period);
	}
	r->created = i;
	while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < r->created)
		sleep_ns(NSEC_PER_MSEC);
	t1 = now_ns(CLOCK_MONOTONIC);
	r->create_s = (t1 - t0) / 1e9;

	/* memory with every namespace and process in place, timers not yet */
	sleep_ns(300 * NSEC_PER_MSEC);
	read_meminfo(&m1);
	if (r->created) {
		r->kmem_per_ns = 1024.0 * ((m1.slab + m1.kstack + m1.pagetables) -
					   (m0.slab + m0.kstack + m0.pagetables)) / r->created;
		r->used_per_ns = 1024.0 * (m0.memfree - m1.memfree) / r->created;
	}

	/*
	 * Start the timers.  Warm-up: two host periods, at least 1 s, and
	 * 0.5 ms per namespace: on a saturated (emulated) machine thousands
	 * of runnable children need a while before each has run once.
	 */
	__atomic_store_n(&sh->phase, PH_RUN, __ATOMIC_RELEASE);
	futex_wake_all(&sh->phase);
	w = host_period * 2;
	if (w < NSEC_PER_SEC)
		w = NSEC_PER_SEC;
	if (w < r->created * NSEC_PER_MSEC / 2)
		w = r->created * NSEC_PER_MSEC / 2;
	sleep_ns(w);

	/* enough host time for min_samples expiries in total, within reason */
	w = (i64)(window_min * NSEC_PER_SEC);
	if (r->created && (i64)(min_samples * host_period / r->created) > w)
		w = min_samples * host_period / r->created;
	if (w > 30 * NSEC_PER_SEC)
		w = 30 * NSEC_PER_SEC;
	read_stat(&busy0, &tot0);
	t0 = now_ns(CLOCK_MONOTONIC);
	__atomic_store_n(&sh->phase, PH_MEASURE, __ATOMIC_RELEASE);
	sleep_ns(w);
	__atomic_store_n(&sh->phase, PH_RUN, __ATOMIC_RELEASE);
	t1 = now_ns(CLOCK_MONOTONIC);
	read_stat(&busy1, &tot1);
	r->window_s = (t1 - t0) / 1e9;
	/* one more expiry each closes the children's CPU accounts */
	t0 = now_ns(CLOCK_MONOTONIC);
	for (;;) {
		for (i = 0; i < r->created; i++)
			if (!__atomic_load_n(&sh->c[i].cpu_done, __ATOMIC_ACQUIRE))
				break;
		if (i == r->created || now_ns(CLOCK_MONOTONIC) - t0 > 2 * host_period + NSEC_PER_SEC)
			break;
		sleep_ns(5 * NSEC_PER_MSEC);
	}
	if (tot1 > tot0 && r->created) {
		/* busy share of all CPUs -> CPUs' worth, then per namespace */
		r->busy_cpus = (double)(busy1 - busy0) / (tot1 - tot0) * ncpus;
		r->cpu_pct_per_ns = 100.0 * r->busy_cpus / r->created;
	}

	t0 = now_ns(CLOCK_MONOTONIC);
	for (i = 0; i < r->created; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < r->created; i++)
		while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
			;
	t1 = now_ns(CLOCK_MONOTONIC);
	r->teardown_s = (t1 - t0) / 1e9;

	r->samples = sh->samples;
	r->overruns = sh->overruns;
	r->early = sh->early;
	r->errors = sh->errors;
	r->expected = (u64)(r->window_s * 1e9 / host_period * r->created);
	{
		u64 cpu = 0, fires = 0;

		for (i = 0; i < r->created; i++) {
			if (!sh->c[i].ever)
				r->silent++;
			if (!sh->c[i].fires)
				r->quiet++;
			if (sh->c[i].cpu_done && sh->c[i].fires) {
				cpu += sh->c[i].cpu1 - sh->c[i].cpu0;
				fires += sh->c[i].fires;
			}
		}
		r->task_us_per_fire = fires ? cpu / 1e3 / fires : -1;
	}
	r->p50 = percentile(sh->hist, sh->samples, 0.50);
	r->p99 = percentile(sh->hist, sh->samples, 0.99);
	r->pmax = -1;
	for (b = NBUCKETS - 1; b >= 0; b--)
		if (sh->hist[b]) {
			r->pmax = bucket_mid(b);
			break;
		}
	/*
	 * Namespaces that never fired are reported ("sat": the CPUs could
	 * not run them all) but are no failure of the run: that is a matter
	 * of CPU, and the figures are still right.  Early wake-ups are.
	 */
	r->ok = r->created == n && !r->errors && !r->early && r->samples;
	free(pids);
	return 0;
}

static void print_row(const struct result *r)
{
	printf("%6d %-7s %9.0f %10.0f %8.1f %8.1f %5.2f %9.4f %8.1f %8.1f %8.1f %9.1f %6.1f%% %s\n",
	       r->n, r->dilated ? "dilated" : "offset",
	       r->create_s > 0 ? r->created / r->create_s : 0,
	       r->teardown_s > 0 ? r->created / r->teardown_s : 0,
	       r->kmem_per_ns / 1024, r->used_per_ns / 1024, r->busy_cpus,
	       r->cpu_pct_per_ns, r->task_us_per_fire, r->p50 / 1e3, r->p99 / 1e3, r->pmax / 1e3,
	       r->expected ? 100.0 * r->samples / r->expected : 0,
	       !r->ok ? "FAIL" : r->silent ? "sat" : "ok");
	fflush(stdout);
}

static void print_result(const struct result *r)
{
	printf("# result mode=%s n=%d created=%d create_s=%.3f teardown_s=%.3f "
	       "kmem_per_ns=%.0f used_per_ns=%.0f window_s=%.2f busy_cpus=%.3f "
	       "cpu_pct_per_ns=%.5f task_us_per_fire=%.2f p50_us=%.1f p99_us=%.1f max_us=%.1f samples=%llu "
	       "expected=%llu overruns=%llu early=%llu errors=%d silent=%d quiet=%d ok=%d\n",
	       r->dilated ? "dilated" : "offset", r->n, r->created, r->create_s,
	       r->teardown_s, r->kmem_per_ns, r->used_per_ns, r->window_s, r->busy_cpus,
	       r->cpu_pct_per_ns, r->task_us_per_fire, r->p50 / 1e3, r->p99 / 1e3,
	       r->pmax / 1e3, r->samples,
	       r->expected, r->overruns, r->early, r->errors, r->silent, r->quiet, r->ok);
}

static void usage(void)
{
	fprintf(stderr, "usage: timens_scale [-n N[,N...]] [-t TDF] [-p PERIOD_MS] [-w SECONDS]\n"
			"                    [-m both|dilated|offset] [-S MIN_SAMPLES]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct result res[64][2];
	int ns[64], nn = 0, maxn = 0, i, m, opt, modes = 3, all_ok = 1;
	char *list = "10,100,1000", *s, *tok;
	struct sched_param sp = { .sched_priority = 1 };

	tdf_str = "10";
	while ((opt = getopt(argc, argv, "n:t:p:w:m:S:")) != -1) {
		switch (opt) {
		case 'n': list = optarg; break;
		case 't': tdf_str = optarg; break;
		case 'p': period_ns = (i64)(atof(optarg) * NSEC_PER_MSEC); break;
		case 'w': window_min = atof(optarg); break;
		case 'S': min_samples = strtoull(optarg, NULL, 10); break;
		case 'm':
			if (!strcmp(optarg, "both"))
				modes = 3;
			else if (!strcmp(optarg, "offset"))
				modes = 1;
			else if (!strcmp(optarg, "dilated"))
				modes = 2;
			else
				usage();
			break;
		default: usage();
		}
	}
	/* the factor as a number, for the host period of the offset-only runs */
	if (strchr(tdf_str, '/'))
		tdf_val = atof(tdf_str) / atof(strchr(tdf_str, '/') + 1);
	else
		tdf_val = atof(tdf_str);
	if (tdf_val <= 0 || period_ns <= 0)
		usage();
	for (s = list; (tok = strtok(s, ",")) && nn < 64; s = NULL) {
		ns[nn] = atoi(tok);
		if (ns[nn] <= 0)
			usage();
		if (ns[nn] > maxn)
			maxn = ns[nn];
		nn++;
	}
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);

	sh_size = sizeof(*sh) + (size_t)maxn * sizeof(sh->c[0]);
	sh = mmap(NULL, sh_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("timens_scale: mmap");
		return 1;
	}
	/*
	 * The parent creates, measures and kills at real-time priority, so
	 * that N busy children do not stretch its windows or slow the
	 * teardown; the children go back to SCHED_OTHER on fork.
	 */
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp))
		fprintf(stderr, "timens_scale: no SCHED_FIFO (%s), timings may stretch\n",
			strerror(errno));

	printf("# timens_scale: TDF %s, period %.1f ms of namespace time (offset-only: %.1f ms of host time),"
	       " %d CPUs\n", tdf_str, period_ns / 1e6, period_ns * tdf_val / 1e6, ncpus);
	printf("# kmem = Slab+KernelStack+PageTables growth, used = MemFree fall, per namespace;"
	       " cpu = host CPU per namespace in %% of one CPU\n# (/proc/stat, all CPUs);"
	       " us/fire = the children's own CPU time per expiry;\n"
	       "# busy = CPUs busy in the window; lateness in us of namespace time;"
	       " fired = expiries seen / expected;\n"
	       "# sat = CPU saturated: some namespaces never fired (the run is still valid)\n");
	printf("%6s %-7s %9s %10s %8s %8s %5s %9s %8s %8s %8s %9s %7s\n", "N", "mode", "create/s",
	       "teardown/s", "kmem KiB", "used KiB", "busy", "cpu %/ns", "us/fire", "p50 us", "p99 us",
	       "max us", "fired");
	for (i = 0; i < nn; i++) {
		for (m = 0; m < 2; m++) {
			if (!(modes & (1 << m)))
				continue;
			if (run(ns[i], m, &res[i][m]))
				return 1;
			print_row(&res[i][m]);
			if (!res[i][m].ok)
				all_ok = 0;
		}
		if (modes == 3)
			printf("%6d %-7s %9s %10s %8.1f %8.1f %5s %9.4f %8.1f  (dilated - offset;"
			       " p99 in host time: dilated/offset %.2f)\n",
			       ns[i], "diff", "", "",
			       (res[i][1].kmem_per_ns - res[i][0].kmem_per_ns) / 1024,
			       (res[i][1].used_per_ns - res[i][0].used_per_ns) / 1024,
			       "", res[i][1].cpu_pct_per_ns - res[i][0].cpu_pct_per_ns,
			       res[i][1].task_us_per_fire - res[i][0].task_us_per_fire,
			       res[i][0].p99 > 0 ? res[i][1].p99 * tdf_val / res[i][0].p99 : 0);
	}
	for (i = 0; i < nn; i++)
		for (m = 0; m < 2; m++)
			if (modes & (1 << m))
				print_result(&res[i][m]);
	return all_ok ? 0 : 1;
}
