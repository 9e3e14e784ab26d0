// SPDX-License-Identifier: GPL-2.0
/*
 * Nested time namespaces and containment (docs/interface.md, "Who can
 * change the factor").
 *
 * Negative dilated time: a namespace nested in one at TDF 10 inherits its
 * dilated clocks; a monotonic offset that would make its dilated
 * CLOCK_MONOTONIC negative must be refused (ERANGE), as upstream refuses
 * one that makes the undilated clock negative, and the namespace must stay
 * dilated (rate 1/10, vDSO and syscall), never fall back to host time.
 *
 * Containment: a container made with CLONE_NEWUSER|CLONE_NEWTIME owns its
 * time namespace. Once dilated from outside and entered, its root must not
 * be able to change the factor; time namespaces it creates, before or
 * after the factor is written, compose with the parent's dilation, follow
 * its re-anchors and cannot be used to leave it: its root can slow them
 * further but not speed them up (a factor below 1 needs CAP_SYS_TIME in
 * the initial user namespace).
 *
 * The test process stays on the host. A chain of children builds the
 * namespaces: X (unshare), then Y (forked into X's namespace, optionally
 * unsharing again), then the server S in the innermost namespace, which
 * answers clock readings over pipes; the host writes factors and offsets
 * between the steps and brackets S's readings with host readings.
 */
#define _GNU_SOURCE
#include "dilation.h"

#define TRIES		5
#define INTERVAL_NS	(250 * NSEC_PER_MSEC)

/* ------------------------------------------------------------------ */
/* The chain X -> Y -> S                                                */

struct chain {
	struct srv s;		/* the server S; s.pid is X (S dies with it) */
	pid_t x, y;		/* y: 0 unless nested */
	int rep, go;		/* report and go pipes (host ends) */
};

struct report {
	pid_t pid;
	int err;
	i64 mono;		/* CLOCK_MONOTONIC of the reporter */
};

enum { OP_DIL_WRITE = OP_EXT, OP_UNSHARE };

static const char * const dil_values[] = { "1", "2", "10", "1/10" };

/* in S: writes to /proc/self/timens_dilation, unshare(CLONE_NEWTIME) */
static void ext(const struct req *rq, struct resp *rs)
{
	switch (rq->op) {
	case OP_DIL_WRITE:
		rs->err = -dil_write(DIL_SELF, dil_values[rq->arg]);
		break;
	case OP_UNSHARE:
		rs->err = unshare(CLONE_NEWTIME) ? errno : 0;
		break;
	default:
		rs->err = EINVAL;
	}
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = errno;
	close(fd);
	return ret;
}

/* After unshare(CLONE_NEWUSER): root inside is uid/gid 0 outside */
static int map_root(int flags)
{
	if (!(flags & CLONE_NEWUSER))
		return 0;
	write_file("/proc/self/setgroups", "deny");
	return write_file("/proc/self/uid_map", "0 0 1") ?:
	       write_file("/proc/self/gid_map", "0 0 1");
}

static void report(int fd, int err)
{
	struct report r = { getpid(), err, 0 };

	sys_cg(CLOCK_MONOTONIC, &r.mono);
	if (write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(1);
}

static void wait_go(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		_exit(0);
}

/*
 * Start X, which unshares @xflags and reports. chain_next() lets it fork Y
 * into that namespace; with @nested, Y unshares CLONE_NEWTIME and reports,
 * and a second chain_next() forks S into Y's new namespace.
 */
static int chain_start(struct chain *c, int xflags, int nested, struct report *r)
{
	int rp[2], gp[2], rfd, wfd;

	memset(c, 0, sizeof(*c));
	if (pipe(rp) || pipe(gp))
		return -1;
	c->x = fork_piped(&rfd, &wfd);
	if (c->x < 0)
		return -1;
	if (c->x == 0) {
		pid_t y, srv;

		close(rp[0]);
		close(gp[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		report(rp[1], unshare(xflags) ? errno : map_root(xflags));
		wait_go(gp[0]);
		y = fork();
		if (y < 0)
			_exit(1);
		if (y) {
			waitpid(y, NULL, 0);
			_exit(0);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (nested) {
			report(rp[1], unshare(CLONE_NEWTIME) ? errno : 0);
			wait_go(gp[0]);
			srv = fork();
			if (srv < 0)
				_exit(1);
			if (srv) {
				waitpid(srv, NULL, 0);
				_exit(0);
			}
			prctl(PR_SET_PDEATHSIG, SIGKILL);
		}
		srv_ext = ext;
		srv_serve(rfd, wfd);
	}
	close(rp[1]);
	close(gp[0]);
	c->s.pid = c->x;
	c->s.wfd = wfd;
	c->s.rfd = rfd;
	c->rep = rp[0];
	c->go = gp[1];
	return read_full(c->rep, r, sizeof(*r));
}

/* Let the chain go one step further; Y reports if it is nested */
static int chain_next(struct chain *c, struct report *r)
{
	if (write(c->go, "g", 1) != 1)
		return -1;
	if (!r)
		return 0;
	if (read_full(c->rep, r, sizeof(*r)))
		return -1;
	c->y = r->pid;
	return 0;
}

static void chain_stop(struct chain *c)
{
	close(c->rep);
	close(c->go);
	srv_stop(&c->s);
}

/* @ns: the offset in ns */
static int write_offset(pid_t pid, clockid_t clk, i64 ns)
{
	i64 sec = ns / NSEC_PER_SEC, nsec = ns % NSEC_PER_SEC;

	if (nsec < 0) {
		nsec += NSEC_PER_SEC;
		sec--;
	}
	return set_timens_offset_pid(pid, clk, sec, nsec);
}

/*
 * S's CLOCK_MONOTONIC (clock index 2) runs at rate d/n, read with @op:
 * both sides bounded (rate_check()), and the bracket narrow enough to tell
 * TDF n/d from twice and half of it; a wider one is measured again, up to
 * RATE_ROUNDS times, the narrowest kept (dilation.h).
 */
static int rate_ok(struct chain *c, int op, i64 n, i64 d, const char *what)
{
	struct rate_item x = {
		.op = op, .arg = 2, .host = CLOCK_MONOTONIC, .slack = 1,
		.expect = tdf_rate(n, d),
	};
	const struct rate_out *o = &x.acc.bo;
	char note[160];

	rate_rounds(&c->s, &x, 1, RATE_ROUNDS, TRIES, INTERVAL_NS, what);
	if (x.err) {
		ksft_print_msg("%s: CLOCK_MONOTONIC %s: %s\n", what, op == OP_CG_VDSO ? "vdso" : "syscall",
			       x.err < 0 ? "server gone" : strerror(x.err));
		return 0;
	}
	ksft_print_msg("%s: CLOCK_MONOTONIC %s %lld.%09lld s, rate %.9Lf, expected %.9Lf, resolution +-%.4Lf%%%s\n",
		       what, op == OP_CG_VDSO ? "vdso" : "syscall",
		       x.acc.best.vB / NSEC_PER_SEC, llabs(x.acc.best.vB % NSEC_PER_SEC), o->meas, o->expect,
		       o->unc * 100, rate_acc_note(&x.acc, note, sizeof(note)));
	return rate_acc_ok(&x.acc);
}

/* ------------------------------------------------------------------ */
/* Negative dilated time                                               */

static void negative(void)
{
	struct timespec up;
	struct report r;
	struct chain c;
	i64 o1, off;
	int err, ok;

	/*
	 * N1: container uptime starts at 1 s, TDF 10; Y enters it and creates
	 * N2, which inherits its clocks and offsets.
	 */
	if (chain_start(&c, CLONE_NEWTIME, 1, &r) || r.err) {
		fail_points(3, "negative: unshare failed");
		chain_stop(&c);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &up);
	o1 = (1 - up.tv_sec) * NSEC_PER_SEC;
	if (write_offset(c.x, CLOCK_MONOTONIC, o1) || dil_write(c.x, "10") ||
	    chain_next(&c, &r) || r.err) {
		fail_points(3, "negative: setting up N1 (TDF 10) and N2 nested in it failed");
		chain_stop(&c);
		return;
	}
	/*
	 * 3 s later N2's undilated CLOCK_MONOTONIC is ~3 s ahead of its
	 * dilated one (r.mono + 0.3 s): an offset 1.5 s lower than r.mono
	 * keeps the undilated clock positive and makes the dilated one
	 * negative.
	 */
	sleep_ns(3 * NSEC_PER_SEC);
	off = o1 - r.mono - 3 * NSEC_PER_SEC / 2;
	err = write_offset(c.y, CLOCK_MONOTONIC, off);
	ksft_print_msg("nested CLOCK_MONOTONIC %lld ms at TDF 10, offset %lld ms: %s\n",
		       r.mono / NSEC_PER_MSEC, (off - o1) / NSEC_PER_MSEC, err ? strerror(-err) : "accepted");
	ksft_test_result(err == -ERANGE,
			 "an offset making a dilated CLOCK_MONOTONIC negative (the undilated one positive) is refused (ERANGE)\n");
	if (chain_next(&c, NULL)) {
		fail_points(2, "negative: starting the server failed");
		chain_stop(&c);
		return;
	}
	ok = rate_ok(&c, OP_CG_VDSO, 10, 1, "nested after the offset");
	ksft_test_result(ok, "nested namespace stays dilated at TDF 10 (vDSO)\n");
	ok = rate_ok(&c, OP_CG_SYS, 10, 1, "nested after the offset");
	ksft_test_result(ok, "nested namespace stays dilated at TDF 10 (syscall)\n");
	chain_stop(&c);
}

/* ------------------------------------------------------------------ */
/* Containment                                                         */

#define CONTAINER	(CLONE_NEWUSER | CLONE_NEWTIME)

static int read_is(pid_t pid, const char *want)
{
	char buf[64], w[64];

	snprintf(w, sizeof(w), "%s\n", want);
	return !dil_read(pid, buf, sizeof(buf)) && !strcmp(buf, w);
}

/* The container's root cannot undo the factor written from outside */
static void container_root(void)
{
	struct report r;
	struct chain c;
	struct resp rs;
	int ok;

	if (chain_start(&c, CONTAINER, 0, &r) || r.err || dil_write(c.x, "10") ||
	    chain_next(&c, NULL) || srv_call(&c.s, OP_DIL_WRITE, 0, &rs)) {
		fail_points(1, "container: setup failed");
		chain_stop(&c);
		return;
	}
	ksft_print_msg("container root writing '1' to its own namespace (TDF 10 from outside): %s\n",
		       rs.err ? strerror(rs.err) : "accepted");
	ok = rs.err == EPERM && read_is(c.x, "10");
	ok &= rate_ok(&c, OP_CG_VDSO, 10, 1, "container after its root's write");
	ksft_test_result(ok, "a container's root cannot change the factor of its time namespace once entered (EPERM, still TDF 10)\n");
	chain_stop(&c);
}

/*
 * A namespace the container creates before the factor is written follows
 * the parent's factor, its re-anchors, and composes its own factor with it.
 */
static void container_nested(void)
{
	struct report r;
	struct chain c;
	struct resp rs;
	int ok;

	if (chain_start(&c, CONTAINER, 1, &r) || r.err || chain_next(&c, &r) || r.err ||
	    dil_write(c.x, "10") || chain_next(&c, NULL)) {
		fail_points(7, "container: nested setup failed");
		chain_stop(&c);
		return;
	}
	ok = rate_ok(&c, OP_CG_VDSO, 10, 1, "nested, created before the parent's TDF 10");
	ksft_test_result(ok, "a namespace created in a container before its factor was written runs at the parent's TDF 10\n");

	ok = !dil_write(c.x, "1/10");
	ok &= rate_ok(&c, OP_CG_VDSO, 1, 10, "nested, parent re-anchored to 1/10");
	ksft_test_result(ok, "it follows the parent's change to TDF 1/10\n");

	/* root of the container sets the nested namespace's own factor: 2 */
	ok = !srv_call(&c.s, OP_DIL_WRITE, 1, &rs) && !rs.err;
	ksft_print_msg("container root writing '2' to the nested namespace: %s\n",
		       rs.err ? strerror(rs.err) : "accepted");
	ok &= rate_ok(&c, OP_CG_VDSO, 1, 5, "nested at 2, parent at 1/10");
	ksft_test_result(ok, "its own factor 2 composes with the parent's 1/10 (TDF 1/5)\n");

	/* ... and cannot be used to leave the parent's dilation */
	ok = !dil_write(c.x, "10") && !srv_call(&c.s, OP_DIL_WRITE, 0, &rs) && !rs.err;
	ok &= rate_ok(&c, OP_CG_VDSO, 10, 1, "nested at 1, parent at 10");
	ok &= rate_ok(&c, OP_CG_SYS, 10, 1, "nested at 1, parent at 10");
	ksft_test_result(ok, "writing 1 to it leaves it at the parent's TDF 10 (vDSO and syscall)\n");

	/*
	 * Nor can it be sped up from inside: 1/10 under TDF 10 would be host
	 * time. Refused for the entered namespace and for one just created
	 * (not entered); a factor above 1 is still the container's to set.
	 */
	ok = !srv_call(&c.s, OP_DIL_WRITE, 3, &rs);
	ksft_print_msg("container root writing '1/10' to the nested namespace under TDF 10: %s\n",
		       rs.err ? strerror(rs.err) : "accepted");
	ok &= rs.err == EPERM && read_is(c.y, "1");
	ok &= rate_ok(&c, OP_CG_VDSO, 10, 1, "nested after its container's '1/10'");
	ksft_test_result(ok, "a container's root cannot speed up a nested namespace it has entered (EPERM, still TDF 10)\n");

	ok = !srv_call(&c.s, OP_UNSHARE, 0, &rs) && !rs.err;
	ok &= !srv_call(&c.s, OP_DIL_WRITE, 3, &rs);
	ksft_print_msg("container root writing '1/10' to a namespace it just created, not entered: %s\n",
		       rs.err ? strerror(rs.err) : "accepted");
	ok &= rs.err == EPERM;
	ok &= !srv_call(&c.s, OP_READ_DIL, 0, &rs) && !rs.err && !strcmp(rs.s, "1\n");
	ok &= !srv_call(&c.s, OP_DIL_WRITE, 1, &rs) && !rs.err;
	ok &= !srv_call(&c.s, OP_READ_DIL, 0, &rs) && !rs.err && !strcmp(rs.s, "2\n");
	ksft_test_result(ok, "nor one it created and has not entered (EPERM; its factor 2 is accepted)\n");

	/* The host can: CAP_SYS_TIME in the initial user namespace */
	ok = !dil_write(c.y, "1/10") && read_is(c.y, "1/10");
	ok &= rate_ok(&c, OP_CG_VDSO, 1, 1, "nested at 1/10 written by the host, parent at 10");
	ksft_test_result(ok, "the host can set 1/10 under the parent's 10 (host rate)\n");
	chain_stop(&c);
}

#define NPOINTS	11

int main(void)
{
	start_vdso_test();
	ksft_set_plan(NPOINTS);

	negative();
	container_root();
	container_nested();

	ksft_finished();
	return 0;
}
