// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/PID/timens_dilation: read format, accepted and rejected writes
 * (EINVAL leaves the value unchanged), EPERM for the root time namespace and
 * without CAP_SYS_TIME in the user namespace owning the time namespace,
 * writes to a namespace that already has tasks, from outside and inside.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <linux/capability.h>
#include "dilation.h"

struct acc {
	const char *in;
	const char *out;	/* expected read, without "\n" */
};

static const struct acc accepted[] = {
	{ "10",			"10" },
	{ "2.5",		"5/2" },	/* 5/2 written as a decimal */
	{ "5/2",		"5/2" },
	{ "10/4",		"5/2" },	/* reduced */
	{ "0.001",		"1/1000" },
	{ "1/1000",		"1/1000" },
	{ "1000",		"1000" },
	{ "1000/1",		"1000" },
	{ "10\n",		"10" },
	{ "2.5\n",		"5/2" },
	{ "3/7",		"3/7" },
	{ "0.5",		"1/2" },
	{ "1",			"1" },
	{ "1.000000000",	"1" },		/* 9 fractional digits */
	{ "0.123456789",	"123456789/1000000000" },
	{ "1000000000/1000000000", "1" },	/* 10^9 parts */
	{ "1000000/1000000000",	"1/1000" },	/* lower bound as a big ratio */
	{ "1000000000/1000000",	"1000" },	/* upper bound as a big ratio */
	{ "1000.000000000",	"1000" },
};

static const char * const rejected[] = {
	"0", "-1", "1001", "1000.5", "0.0009", "abc", "1/0", "0/5", "", "\n",
	"10x", "2.5.1", "1/2000", "1001/1",
	"1000000001/1000000001",	/* parts > 10^9 */
	"2000000000/1000000000",
	"1.0000000001",			/* 10 fractional digits */
	"1000.000000001",		/* just above 1000 */
	"0.000999999",			/* just below 1/1000 */
	"1e3", "0.000",
};

#define KNOWN	"7/3"

/* ------------------------------------------------------------------ */
/* Running a check in a throwaway child                                 */

struct cres {
	int err;		/* 0 or errno of the operation */
	int where;		/* 0 setup, 1 open, 2 write */
	char s[64];		/* read back */
	char msg[128];
};

static void try_write(struct cres *r, const char *v);
static int unshare_userns_as_root(void);

/*
 * Runs in the caller's (dilated) time namespace: a time namespace created
 * there, owned by a new user namespace, has a factor of its own, relative
 * to the parent's (1 until written), which its owner may set before a task
 * enters; it composes with the parent's (dilation_nested checks the rates),
 * so it is no way out of the parent's dilation.
 */
static void c_inherit(struct cres *r)
{
	if (unshare_userns_as_root() || unshare(CLONE_NEWTIME)) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "skip: user/time namespace: %s", strerror(errno));
		return;
	}
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	try_write(r, "2");
}

static int run_child(void (*fn)(struct cres *), struct cres *out)
{
	int p[2], st;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (pipe(p))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct cres r;
		int fd;

		memset(&r, 0, sizeof(r));
		close(p[0]);
		/*
		 * Start from the host's time namespace: a time namespace
		 * created inside a dilated one inherits its clocks and factor,
		 * which c_inherit() tests on purpose.
		 */
		fd = open("/proc/1/ns/time", O_RDONLY);
		if (fn != c_inherit && (fd < 0 || setns(fd, CLONE_NEWTIME))) {
			r.err = errno;
			snprintf(r.msg, sizeof(r.msg), "setup: setns(root time namespace): %s",
				 strerror(errno));
		} else {
			fn(&r);
		}
		if (fd >= 0)
			close(fd);
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read_full(p[0], out, sizeof(*out))) {
		close(p[0]);
		waitpid(pid, &st, 0);
		snprintf(out->msg, sizeof(out->msg), "child died");
		return -1;
	}
	close(p[0]);
	waitpid(pid, &st, 0);
	return 0;
}

/* open and write separately, so that a DAC refusal (open) is told apart */
static void try_write(struct cres *r, const char *v)
{
	int fd = open("/proc/self/timens_dilation", O_WRONLY);
	ssize_t n;

	if (fd < 0) {
		r->err = errno;
		r->where = 1;
	} else {
		n = write(fd, v, strlen(v));
		r->err = n < 0 ? errno : ((size_t)n == strlen(v) ? 0 : EMSGSIZE);
		r->where = 2;
		close(fd);
	}
	if (dil_read(DIL_SELF, r->s, sizeof(r->s)))
		snprintf(r->s, sizeof(r->s), "(unreadable)");
}

static int drop_cap(int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[cap / 32].effective &= ~(1u << (cap % 32));
	d[cap / 32].permitted &= ~(1u << (cap % 32));
	d[cap / 32].inheritable &= ~(1u << (cap % 32));
	return syscall(SYS_capset, &h, d);
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -1;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -1;
	close(fd);
	return ret;
}

/*
 * unshare(CLONE_NEWUSER) and map root of the new user namespace to our own
 * uid/gid (taken before: unmapped, getuid() would say 65534).
 */
static int unshare_userns_as_root(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char b[64];

	if (unshare(CLONE_NEWUSER))
		return -1;
	write_file("/proc/self/setgroups", "deny");
	snprintf(b, sizeof(b), "0 %d 1", (int)uid);
	if (write_file("/proc/self/uid_map", b))
		return -1;
	snprintf(b, sizeof(b), "0 %d 1", (int)gid);
	return write_file("/proc/self/gid_map", b);
}

static void c_no_cap_sys_time(struct cres *r)
{
	if (unshare(CLONE_NEWTIME) || drop_cap(CAP_SYS_TIME)) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "setup: %s", strerror(errno));
		return;
	}
	try_write(r, "10");
}

static void c_nobody(struct cres *r)
{
	if (unshare(CLONE_NEWTIME) || setgroups(0, NULL) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "setup: %s", strerror(errno));
		return;
	}
	try_write(r, "10");
}

static void c_userns_not_owner(struct cres *r)
{
	/* the time namespace belongs to the initial user namespace ... */
	if (unshare(CLONE_NEWTIME)) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "setup: unshare(CLONE_NEWTIME): %s", strerror(errno));
		return;
	}
	/* ... we get every capability, but in a new user namespace */
	if (unshare_userns_as_root()) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "skip: user namespace: %s", strerror(errno));
		return;
	}
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	try_write(r, "10");
}

static void c_userns_owner(struct cres *r)
{
	if (unshare_userns_as_root()) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "skip: user namespace: %s", strerror(errno));
		return;
	}
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWTIME)) {
		r->err = errno;
		snprintf(r->msg, sizeof(r->msg), "setup: unshare(CLONE_NEWTIME) in the user namespace: %s",
			 strerror(errno));
		return;
	}
	try_write(r, "10");
}

/* ------------------------------------------------------------------ */

/* the server handles OP_EXT: write "10" to its own /proc/self/timens_dilation */
static void ext(const struct req *rq, struct resp *rs)
{
	(void)rq;
	rs->err = -dil_write(DIL_SELF, "10");
}

static int expect_read(pid_t pid, const char *want, char *got, size_t sz)
{
	char w[64];
	int ret = dil_read(pid, got, sz);

	if (ret) {
		snprintf(got, sz, "(read: %s)", strerror(-ret));
		return 0;
	}
	snprintf(w, sizeof(w), "%s\n", want);
	return !strcmp(got, w);
}

/* root: 4, file: 1, writes, running namespace: 4, permissions and inheritance: 5 */
#define NPOINTS	(4 + 1 + (int)ARRAY_SIZE(accepted) + (int)ARRAY_SIZE(rejected) + 4 + 5)

int main(void)
{
	char got[128], e1[64], e2[128];
	struct srv s = { 0 };
	struct resp rs = { 0 };
	struct cres cr;
	int i, ret, ok, in_root;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_dilation();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	ksft_set_plan(NPOINTS);

	/* ---- the root namespace ---- */
	in_root = ns_inode("/proc/self/ns/time") == ns_inode("/proc/1/ns/time") &&
		  ns_inode("/proc/self/ns/time_for_children") == ns_inode("/proc/1/ns/time");
	if (!in_root)
		ksft_print_msg("not in PID 1's time namespace: root-namespace points skipped\n");

	if (in_root) {
		ok = expect_read(DIL_SELF, "1", got, sizeof(got));
		ksft_test_result(ok, "root ns: /proc/self/timens_dilation reads '1\\n' (got '%s')\n",
				 esc(got, e2, sizeof(e2)));
		ok = expect_read(1, "1", got, sizeof(got));
		ksft_test_result(ok, "root ns: /proc/1/timens_dilation reads '1\\n' (got '%s')\n",
				 esc(got, e2, sizeof(e2)));
		ret = dil_write(DIL_SELF, "10");
		ok = ret == -EPERM && expect_read(DIL_SELF, "1", got, sizeof(got));
		ksft_test_result(ok, "root ns: writing '10' to /proc/self/timens_dilation fails with EPERM (%s), still '1'\n",
				 ret ? strerror(-ret) : "succeeded");
		ret = dil_write(1, "10");
		ok = ret == -EPERM && expect_read(1, "1", got, sizeof(got));
		ksft_test_result(ok, "root ns: writing '10' to /proc/1/timens_dilation fails with EPERM (%s), still '1'\n",
				 ret ? strerror(-ret) : "succeeded");
	} else {
		for (i = 0; i < 4; i++)
			skip_point("not running in the root time namespace", "root ns point %d", i + 1);
	}

	/* ---- a new namespace, before any task is in it ---- */
	unshare_timens_or_skip();
	ok = expect_read(DIL_SELF, "1", got, sizeof(got));
	ksft_test_result(ok, "new ns: reads '1\\n' before any write (got '%s')\n", esc(got, e2, sizeof(e2)));

	for (i = 0; i < (int)ARRAY_SIZE(accepted); i++) {
		const struct acc *a = &accepted[i];

		ret = dil_write(DIL_SELF, KNOWN);
		if (ret) {
			ksft_test_result_fail("write '%s' accepted: could not set '" KNOWN "' first: %s\n",
					      esc(a->in, e1, sizeof(e1)), strerror(-ret));
			continue;
		}
		ret = dil_write(DIL_SELF, a->in);
		ok = !ret && expect_read(DIL_SELF, a->out, got, sizeof(got));
		ksft_test_result(ok, "write '%s' accepted (%s), reads back '%s\\n' (got '%s')\n",
				 esc(a->in, e1, sizeof(e1)), ret ? strerror(-ret) : "ok", a->out,
				 esc(got, e2, sizeof(e2)));
	}

	for (i = 0; i < (int)ARRAY_SIZE(rejected); i++) {
		const char *v = rejected[i];

		ret = dil_write(DIL_SELF, KNOWN);
		if (ret) {
			ksft_test_result_fail("write '%s' rejected: could not set '" KNOWN "' first: %s\n",
					      esc(v, e1, sizeof(e1)), strerror(-ret));
			continue;
		}
		ret = dil_write(DIL_SELF, v);
		ok = ret == -EINVAL && expect_read(DIL_SELF, KNOWN, got, sizeof(got));
		ksft_test_result(ok, "write '%s' fails with EINVAL (%s), value unchanged (got '%s')\n",
				 esc(v, e1, sizeof(e1)), ret ? strerror(-ret) : "accepted",
				 esc(got, e2, sizeof(e2)));
	}

	/* ---- a namespace with a task in it ---- */
	dil_write(DIL_SELF, "1");
	srv_ext = ext;
	if (srv_start(&s))
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	ret = dil_write(s.pid, "3/7");
	ok = !ret && !srv_call(&s, OP_READ_DIL, 0, &rs) && !rs.err && !strcmp(rs.s, "3/7\n");
	ksft_test_result(ok, "running ns: writing '3/7' to /proc/CHILD/timens_dilation from outside (%s); the task inside reads '3/7\\n' (got '%s')\n",
			 ret ? strerror(-ret) : "ok", esc(rs.s, e2, sizeof(e2)));
	ok = expect_read(s.pid, "3/7", got, sizeof(got)) &&
	     expect_read(DIL_SELF, "3/7", got, sizeof(got));
	ksft_test_result(ok, "running ns: /proc/CHILD and the creator's /proc/self/timens_dilation read the same value\n");
	ok = !srv_call(&s, OP_EXT, 0, &rs) && !rs.err && expect_read(s.pid, "10", got, sizeof(got));
	ksft_test_result(ok, "running ns: the task inside (with CAP_SYS_TIME) writes its own /proc/self/timens_dilation (%s)\n",
			 rs.err ? strerror(rs.err) : "ok");
	ret = dil_write(s.pid, "0");
	ok = ret == -EINVAL && expect_read(s.pid, "10", got, sizeof(got));
	ksft_test_result(ok, "running ns: invalid write from outside fails with EINVAL (%s), value unchanged\n",
			 ret ? strerror(-ret) : "accepted");
	srv_stop(&s);

	/* ---- permissions ---- */
	if (run_child(c_no_cap_sys_time, &cr) || cr.where == 0) {
		ksft_test_result_fail("no CAP_SYS_TIME (capset): %s\n", cr.msg);
	} else {
		ok = cr.err == EPERM && cr.where == 2 && !strcmp(cr.s, "1\n");
		ksft_test_result(ok, "no CAP_SYS_TIME (dropped with capset, still uid 0): write fails with EPERM (%s at %s), value '1'\n",
				 cr.err ? strerror(cr.err) : "succeeded", cr.where == 1 ? "open" : "write");
	}

	if (run_child(c_nobody, &cr) || cr.where == 0) {
		ksft_test_result_fail("uid 65534 without capabilities: %s\n", cr.msg);
	} else {
		/* EACCES at open would be the proc file's mode (owner write only) */
		ok = (cr.err == EPERM || (cr.err == EACCES && cr.where == 1)) && !strcmp(cr.s, "1\n");
		ksft_test_result(ok, "uid 65534 without capabilities: write refused (%s at %s), value '1'\n",
				 cr.err ? strerror(cr.err) : "succeeded", cr.where == 1 ? "open" : "write");
	}

	if (run_child(c_userns_not_owner, &cr) || cr.where == 0) {
		if (!strncmp(cr.msg, "skip:", 5))
			skip_point(cr.msg + 6, "all capabilities in a user namespace that does not own the time namespace: EPERM");
		else
			ksft_test_result_fail("user namespace not owning the time namespace: %s\n", cr.msg);
	} else {
		ok = cr.err == EPERM && cr.where == 2 && !strcmp(cr.s, "1\n");
		ksft_test_result(ok, "all capabilities in a user namespace that does not own the time namespace: EPERM (%s at %s)\n",
				 cr.err ? strerror(cr.err) : "succeeded", cr.where == 1 ? "open" : "write");
	}

	if (run_child(c_userns_owner, &cr) || cr.where == 0) {
		if (!strncmp(cr.msg, "skip:", 5))
			skip_point(cr.msg + 6, "CAP_SYS_TIME in the user namespace owning the time namespace: write allowed");
		else
			ksft_test_result_fail("user namespace owning the time namespace: %s\n", cr.msg);
	} else {
		ok = cr.err == 0 && !strcmp(cr.s, "10\n");
		ksft_test_result(ok, "CAP_SYS_TIME in the user namespace owning the time namespace: write allowed (%s), reads '10\\n' (got '%s')\n",
				 cr.err ? strerror(cr.err) : "ok", esc(cr.s, e2, sizeof(e2)));
	}

	/* The caller's own namespace is dilated now: creating one inside does not undo it */
	if (dil_write(DIL_SELF, "10") || run_child(c_inherit, &cr) || cr.where == 0) {
		if (!strncmp(cr.msg, "skip:", 5))
			skip_point(cr.msg + 6, "a time namespace created in a dilated one inherits its factor");
		else
			ksft_test_result_fail("inherited factor: %s\n", cr.msg);
	} else {
		ok = cr.err == 0 && !strcmp(cr.s, "2\n");
		ksft_test_result(ok, "a time namespace created in a dilated one, owned by a new user namespace: its owner sets its own factor, relative to the parent's, before a task enters (%s, reads '%s')\n",
				 cr.err ? strerror(cr.err) : "accepted", esc(cr.s, e2, sizeof(e2)));
	}

	ksft_finished();
	return 0;
}
