// SPDX-License-Identifier: GPL-2.0
/*
 * ftbench: our dilated time namespace against libfaketime, in one run.
 *
 * Cost: one "ftprobe loop" worker per mechanism -- root time namespace,
 * offset-only time namespace, dilated time namespace (TDF 10), libfaketime
 * (LD_PRELOAD, FAKETIME="+0 x0.1") with its cache and with
 * FAKETIME_NO_CACHE=1 -- all pinned to one CPU.  Every round the parent asks
 * each worker in turn (order rotated every round) for an empty batch and a
 * batch of N libc clock_gettime(CLOCK_MONOTONIC) calls, and times both with
 * its own CLOCK_MONOTONIC: the parent stays in the root time namespace and
 * is not preloaded, while the workers' clocks are dilated or faked and
 * could not time themselves.  ns/call = (batch - median empty) / N; reported: the
 * median and minimum over the rounds, ratios of the medians against the
 * root and the offset-only namespace, "paired" ratios (median over rounds
 * of the ratio within the round), and the rate of each worker's clock
 * (its last reading of the first and last batch against host time), which
 * shows the benchmarked clocks really run at 1/TDF.
 *
 * "Dilated at all": each mechanism runs a dynamically linked C program
 * (ftprobe), the same program linked with gcc -static (ftprobe-static) and
 * a CGO_ENABLED=0 Go program (ftgoprobe).  The program reads its clocks,
 * says "ready", and the parent holds it for S seconds of host time before
 * releasing it; rate = inside interval / host interval.  Latency only adds
 * to the inside interval, so the rate is at least the true one: "yes" for
 * [0.97, 1.3] / TDF, "no" for [0.97, 1.3], anything else is "?" and is
 * measured again (3 attempts).
 *
 * Usage: ftbench [-t TDF] [-n CALLS] [-r ROUNDS] [-s SECONDS] [-c CPU] [-C] [-M]
 *   -C: no cost benchmark, -M: no matrix.  Needs root (CLONE_NEWTIME).
 * Machine-readable lines start with "result ".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
# define CLONE_NEWTIME	0x00000080
#endif

#define LIBFAKETIME	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

enum mech { M_ROOT, M_OFFSET, M_DILATED, M_FT, M_FTNC, NMECH };

static const char *const mech_name[NMECH] = {
	"root", "offset", "dilated", "faketime", "faketime-nocache",
};

static const char *const mech_desc[NMECH] = {
	"root time namespace",
	"offset-only time namespace",
	"dilated time namespace",
	"libfaketime, cache",
	"libfaketime, FAKETIME_NO_CACHE=1",
};

struct proc {
	pid_t pid;
	int in;		/* we write its stdin */
	int out;	/* we read its stdout */
};

static const char *tdf_s = "10";
static double tdf = 10;
static char ft_spec[64];
static char dir[PATH_MAX];

static int64_t host_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t len = strlen(s);

	if (fd < 0)
		return -1;
	if (write(fd, s, len) != len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/*
 * Child side of spawn(): a time namespace only takes effect for children of
 * the task that unshared it, so the namespace mechanisms unshare here and
 * fork once more; this intermediate waits for the program and passes on its
 * status, which keeps the parent in the root namespace and its waitpid()
 * meaningful.
 */
static void child(enum mech m, char *const argv[])
{
	int st;
	pid_t pid;

	switch (m) {
	case M_FTNC:
		setenv("FAKETIME_NO_CACHE", "1", 1);
		/* fall through */
	case M_FT:
		setenv("LD_PRELOAD", LIBFAKETIME, 1);
		setenv("FAKETIME", ft_spec, 1);
		break;
	case M_OFFSET:
	case M_DILATED:
		if (unshare(CLONE_NEWTIME)) {
			perror("ftbench: unshare(CLONE_NEWTIME) (need root)");
			_exit(126);
		}
		/* the same offsets as bench/timens_bench: monotonic 1 d, boottime 2 d */
		if (write_file("/proc/self/timens_offsets", "1 86400 0\n7 172800 0")) {
			perror("ftbench: timens_offsets");
			_exit(126);
		}
		if (m == M_DILATED && write_file("/proc/self/timens_dilation", tdf_s)) {
			perror("ftbench: timens_dilation");
			_exit(126);
		}
		pid = fork();
		if (pid < 0)
			_exit(126);
		if (pid > 0) {
			while (waitpid(pid, &st, 0) < 0)
				if (errno != EINTR)
					_exit(126);
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		}
		break;
	default:
		break;
	}
	execv(argv[0], argv);
	fprintf(stderr, "ftbench: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static int spawn(enum mech m, const char *prog, const char *arg, int cpu, struct proc *p)
{
	char path[PATH_MAX + 64];
	char *argv[] = { path, (char *)arg, NULL };
	int in[2], out[2];

	snprintf(path, sizeof(path), "%s/%s", dir, prog);
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	fflush(NULL);
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		if (cpu >= 0) {
			cpu_set_t s;

			CPU_ZERO(&s);
			CPU_SET(cpu, &s);
			sched_setaffinity(0, sizeof(s), &s);
		}
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(126);
		/*
		 * the namespace mechanisms keep an intermediate process that
		 * never execs: it must not hold the other workers' pipes, or
		 * they would never see EOF
		 */
		close_range(3, ~0U, 0);
		child(m, argv);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	return 0;
}

static int finish(struct proc *p)
{
	int st;

	close(p->in);
	close(p->out);
	while (waitpid(p->pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int rw_full(int wr, int fd, void *buf, size_t len)
{
	char *b = buf;

	while (len) {
		ssize_t r = wr ? write(fd, b, len) : read(fd, b, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		len -= r;
	}
	return 0;
}

/* one batch of n calls in worker p: host ns, and the worker's last reading */
static int64_t batch(struct proc *p, uint64_t n, int64_t *last)
{
	int64_t t0 = host_ns();

	if (rw_full(1, p->in, &n, sizeof(n)) || rw_full(0, p->out, last, sizeof(*last))) {
		fprintf(stderr, "ftbench: worker %d died\n", (int)p->pid);
		exit(1);
	}
	return host_ns() - t0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	double c[n];

	memcpy(c, v, sizeof(c));
	qsort(c, n, sizeof(*c), cmp_d);
	return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

static double minimum(double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static int cost(int have_dil, uint64_t n, int rounds, int cpu)
{
	struct proc w[NMECH];
	double ns[NMECH][rounds], empty[NMECH][rounds], med[NMECH], rate[NMECH], pr[NMECH], po[NMECH];
	int64_t h0[NMECH], c0[NMECH], h1[NMECH], c1[NMECH], last;
	cpu_set_t s;
	int m, r, k;

	/* the parent on the workers' CPU: a batch is a hand-over, not a race */
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
	for (m = 0; m < NMECH; m++) {
		if (m == M_DILATED && !have_dil)
			continue;
		if (spawn(m, "ftprobe", "loop", cpu, &w[m]))
			return perror("ftbench: spawn"), 1;
		/* warm-up: libfaketime reads its settings at the first call */
		batch(&w[m], n, &last);
		h0[m] = host_ns();
		c0[m] = last;
	}
	printf("cost: %d rounds of %llu libc clock_gettime(CLOCK_MONOTONIC) calls per mechanism, on CPU %d, timed from the root namespace\n",
	       rounds, (unsigned long long)n, cpu);
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < NMECH; k++) {
			int64_t e, b;

			m = (k + r) % NMECH;
			if (m == M_DILATED && !have_dil)
				continue;
			e = batch(&w[m], 0, &last);
			b = batch(&w[m], n, &last);
			h1[m] = host_ns();
			c1[m] = last;
			empty[m][r] = e;
			ns[m][r] = b;
		}
	}
	/*
	 * subtract the worker's median empty round trip, not the round's own:
	 * on a loaded host one preempted empty trip would otherwise swamp
	 * (even turn negative) the batch next to it
	 */
	for (m = 0; m < NMECH; m++) {
		double e;

		if (m == M_DILATED && !have_dil)
			continue;
		e = median(empty[m], rounds);
		for (r = 0; r < rounds; r++)
			ns[m][r] = (ns[m][r] - e) / n;
	}
	for (m = 0; m < NMECH; m++) {
		if (m == M_DILATED && !have_dil)
			continue;
		med[m] = median(ns[m], rounds);
		rate[m] = (double)(c1[m] - c0[m]) / (h1[m] - h0[m]);
		finish(&w[m]);
	}
	/*
	 * paired ratios: median over rounds of the ratio within a round, whose
	 * batches are neighbours, so that slow drifts of a loaded host cancel
	 */
	for (m = 0; m < NMECH; m++) {
		double q[rounds];

		if (m == M_DILATED && !have_dil)
			continue;
		for (r = 0; r < rounds; r++)
			q[r] = ns[m][r] / ns[M_ROOT][r];
		pr[m] = median(q, rounds);
		for (r = 0; r < rounds; r++)
			q[r] = ns[m][r] / ns[M_OFFSET][r];
		po[m] = median(q, rounds);
	}
	printf("%-34s %9s %9s %8s %8s %8s %8s %10s\n", "mechanism", "ns/call", "min",
	       "x root", "paired", "x offset", "paired", "clock rate");
	for (m = 0; m < NMECH; m++) {
		if (m == M_DILATED && !have_dil)
			continue;
		printf("%-34s %9.1f %9.1f %8.2f %8.2f %8.2f %8.2f %10.4f\n", mech_desc[m], med[m],
		       minimum(ns[m], rounds), med[m] / med[M_ROOT], pr[m],
		       med[m] / med[M_OFFSET], po[m], rate[m]);
	}
	for (m = 0; m < NMECH; m++) {
		if (m == M_DILATED && !have_dil)
			continue;
		printf("result cost mech=%s ns_per_call=%.1f min=%.1f vs_root=%.3f vs_root_paired=%.3f vs_offset=%.3f vs_offset_paired=%.3f rate=%.5f\n",
		       mech_name[m], med[m], minimum(ns[m], rounds), med[m] / med[M_ROOT], pr[m],
		       med[m] / med[M_OFFSET], po[m], rate[m]);
	}
	/* back to all CPUs for the matrix */
	CPU_ZERO(&s);
	for (k = 0; k < CPU_SETSIZE; k++)
		CPU_SET(k, &s);
	sched_setaffinity(0, sizeof(s), &s);
	return 0;
}

/* read a line from fd (unbuffered: the child's output is small), wait <= secs */
static int read_line(int fd, char *buf, size_t len, int secs)
{
	size_t n = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (n + 1 < len) {
		int r = poll(&p, 1, secs * 1000);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || read(fd, buf + n, 1) != 1)
			break;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	return n && buf[n - 1] == '\n' ? 0 : -1;
}

static const char *verdict(double rate)
{
	if (rate >= 0.97 / tdf && rate <= 1.3 / tdf)
		return "yes";
	if (rate >= 0.97 && rate <= 1.3)
		return "no";
	return "?";
}

/* one hold of secs host seconds; rates of the program's two clocks */
static int hold(enum mech m, const char *prog, double secs, double *mono, double *real)
{
	struct proc p;
	char line[128];
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	int64_t h0, h1;
	double im, ir;
	int ok;

	if (spawn(m, prog, "rate", -1, &p))
		return -1;
	ok = !read_line(p.out, line, sizeof(line), 60) && !strcmp(line, "ready\n");
	if (ok) {
		h0 = host_ns();
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
		h1 = host_ns();
		ok = write(p.in, "go\n", 3) == 3 &&
		     !read_line(p.out, line, sizeof(line), 60) &&
		     sscanf(line, "mono %lf real %lf", &im, &ir) == 2;
	} else {
		kill(p.pid, SIGKILL);
	}
	if (finish(&p) || !ok)
		return -1;
	*mono = im / ((h1 - h0) / 1e9);
	*real = ir / ((h1 - h0) / 1e9);
	return 0;
}

static int matrix(int have_dil, double secs)
{
	static const struct { const char *prog, *name, *desc; } progs[] = {
		{ "ftprobe", "dynamic-c", "dynamic C" },
		{ "ftprobe-static", "static-c", "static C" },
		{ "ftgoprobe", "go", "Go (CGO_ENABLED=0)" },
	};
	static const enum mech mechs[] = { M_DILATED, M_FT };
	char cell[2][3][48];
	int i, j, a;

	printf("\ndilated at all? (clock rate against the host over %.1f s of host time; yes: 1/%s)\n",
	       secs, tdf_s);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < 3; j++) {
			double mono = -1, real = -1;
			const char *vm = "?", *vr = "?", *v;

			snprintf(cell[i][j], sizeof(cell[i][j]), "-");
			if (mechs[i] == M_DILATED && !have_dil)
				continue;
			for (a = 1; a <= 3; a++) {
				if (hold(mechs[i], progs[j].prog, secs, &mono, &real)) {
					mono = real = -1;
					vm = vr = "?";
					continue;
				}
				vm = verdict(mono);
				vr = verdict(real);
				if (strcmp(vm, "?") && !strcmp(vm, vr))
					break;
			}
			/* both clocks must agree for a plain answer */
			v = !strcmp(vm, vr) ? vm : "mixed";
			snprintf(cell[i][j], sizeof(cell[i][j]), "%s (%.3f)", v, mono);
			printf("result matrix mech=%s prog=%s dilated=%s mono_rate=%.4f real_rate=%.4f attempts=%d\n",
			       mech_name[mechs[i]], progs[j].name, v, mono, real, a > 3 ? 3 : a);
		}
	}
	printf("%-34s %-20s %-20s %-20s\n", "", progs[0].desc, progs[1].desc, progs[2].desc);
	for (i = 0; i < 2; i++) {
		char label[128];

		if (i)
			snprintf(label, sizeof(label), "libfaketime '%s'", ft_spec);
		else
			snprintf(label, sizeof(label), "time namespace, TDF %s", tdf_s);
		printf("%-34s %-20s %-20s %-20s\n", label, cell[i][0], cell[i][1], cell[i][2]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int opt, rounds = 21, cpu = -1, do_cost = 1, do_matrix = 1, have_dil;
	uint64_t n = 100000;
	double secs = 2;
	char exe[PATH_MAX];
	ssize_t len;

	while ((opt = getopt(argc, argv, "t:n:r:s:c:CM")) != -1) {
		switch (opt) {
		case 't': tdf_s = optarg; break;
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 's': secs = atof(optarg); break;
		case 'c': cpu = atoi(optarg); break;
		case 'C': do_cost = 0; break;
		case 'M': do_matrix = 0; break;
		default:
			fprintf(stderr, "usage: %s [-t TDF] [-n CALLS] [-r ROUNDS] [-s SECONDS] [-c CPU] [-C] [-M]\n",
				argv[0]);
			return 2;
		}
	}
	tdf = atof(tdf_s);
	if (tdf <= 0 || n < 1 || rounds < 1 || secs <= 0) {
		fprintf(stderr, "ftbench: bad option value\n");
		return 2;
	}
	/* libfaketime's factor is a speed: TDF 10 is x0.1 */
	snprintf(ft_spec, sizeof(ft_spec), "+0 x%g", 1 / tdf);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0)
		return perror("ftbench: /proc/self/exe"), 1;
	exe[len] = 0;
	snprintf(dir, sizeof(dir), "%s", dirname(exe));
	if (access(LIBFAKETIME, R_OK)) {
		fprintf(stderr, "ftbench: %s missing (Debian package libfaketime)\n", LIBFAKETIME);
		return 1;
	}
	if (cpu < 0)
		cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	have_dil = !access("/proc/self/timens_dilation", F_OK);
	printf("ftbench: TDF %s against libfaketime FAKETIME='%s' (%s)\n", tdf_s, ft_spec, LIBFAKETIME);
	if (!have_dil)
		printf("ftbench: NOTE: kernel without /proc/PID/timens_dilation: the dilated namespace is skipped\n");
	if (do_cost && cost(have_dil, n, rounds, cpu))
		return 1;
	if (do_matrix && matrix(have_dil, secs))
		return 1;
	return 0;
}
