// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input to /proc/PID/timens_dilation: every write either sets exactly
 * the factor the documented grammar gives, or fails with a clean errno and
 * changes nothing.
 *
 * The grammar (docs/interface.md): a decimal "N" or "N.F" (N: 1 to 10
 * digits, at most 10^9; F: 1 to 9 digits) or a ratio "N/D" (each 1 to 10
 * digits, 1 to 10^9), optionally followed by one newline, nothing else (no
 * NUL, no sign, no blank), fewer than 32 bytes, at offset 0, with a value in
 * [1/1000, 1000]. A reference parser in this file decides each case; the
 * factor read back after each write must be the reference's reduced
 * fraction, or the previous factor after a failure.
 *
 * Cases: structured strings around every rule; FUZZ_WRITES (default 100000)
 * random ones, half built from the grammar's pieces and half random bytes;
 * writes at offsets other than 0 (pwrite: ESPIPE, as for any seq_file;
 * lseek + write: EINVAL); partial and repeated writes on one fd; a
 * buffer that faults (wholly or in its second half); a target that exited
 * (fd opened before: ESRCH; path opened after: ENOENT); the initial time
 * namespace (EPERM); four concurrent writers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest.h"
#include "timens_dilation_util.h"

typedef unsigned long long u64;

#define BASELINE	"7/3"

static char wpath[64];
static pid_t target;

/* ---- the reference: what the kernel must accept, and as what ---- */

static int digits(const char **s, u64 *v, int max)
{
	int n = 0;

	while (**s >= '0' && **s <= '9') {
		if (++n > max)
			return -1;
		*v = *v * 10 + (u64)(**s - '0');
		(*s)++;
	}
	return n;
}

static u64 gcd(u64 a, u64 b)
{
	while (b) {
		u64 t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* 1 and the reduced factor if @buf[0..len) is valid, else 0 */
static int reference(const char *buf, size_t len, u64 *num, u64 *den)
{
	char s0[64];
	const char *s = s0;
	u64 n = 0, d = 1, g;
	int k;

	if (len == 0 || len >= 32 || memchr(buf, '\0', len))
		return 0;
	memcpy(s0, buf, len);
	s0[len] = '\0';
	if (digits(&s, &n, 10) <= 0 || n > 1000000000ULL)
		return 0;
	if (*s == '/') {
		s++;
		d = 0;
		if (digits(&s, &d, 10) <= 0 || !d || d > 1000000000ULL)
			return 0;
	} else if (*s == '.') {
		s++;
		k = digits(&s, &n, 9);
		if (k <= 0)
			return 0;
		while (k--)
			d *= 10;
	}
	if (*s == '\n')
		s++;
	if (*s || !n || !d)
		return 0;
	if (n > d * 1000 || d > n * 1000)
		return 0;
	g = gcd(n, d);
	*num = n / g;
	*den = d / g;
	return 1;
}

/* ---- the kernel ---- */

static void fraction(char *out, size_t sz, u64 n, u64 d)
{
	if (d == 1)
		snprintf(out, sz, "%llu\n", n);
	else
		snprintf(out, sz, "%llu/%llu\n", n, d);
}

/*
 * write @len bytes on a new fd: at offset 0 with write(); at @off > 0 with
 * pwrite() if @how is 'p' (a seq_file refuses pwrite: ESPIPE), else after
 * lseek(). 0 or -errno (-EMSGSIZE: a short write, a bug of its own).
 */
static int write_how(const void *buf, size_t len, off_t off, char how)
{
	return dil_write_at(target, buf, len, off, how == 'p');
}

static int write_at(const void *buf, size_t len, off_t off)
{
	return write_how(buf, len, off, 'l');
}

static void set_baseline(void)
{
	if (write_at(BASELINE, strlen(BASELINE), 0))
		ksft_exit_fail_msg("cannot set the baseline factor %s: %s\n", BASELINE,
				   strerror(errno));
}

static void show(char *out, size_t sz, const char *buf, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len && o + 5 < sz; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c >= 0x21 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, sz - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

/*
 * One write checked against the reference: 0 if the kernel agreed. @state
 * holds the factor as read back, and is updated.
 */
static int check_write(const char *buf, size_t len, char *state, char *why, size_t wsz)
{
	char want[48], got[48], shown[200];
	u64 n, d;
	int ok = reference(buf, len, &n, &d);
	int err = write_at(buf, len, 0);

	if (ok)
		fraction(want, sizeof(want), n, d);
	else
		strcpy(want, state);
	if (dil_read(target, got, sizeof(got))) {
		snprintf(why, wsz, "read back failed");
		return -1;
	}
	show(shown, sizeof(shown), buf, len);
	strcpy(state, got);	/* what the next write is checked against, right or wrong */
	if (ok && err) {
		snprintf(why, wsz, "'%s' (%zu bytes) is valid (%s) but failed: %s", shown, len,
			 strtok(want, "\n"), strerror(-err));
		return -1;
	}
	if (!ok && err != -EINVAL) {
		snprintf(why, wsz, "'%s' (%zu bytes) is invalid but %s%s", shown, len,
			 err ? "failed with " : "was accepted",
			 err ? strerror(-err) : "");
		return -1;
	}
	if (strcmp(got, want)) {
		got[strcspn(got, "\n")] = '\0';
		want[strcspn(want, "\n")] = '\0';
		snprintf(why, wsz, "after '%s' the factor reads %s, want %s", shown, got, want);
		return -1;
	}
	return 0;
}

/* ---- generators ---- */

static unsigned int seed = 12345;

static int rnd(int n)
{
	return rand_r(&seed) % n;
}

static size_t gen_digits(char *p, int max)
{
	int k = 1 + rnd(max), i;

	for (i = 0; i < k; i++)
		p[i] = (char)('0' + (i == 0 && rnd(4) ? 1 + rnd(9) : rnd(10)));
	return (size_t)k;
}

/* a string from the grammar's pieces, then sometimes broken */
static size_t gen_structured(char *b)
{
	static const char junk[] = "\n\0 ./-+exX,;:\t9";
	size_t len = gen_digits(b, rnd(8) ? 4 : 11);

	switch (rnd(3)) {
	case 0:
		b[len++] = '/';
		len += gen_digits(b + len, rnd(8) ? 4 : 11);
		break;
	case 1:
		b[len++] = '.';
		len += gen_digits(b + len, rnd(8) ? 4 : 10);
		break;
	}
	if (rnd(2))
		b[len++] = '\n';
	if (!rnd(4)) {		/* a broken one: insert, replace or append a junk byte */
		size_t at = (size_t)rnd((int)len + 1);
		char c = junk[rnd(sizeof(junk) - 1)];

		switch (rnd(3)) {
		case 0:
			memmove(b + at + 1, b + at, len - at);
			b[at] = c;
			len++;
			break;
		case 1:
			if (at < len)
				b[at] = c;
			break;
		default:
			b[len++] = c;
		}
	}
	return len;
}

static size_t gen_random(char *b)
{
	static const char alpha[] = "0123456789./\n\0 -+e";
	size_t len = (size_t)rnd(40), i;

	for (i = 0; i < len; i++)
		b[i] = rnd(3) ? alpha[rnd(sizeof(alpha) - 1)] : (char)rnd(256);
	return len;
}

/* ---- concurrent writers ---- */

static const char * const conc_values[] = { "10", "1/1000", "1000", "5/2", "x", "0", "3\n" };
#define NCONC	((int)(sizeof(conc_values) / sizeof(conc_values[0])))
static int conc_bad;

static void *conc_writer(void *arg)
{
	unsigned int s = (unsigned int)(uintptr_t)arg;
	int i;

	for (i = 0; i < 2000; i++) {
		const char *v = conc_values[rand_r(&s) % NCONC];
		int err = write_at(v, strlen(v), 0);
		u64 n, d;
		int ok = reference(v, strlen(v), &n, &d);

		if (ok ? err != 0 : err != -EINVAL)
			__atomic_store_n(&conc_bad, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(void)
{
	static const char *const bad[] = {
		"", "\n", "0", "0\n", "0/1", "1/0", "-1", "+1", "1001", "1/1001", "0.0009",
		"1000.000000001", "1e3", "0x10", " 10", "10 ", "10\n\n", "\n10", "10/", "/10",
		"1.", ".5", "1.2.3", "1.0000000001", "10000000000", "00000000001", "1/00000000001",
		"1000000001/1000000", "10/3/2", "abc", "nan", "inf", "1,5", "10\r", "10\t",
		"\xef\xbc\x91\xef\xbc\x90", "1001/1", "1/1000000000",
	};
	static const char *const good[][2] = {
		{ "10", "10" }, { "10\n", "10" }, { "2.5", "5/2" }, { "0.001", "1/1000" },
		{ "1000", "1000" }, { "1/1000", "1/1000" }, { "4/2", "2" }, { "1", "1" },
		{ "0000000010", "10" }, { "999/1", "999" }, { "1000000000/1000000000", "1" },
		{ "0.999999999", "999999999/1000000000" }, { "1000.000000000", "1000" },
		{ "1000000/1000000000", "1/1000" },
	};
	static const char embedded_nul[] = "10\0junk";
	int writes = 100000, fails = 0, i, fd, err, st;
	char state[48], why[400], b[64];
	const char *s;
	pid_t gone;

	ksft_print_header();
	if (access("/proc/self/timens_dilation", F_OK))
		ksft_exit_skip("kernel without time-namespace dilation (no /proc/self/timens_dilation)\n");
	s = getenv("FUZZ_WRITES");
	if (s && atoi(s) > 0)
		writes = atoi(s);
	ksft_set_plan(10);
	if (unshare(CLONE_NEWTIME))
		ksft_exit_fail_msg("unshare(CLONE_NEWTIME): %s\n", strerror(errno));
	target = fork();
	if (!target) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	snprintf(wpath, sizeof(wpath), "/proc/%d/timens_dilation", (int)target);
	set_baseline();
	if (dil_read(target, state, sizeof(state)) || strcmp(state, BASELINE "\n"))
		ksft_exit_fail_msg("baseline factor reads '%s'\n", state);

	/* 1: structured invalid strings */
	why[0] = '\0';
	for (i = 0, fails = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++)
		if (check_write(bad[i], strlen(bad[i]), state, why, sizeof(why)))
			fails++;
	ksft_test_result(!fails, "%zu malformed or out-of-range factors: EINVAL, nothing changed%s%s\n",
			 sizeof(bad) / sizeof(bad[0]), fails ? ": " : "", why);

	/* 2: structured valid strings read back reduced */
	for (i = 0, fails = 0; i < (int)(sizeof(good) / sizeof(good[0])); i++) {
		char want[48];

		if (check_write(good[i][0], strlen(good[i][0]), state, why, sizeof(why)))
			fails++;
		snprintf(want, sizeof(want), "%s\n", good[i][1]);
		if (strcmp(state, want))
			fails++;
	}
	ksft_test_result(!fails, "%zu valid factors read back reduced%s%s\n",
			 sizeof(good) / sizeof(good[0]), fails ? ": " : "", fails ? why : "");

	/* 3: an embedded NUL and long writes */
	set_baseline();
	strcpy(state, BASELINE "\n");
	fails = check_write(embedded_nul, sizeof(embedded_nul) - 1, state, why, sizeof(why)) ? 1 : 0;
	memset(b, '1', sizeof(b));
	if (!fails && check_write(b, 32, state, why, sizeof(why)))
		fails = 1;
	if (!fails && check_write("0000000000000000000000000000010", 31, state, why, sizeof(why)))
		fails = 1;
	ksft_test_result(!fails, "an embedded NUL (\"10\\0junk\") and 32 bytes: EINVAL%s%s\n",
			 fails ? ": " : "", fails ? why : "");

	/* 4: random writes, half from the grammar's pieces */
	set_baseline();
	strcpy(state, BASELINE "\n");
	{
		int accepted = 0, shown = 0;

		for (i = 0, fails = 0; i < writes; i++) {
			size_t len = i & 1 ? gen_random(b) : gen_structured(b);
			u64 n, d;

			if (check_write(b, len, state, why, sizeof(why))) {
				if (shown++ < 5)
					ksft_print_msg("random write %d: %s\n", i, why);
				fails++;
			}
			accepted += reference(b, len, &n, &d);
		}
		ksft_test_result(!fails, "%d random writes (%d valid): %d disagreed with the grammar\n",
				 writes, accepted, fails);
	}

	/* 5: offsets other than 0: pwrite (ESPIPE) or lseek + write (EINVAL) */
	set_baseline();
	strcpy(state, BASELINE "\n");
	fails = 0;
	for (i = 1; i < 40; i += 7) {
		int e1 = write_how("10", 2, i, 'p'), e2 = write_how("10", 2, i, 'l');

		if (!e1 || !e2 || (e1 != -ESPIPE && e1 != -EINVAL) || (e2 != -EINVAL && e2 != -ENXIO))
			fails++;
		if (dil_read(target, b, sizeof(b)) || strcmp(b, state))
			fails++;
		if (i == 1)
			ksft_print_msg("offset 1: pwrite %s, lseek + write %s\n", strerror(-e1), strerror(-e2));
	}
	ksft_test_result(!fails, "writes at offsets 1..36 (pwrite, lseek + write): clean errno, nothing changed\n");

	/* 6: partial and repeated writes on one fd: each write is a whole value */
	fails = 0;
	fd = open(wpath, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1 || dil_read(target, b, sizeof(b)) || strcmp(b, "1\n"))
		fails |= 1;
	if (write(fd, "0", 1) != -1 || errno != EINVAL || dil_read(target, b, sizeof(b)) || strcmp(b, "1\n"))
		fails |= 2;	/* "1" then "0" is not "10" */
	if (write(fd, "10", 2) != 2 || dil_read(target, b, sizeof(b)) || strcmp(b, "10\n"))
		fails |= 4;
	if (write(fd, "2", 1) != 1 || dil_read(target, b, sizeof(b)) || strcmp(b, "2\n"))
		fails |= 8;
	if (fd >= 0)
		close(fd);
	ksft_test_result(!fails, "writes on one fd are whole values, not pieces of one (0x%x)\n", fails);

	/* 7: a buffer that faults, wholly or in its second half */
	set_baseline();
	{
		long pg = sysconf(_SC_PAGESIZE);
		char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		fails = m == MAP_FAILED;
		if (!fails) {
			mprotect(m + pg, pg, PROT_NONE);
			memcpy(m + pg - 2, "10", 2);
			if (write_at(m + pg, 2, 0) != -EFAULT)
				fails |= 2;
			if (write_at(m + pg - 2, 4, 0) != -EFAULT)
				fails |= 4;
			if (dil_read(target, b, sizeof(b)) || strcmp(b, BASELINE "\n"))
				fails |= 8;
			munmap(m, 2 * pg);
		}
	}
	ksft_test_result(!fails, "a faulting buffer: EFAULT, nothing changed (0x%x)\n", fails);

	/* 8: a target that exited */
	gone = fork();
	if (!gone) {
		pause();
		_exit(0);
	}
	snprintf(b, sizeof(b), "/proc/%d/timens_dilation", (int)gone);
	fd = open(b, O_WRONLY | O_CLOEXEC);
	kill(gone, SIGKILL);
	waitpid(gone, &st, 0);
	fails = 0;
	if (fd < 0 || write(fd, "10", 2) != -1 || errno != ESRCH)
		fails |= 1;
	if (fd >= 0)
		close(fd);
	if (open(b, O_WRONLY | O_CLOEXEC) != -1 || errno != ENOENT)
		fails |= 2;
	ksft_test_result(!fails, "an exited target: ESRCH on an open fd, ENOENT on open (0x%x)\n", fails);

	/* 9: the initial time namespace is never dilated */
	err = 0;
	fd = open("/proc/1/timens_dilation", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "10", 2) != -1)
		err = 1;
	else if (errno != EPERM)
		err = errno;
	if (fd >= 0)
		close(fd);
	ksft_test_result(!err, "the initial time namespace (pid 1): EPERM (%s)\n",
			 err > 1 ? strerror(err) : err ? "accepted" : "ok");

	/* 10: four concurrent writers */
	{
		pthread_t t[4];

		for (i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, conc_writer, (void *)(uintptr_t)(i + 7));
		for (i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		fails = conc_bad;
		if (dil_read(target, b, sizeof(b)) ||
		    (strcmp(b, "10\n") && strcmp(b, "1/1000\n") && strcmp(b, "1000\n") &&
		     strcmp(b, "5/2\n") && strcmp(b, "3\n")))
			fails |= 2;
	}
	b[strcspn(b, "\n")] = '\0';
	ksft_test_result(!fails, "4 concurrent writers x 2000: clean errnos, ends on a written value (%s)\n", b);

	kill(target, SIGKILL);
	waitpid(target, &st, 0);
	ksft_finished();
}
