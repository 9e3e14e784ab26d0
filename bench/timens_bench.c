// SPDX-License-Identifier: GPL-2.0
/*
 * timens_bench: cost of clock_gettime(CLOCK_MONOTONIC) through the vDSO in
 *   (a) the root time namespace, (b) an offset-only time namespace,
 *   (c) a dilated time namespace (TDF 10 by default),
 * and the rate error of the dilated clock against the host, in ppm.
 *
 * Cost: one worker process per namespace, all pinned to the same CPU; the
 * parent asks each in turn (rotating the order every round) for a batch of N
 * vDSO calls and times the batch with the host clock, minus the measured
 * empty round trip.  Reported: median and minimum ns/call over the rounds,
 * and the ratios; the "paired" ratio is the median over rounds of the
 * per-round ratio (neighbouring batches, so slow drifts cancel).
 *
 * Rate: the parent (root namespace) and the dilated worker (on another CPU)
 * exchange readings through shared memory with spinning, so one exchange
 * takes well under a microsecond on real hardware; of many exchanges the
 * narrowest host bracket [h0, h1] is kept, at the start and after S seconds.
 * rate = (c_B - c_A) / host interval, error = rate * TDF - 1; the uncertainty
 * is the half-width of the host interval allowed by the brackets.
 *
 * Usage: timens_bench [-t TDF] [-r ROUNDS] [-s SECONDS] [-b BATCH_MS] [-c CPU] [-x]
 *   -x: on a kernel without dilation, run the rate-error part against an
 *       offset-only namespace (expected rate 1), to check the method itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>

#include "vdso_sym.h"
#include "pipe_io.h"

#ifndef CLONE_NEWTIME
# define CLONE_NEWTIME	0x00000080
#endif

typedef long long i64;
#define NSEC_PER_SEC	1000000000LL

static struct vdso_fns vdso;

static i64 now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (i64)t.tv_sec * NSEC_PER_SEC + t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	double *c = malloc(n * sizeof(*c)), m;

	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_d);
	m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return m;
}

static double minimum(double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

/* ---- the vDSO really answers in user space? (see selftests dilation.h) ---- */
static int vdso_userspace(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
#ifdef __x86_64__
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
#else
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_AARCH64, 1, 0),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 4000),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	struct timespec ts;
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(2);
		_exit(vdso.clock_gettime(CLOCK_MONOTONIC, &ts) == 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st) == 0 ? 1 : WEXITSTATUS(st) == 1 ? 0 : -1;
#else
	return -1;
#endif
}

/* ---- workers ---- */

enum { W_BATCH = 1, W_NOP, W_PROBE, W_SPIN_SERVE, W_READ };

struct wreq {
	int op;
	long n;
};

struct wresp {
	i64 v;
};

struct worker {
	const char *name;
	pid_t pid;
	int wfd, rfd;
	double overhead;	/* empty round trip, ns */
	double *ns;		/* per round ns/call */
	int ok;
};

/* shared memory for the spinning exchange */
struct spin {
	uint64_t req;
	uint64_t ack;
	i64 val;
	int stop;
};
static struct spin *sp;

static void worker_loop(int rfd, int wfd)
{
	struct wreq q;
	struct wresp r;
	struct timespec ts;
	long i;

	while (!read_full(rfd, &q, sizeof(q))) {
		r.v = 0;
		switch (q.op) {
		case W_BATCH:
			for (i = 0; i < q.n; i++) {
				vdso.clock_gettime(CLOCK_MONOTONIC, &ts);
				__asm__ __volatile__("" : : "r"(&ts) : "memory");
			}
			r.v = ts.tv_nsec;
			break;
		case W_NOP:
			break;
		case W_PROBE:
			r.v = vdso_userspace();
			break;
		case W_READ:
			vdso.clock_gettime(CLOCK_MONOTONIC, &ts);
			r.v = (i64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
			break;
		case W_SPIN_SERVE: {
			/* answer spinning requests until told to stop */
			uint64_t seen = __atomic_load_n(&sp->ack, __ATOMIC_ACQUIRE);

			while (!__atomic_load_n(&sp->stop, __ATOMIC_ACQUIRE)) {
				uint64_t rq = __atomic_load_n(&sp->req, __ATOMIC_ACQUIRE);

				if (rq == seen) {
#if defined(__x86_64__)
					__builtin_ia32_pause();
#endif
					continue;
				}
				if (q.n == 1)
					syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
				else
					vdso.clock_gettime(CLOCK_MONOTONIC, &ts);
				sp->val = (i64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
				__atomic_store_n(&sp->ack, rq, __ATOMIC_RELEASE);
				seen = rq;
			}
			break;
		}
		}
		if (write(wfd, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

static int worker_start(struct worker *w)
{
	int a[2], b[2];

	if (pipe(a) || pipe(b))
		return -1;
	fflush(stdout);
	w->pid = fork();
	if (w->pid < 0)
		return -1;
	if (w->pid == 0) {
		close(a[1]);
		close(b[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		worker_loop(a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	w->wfd = a[1];
	w->rfd = b[0];
	return 0;
}

static int wcall(struct worker *w, int op, long n, i64 *v)
{
	struct wreq q = { op, n };
	struct wresp r;

	if (write(w->wfd, &q, sizeof(q)) != sizeof(q) || read_full(w->rfd, &r, sizeof(r)))
		return -1;
	if (v)
		*v = r.v;
	return 0;
}

static double empty_rt(struct worker *w)
{
	double best = 1e18;
	int i;

	for (i = 0; i < 200; i++) {
		i64 a = now(CLOCK_MONOTONIC), b;

		wcall(w, W_NOP, 0, NULL);
		b = now(CLOCK_MONOTONIC);
		if (b - a < best)
			best = b - a;
	}
	return best;
}

static double batch_ns(struct worker *w, long n)
{
	i64 a = now(CLOCK_MONOTONIC), b;

	if (wcall(w, W_BATCH, n, NULL))
		return -1;
	b = now(CLOCK_MONOTONIC);
	return ((double)(b - a) - w->overhead) / n;
}

/* ---- rate of the dilated clock ---- */

struct br {
	i64 h0, h1, v;
};

/* narrowest of @tries exchanges */
static struct br exchange_spin(int tries)
{
	struct br best = { 0, LLONG_MAX / 2, 0 }, x;
	static uint64_t seq;
	int i;

	for (i = 0; i < tries; i++) {
		x.h0 = now(CLOCK_MONOTONIC);
		__atomic_store_n(&sp->req, ++seq, __ATOMIC_RELEASE);
		while (__atomic_load_n(&sp->ack, __ATOMIC_ACQUIRE) != seq)
#if defined(__x86_64__)
			__builtin_ia32_pause();
#else
			;
#endif
		x.v = sp->val;
		x.h1 = now(CLOCK_MONOTONIC);
		if (x.h1 - x.h0 < best.h1 - best.h0)
			best = x;
	}
	return best;
}

static struct br exchange_pipe(struct worker *w, int tries)
{
	struct br best = { 0, LLONG_MAX / 2, 0 }, x = { 0, 0, 0 };
	int i;

	for (i = 0; i < tries; i++) {
		x.h0 = now(CLOCK_MONOTONIC);
		wcall(w, W_READ, 0, &x.v);
		x.h1 = now(CLOCK_MONOTONIC);
		if (x.h1 - x.h0 < best.h1 - best.h0)
			best = x;
	}
	return best;
}

static int parse_tdf(const char *s, double *tdf)
{
	long long n, d;
	char *e;

	if (sscanf(s, "%lld/%lld", &n, &d) == 2 && d > 0) {
		*tdf = (double)n / d;
		return 0;
	}
	*tdf = strtod(s, &e);
	return e == s || *tdf <= 0;
}

static void usage(const char *p)
{
	fprintf(stderr, "usage: %s [-t TDF] [-r ROUNDS] [-s SECONDS] [-b BATCH_MS] [-c CPU] [-x]\n", p);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *tdf_s = "10";
	double tdf, secs = 3, batch_ms = 5;
	int rounds = 21, cpu = -1, ncpu, opt, i, k, have_dil, fd, selftest = 0;
	struct worker w[3] = { { .name = "root" }, { .name = "offset_only" }, { .name = "dilated" } };
	char dil_name[64], cs[64] = "?";
	long n;
	FILE *f;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "t:r:s:b:c:xh")) != -1) {
		switch (opt) {
		case 't': tdf_s = optarg; break;
		case 'r': rounds = atoi(optarg); break;
		case 's': secs = atof(optarg); break;
		case 'b': batch_ms = atof(optarg); break;
		case 'c': cpu = atoi(optarg); break;
		case 'x': selftest = 1; break;
		default: usage(argv[0]);
		}
	}
	if (parse_tdf(tdf_s, &tdf) || rounds < 1 || secs <= 0 || batch_ms <= 0)
		usage(argv[0]);
	snprintf(dil_name, sizeof(dil_name), "dilated_tdf%s", tdf_s);
	w[2].name = dil_name;

	vdso_init(&vdso);
	if (!vdso.clock_gettime) {
		printf("error: no vDSO clock_gettime found\n");
		return 1;
	}
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (fgets(cs, sizeof(cs), f))
			cs[strcspn(cs, "\n")] = '\0';
		fclose(f);
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpu < 0)
		cpu = ncpu - 1;
	have_dil = !access("/proc/self/timens_dilation", F_OK);

	/* (a) root */
	if (worker_start(&w[0]))
		return perror("fork"), 1;
	/* (b) offset-only */
	if (unshare(CLONE_NEWTIME))
		return perror("unshare(CLONE_NEWTIME) (need root)"), 1;
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0 || write(fd, "1 86400 0\n7 172800 0", 20) != 20)
		return perror("timens_offsets"), 1;
	close(fd);
	if (worker_start(&w[1]))
		return perror("fork"), 1;
	/* (c) dilated: same offsets, plus the TDF */
	if (have_dil) {
		if (unshare(CLONE_NEWTIME))
			return perror("unshare(CLONE_NEWTIME)"), 1;
		fd = open("/proc/self/timens_offsets", O_WRONLY);
		if (fd < 0 || write(fd, "1 86400 0\n7 172800 0", 20) != 20)
			return perror("timens_offsets"), 1;
		close(fd);
		fd = open("/proc/self/timens_dilation", O_WRONLY);
		if (fd < 0 || write(fd, tdf_s, strlen(tdf_s)) != (ssize_t)strlen(tdf_s))
			return perror("writing /proc/self/timens_dilation"), 1;
		close(fd);
		if (worker_start(&w[2]))
			return perror("fork"), 1;
	}

	printf("bench: kernel clocksource %s, %d CPUs online, cost measured on CPU %d, %d rounds of ~%.0f ms batches\n",
	       cs, ncpu, cpu, rounds, batch_ms);
	if (!have_dil)
		printf("bench: NOTE: kernel without /proc/PID/timens_dilation: the dilated namespace is skipped\n");

	/* all on one CPU for the cost part */
	pin(cpu);
	for (k = 0; k < 3; k++) {
		i64 u;

		if (k == 2 && !have_dil)
			continue;
		w[k].ok = 1;
		{
			cpu_set_t s;

			CPU_ZERO(&s);
			CPU_SET(cpu, &s);
			sched_setaffinity(w[k].pid, sizeof(s), &s);
		}
		wcall(&w[k], W_PROBE, 0, &u);
		printf("vdso_userspace %s: %s\n", w[k].name,
		       u == 1 ? "yes" : u == 0 ? "NO (falls back to the system call)" : "unknown (no seccomp)");
		w[k].ns = calloc(rounds, sizeof(double));
	}

	/* batch size: ~batch_ms in the root namespace */
	for (n = 1000;; n *= 2) {
		i64 a = now(CLOCK_MONOTONIC);

		wcall(&w[0], W_BATCH, n, NULL);
		if (now(CLOCK_MONOTONIC) - a >= batch_ms * 1e6 || n >= (1L << 30))
			break;
	}
	for (k = 0; k < 3; k++) {
		if (!w[k].ok)
			continue;
		wcall(&w[k], W_BATCH, n, NULL);		/* warm up */
		w[k].overhead = empty_rt(&w[k]);
	}
	printf("bench: batch %ld calls; empty round trip %.0f / %.0f / %.0f ns (subtracted)\n",
	       n, w[0].overhead, w[1].overhead, have_dil ? w[2].overhead : 0.0);

	for (i = 0; i < rounds; i++)
		for (k = 0; k < 3; k++) {
			int j = (i + k) % 3;	/* rotate the order */

			if (w[j].ok)
				w[j].ns[i] = batch_ns(&w[j], n);
		}

	for (k = 0; k < 3; k++) {
		if (!w[k].ok) {
			printf("ns_per_call %-20s n/a\n", w[k].name);
			continue;
		}
		printf("ns_per_call %-20s median %8.3f  min %8.3f\n", w[k].name,
		       median(w[k].ns, rounds), minimum(w[k].ns, rounds));
	}
	{
		double *r = calloc(rounds, sizeof(double));
		double med;

		for (i = 0; i < rounds; i++)
			r[i] = w[1].ns[i] / w[0].ns[i];
		printf("ratio offset_only/root: paired median %.4f, of medians %.4f, of mins %.4f\n",
		       median(r, rounds), median(w[1].ns, rounds) / median(w[0].ns, rounds),
		       minimum(w[1].ns, rounds) / minimum(w[0].ns, rounds));
		if (have_dil) {
			for (i = 0; i < rounds; i++)
				r[i] = w[2].ns[i] / w[1].ns[i];
			med = median(r, rounds);
			printf("ratio %s/offset_only: paired median %.4f, of medians %.4f, of mins %.4f\n",
			       w[2].name, med, median(w[2].ns, rounds) / median(w[1].ns, rounds),
			       minimum(w[2].ns, rounds) / minimum(w[1].ns, rounds));
			printf("target dilated/offset_only <= 1.10: %s (paired median %.4f)\n",
			       med <= 1.10 ? "PASS" : "FAIL", med);
		} else {
			printf("ratio dilated/offset_only: n/a\n");
		}
		free(r);
	}

	/* ---- rate error ---- */
	if (!have_dil && !selftest) {
		printf("rate_error %s: n/a\n", w[2].name);
		goto out;
	}
	if (!have_dil) {
		/* method self-test: the offset-only namespace, expected rate exactly 1 */
		tdf_s = "1";
		tdf = 1;
		w[2].name = "offset_only(method-selftest)";
		printf("bench: -x: rate-error part runs on an offset-only namespace, expected rate 1\n");
	}
	if (w[2].pid <= 0 && worker_start(&w[2]))
		return perror("fork"), 1;
	pin(cpu);
	{
		int spin = ncpu >= 2, m;
		int other = cpu == 0 ? 1 : 0;

		for (m = 0; m < 2; m++) {
			struct br A, B;
			long double dc, dmin, dmax, dmid, rate, err, unc;
			const char *how = m ? "syscall" : "vdso";

			if (spin) {
				/* worker spins on CPU @cpu, the parent on another one */
				cpu_set_t s;

				sp = mmap(NULL, sizeof(*sp), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
				if (sp == MAP_FAILED) {
					spin = 0;
				} else {
					memset(sp, 0, sizeof(*sp));
					/* the worker was forked before the mapping: start a fresh one */
					if (w[2].pid > 0) {
						kill(w[2].pid, SIGKILL);
						waitpid(w[2].pid, NULL, 0);
						close(w[2].wfd);
						close(w[2].rfd);
					}
					if (worker_start(&w[2]))
						return perror("fork"), 1;
					CPU_ZERO(&s);
					CPU_SET(cpu, &s);
					sched_setaffinity(w[2].pid, sizeof(s), &s);
					pin(other);
					{
						struct wreq q = { W_SPIN_SERVE, m };

						if (write(w[2].wfd, &q, sizeof(q)) != sizeof(q))
							return 1;
					}
				}
			}
			if (!spin && m == 1)
				break;
			A = spin ? exchange_spin(2000) : exchange_pipe(&w[2], 200);
			usleep((useconds_t)(secs * 1e6));
			B = spin ? exchange_spin(2000) : exchange_pipe(&w[2], 200);
			if (spin) {
				struct wresp r;

				__atomic_store_n(&sp->stop, 1, __ATOMIC_RELEASE);
				read_full(w[2].rfd, &r, sizeof(r));
				munmap(sp, sizeof(*sp));
			}
			dc = B.v - A.v;
			dmin = B.h0 - A.h1;
			dmax = B.h1 - A.h0;
			dmid = (dmin + dmax) / 2;
			rate = dc / dmid;
			err = (rate * tdf - 1) * 1e6L;
			unc = ((dmax - dmin) / 2 / dmid + 1.0L / dc) * 1e6L;
			printf("rate_error %s CLOCK_MONOTONIC %s: %+.3Lf ppm +- %.3Lf ppm (measured rate %.10Lf, expected 1/%s; %.1f s, brackets %lld/%lld ns, %s exchange)\n",
			       w[2].name, how, err, unc, rate, tdf_s, (double)dmid / 1e9,
			       A.h1 - A.h0, B.h1 - B.h0, spin ? "spinning shared-memory" : "pipe");
			printf("target rate error < 1 ppm (%s): %s\n", how,
			       fabsl(err) + unc < 1 ? "PASS" :
			       fabsl(err) - unc >= 1 ? "FAIL" : "INCONCLUSIVE (uncertainty too large: use -s)");
			if (!spin)
				break;
			pin(cpu);
		}
	}
out:
	for (k = 0; k < 3; k++)
		if (w[k].pid > 0) {
			kill(w[k].pid, SIGKILL);
			waitpid(w[k].pid, NULL, 0);
		}
	return 0;
}
