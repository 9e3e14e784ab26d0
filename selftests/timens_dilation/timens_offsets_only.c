// SPDX-License-Identifier: GPL-2.0
/*
 * An offset-only time namespace (timens_offsets set, never dilated) must
 * behave exactly as without the dilation patches: every clock runs at the
 * host rate (exactly: the bracketed check allows only the readings' own
 * granularity, no rate tolerance), the monotonic/boottime offsets are
 * visible, CLOCK_REALTIME/TAI are the host's, clock_getres() is the host's,
 * and /proc/self/timens_dilation (if the kernel has it) reads "1".
 *
 * Runs on kernels without the dilation feature too (that point is skipped).
 */
#define _GNU_SOURCE
#include "dilation.h"

#define MONO_OFF_S	(7 * 86400LL)
#define MONO_OFF_NS	123456789L
#define BOOT_OFF_S	(9 * 86400LL)
#define BOOT_OFF_NS	987654321L
#define INTERVAL_NS	(250 * NSEC_PER_MSEC)
#define TRIES		5

static i64 offset_of(int i)
{
	switch (clocks[i].offset) {
	case 1:
		return MONO_OFF_S * NSEC_PER_SEC + MONO_OFF_NS;
	case 2:
		return BOOT_OFF_S * NSEC_PER_SEC + BOOT_OFF_NS;
	}
	return 0;
}

struct rd {
	struct resp r[2];
	i64 h0[2], h1[2];
	int gone;
};

static void take(struct srv *s, int op, int arg, clockid_t h, struct rd *x, int idx)
{
	if (!x->gone && srv_bracket(s, op, arg, h, TRIES, &x->h0[idx], &x->h1[idx], &x->r[idx]))
		x->gone = 1;
}

#define NPOINTS	(NVDSO_CLOCKS + NCLOCKS + 2 + 1 + 2 + 1)

int main(void)
{
	struct rd cg[2][NCLOCKS], gtod[2], up;
	struct rate_item ri[2 * NCLOCKS];
	char note[160];
	struct srv s = { 0 };
	struct resp rs;
	char ebuf[64];
	int i, m, j, alarm_ok[NCLOCKS];

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	require_timens();
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	vdso_init(&vdso);
	for (i = 0; i < NCLOCKS; i++)
		alarm_ok[i] = clock_readable(i);
	print_clocksource();

	unshare_timens_or_skip();
	if (set_timens_offset(CLOCK_MONOTONIC, MONO_OFF_S, MONO_OFF_NS) ||
	    set_timens_offset(CLOCK_BOOTTIME, BOOT_OFF_S, BOOT_OFF_NS))
		ksft_exit_fail_msg("writing /proc/self/timens_offsets: %s\n", strerror(errno));
	if (srv_start(&s))
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (srv_call(&s, OP_NS_INODE, 0, &rs) ||
	    (ino_t)rs.v[0] != ns_inode("/proc/self/ns/time_for_children") ||
	    (ino_t)rs.v[0] == ns_inode("/proc/self/ns/time"))
		ksft_exit_fail_msg("the child is not in the new time namespace\n");

	ksft_set_plan(NPOINTS);

	memset(cg, 0, sizeof(cg));
	memset(gtod, 0, sizeof(gtod));
	memset(&up, 0, sizeof(up));
	for (j = 0; j < 2; j++) {
		for (i = 0; i < NCLOCKS; i++)
			for (m = 0; m < 2; m++)
				if (alarm_ok[i] && (m || clocks[i].vdso))
					take(&s, m ? OP_CG_SYS : OP_CG_VDSO, i, clocks[i].host, &cg[m][i], j);
		for (m = 0; m < 2; m++)
			take(&s, m ? OP_GTOD_SYS : OP_GTOD_VDSO, 0, CLOCK_REALTIME, &gtod[m], j);
		take(&s, OP_UPTIME, 0, CLOCK_BOOTTIME, &up, j);
		if (!j)
			sleep_ns(INTERVAL_NS);
	}

	/*
	 * The rates: the readings above are the first round; a clock whose
	 * bracket is wider than +-WEAK_UNC is measured again, up to RATE_ROUNDS
	 * rounds in all, the narrowest kept, and it must tell rate 1 from 2
	 * and 1/2 (dilation.h).  Unused entries are marked done (err).
	 */
	memset(ri, 0, sizeof(ri));
	for (m = 0; m < 2; m++) {
		for (i = 0; i < NCLOCKS; i++) {
			struct rate_item *y = &ri[m * NCLOCKS + i];
			struct rd *x = &cg[m][i];

			y->op = m ? OP_CG_SYS : OP_CG_VDSO;
			y->arg = i;
			y->host = clocks[i].host;
			y->slack = 1;
			y->expect = 1.0L;
			if (!alarm_ok[i] || (!m && (!clocks[i].vdso || !vdso.clock_gettime)) ||
			    x->gone || x->r[0].err || x->r[1].err) {
				y->err = -1;
			} else {
				struct sample2 sm = {
					x->r[0].v[0], x->r[1].v[0], x->h0[0], x->h1[0], x->h0[1], x->h1[1], 1
				};

				rate_acc_add(&y->acc, &sm, y->expect);
			}
		}
	}
	rate_rounds(&s, ri, 2 * NCLOCKS, RATE_ROUNDS - 1, TRIES, INTERVAL_NS, "offset-only ns");

	/* clock_gettime: rate exactly 1, offset visible */
	for (i = 0; i < NCLOCKS; i++) {
		for (m = 0; m < 2; m++) {
			struct rd *x = &cg[m][i];
			const char *how = m ? "syscall" : "vdso";
			i64 off = offset_of(i);
			int ok = 1;

			if (!m && !clocks[i].vdso)
				continue;
			if (!alarm_ok[i]) {
				skip_point("not readable (alarm clocks need an RTC)",
					   "offset-only ns: %s %s runs at the host rate with offset %+lld ns",
					   clocks[i].name, how, off);
				continue;
			}
			if (!m && !vdso.clock_gettime) {
				skip_point("no vDSO clock_gettime",
					   "offset-only ns: %s vdso runs at the host rate with offset %+lld ns",
					   clocks[i].name, off);
				continue;
			}
			if (x->gone || x->r[0].err || x->r[1].err) {
				ksft_test_result_fail("offset-only ns: %s %s: reading failed\n", clocks[i].name, how);
				continue;
			}
			/* the offset: v - off within the host bracket, at both instants */
			for (j = 0; j < 2; j++) {
				i64 v = x->r[j].v[0] - off;

				if (v < x->h0[j] - 1 || v > x->h1[j] + 1) {
					ksft_print_msg("%s %s: reading - offset %lld is outside the host bracket [%lld, %lld] (by %lld ns)\n",
						       clocks[i].name, how, v, x->h0[j], x->h1[j],
						       v < x->h0[j] ? v - x->h0[j] : v - x->h1[j]);
					ok = 0;
				}
			}
			{
				const struct rate_item *y = &ri[m * NCLOCKS + i];

				if (y->err) {
					ksft_print_msg("%s %s: reading failed when measured again: %s\n",
						       clocks[i].name, how,
						       y->err < 0 ? "server gone" : strerror(y->err));
					ok = 0;
				}
				ksft_print_msg("%s %s: rate %.9Lf (resolution +-%.4Lf%%), offset %+lld ns%s\n",
					       clocks[i].name, how, y->acc.bo.meas, y->acc.bo.unc * 100, off,
					       rate_acc_note(&y->acc, note, sizeof(note)));
				ok &= rate_acc_ok(&y->acc);
			}
			ksft_test_result(ok, "offset-only ns: %s %s runs at the host rate with offset %+lld ns\n",
					 clocks[i].name, how, off);
		}
	}

	/* gettimeofday: the host's realtime, usec granularity */
	for (m = 0; m < 2; m++) {
		struct rd *x = &gtod[m];
		const char *how = m ? "syscall" : "vdso";
		int ok = 1;

		if (!m && !vdso.gettimeofday) {
			skip_point("no vDSO gettimeofday", "offset-only ns: gettimeofday vdso is the host's realtime");
			continue;
		}
		if (x->gone || x->r[0].err || x->r[1].err) {
			ksft_test_result_fail("offset-only ns: gettimeofday %s: reading failed\n", how);
			continue;
		}
		for (j = 0; j < 2; j++) {
			i64 v = x->r[j].v[0];

			if (v < x->h0[j] - NSEC_PER_USEC || v > x->h1[j]) {
				ksft_print_msg("gettimeofday %s: %lld outside [%lld - 1 us, %lld]\n",
					       how, v, x->h0[j], x->h1[j]);
				ok = 0;
			}
		}
		ksft_test_result(ok, "offset-only ns: gettimeofday %s is the host's realtime\n", how);
	}

	/* /proc/uptime: host boottime + offset, 1/100 s */
	{
		int ok = !up.gone && !up.r[0].err && !up.r[1].err;
		i64 off = BOOT_OFF_S * NSEC_PER_SEC + BOOT_OFF_NS;

		for (j = 0; ok && j < 2; j++) {
			i64 v = up.r[j].v[0] - off;

			if (v < up.h0[j] - 10 * NSEC_PER_MSEC - 1 || v > up.h1[j] + 1) {
				ksft_print_msg("/proc/uptime - offset = %lld outside host boottime [%lld - 10 ms, %lld]\n",
					       v, up.h0[j], up.h1[j]);
				ok = 0;
			}
		}
		ksft_test_result(ok, "offset-only ns: /proc/uptime is host boottime + offset\n");
	}

	/* clock_getres: unchanged */
	for (m = 0; m < 2; m++) {
		int ok = 1;

		if (!m && !vdso.clock_getres) {
			skip_point("no vDSO clock_getres", "offset-only ns: clock_getres vdso equals the host's, all clocks");
			continue;
		}
		for (i = 0; i < NCLOCKS; i++) {
			i64 hres = host_res_ns(clocks[i].id);

			if (!alarm_ok[i] || (!m && !clocks[i].vdso))
				continue;
			if (srv_call(&s, m ? OP_GETRES_SYS : OP_GETRES_VDSO, i, &rs) ||
			    rs.err || rs.v[0] != hres) {
				ksft_print_msg("clock_getres(%s) %s: %lld ns, host %lld ns\n",
					       clocks[i].name, m ? "syscall" : "vdso", rs.v[0], hres);
				ok = 0;
			}
		}
		ksft_test_result(ok, "offset-only ns: clock_getres %s equals the host's, all clocks\n",
				 m ? "syscall" : "vdso");
	}

	/* the dilation file, if any, says "not dilated" */
	if (access("/proc/self/timens_dilation", F_OK)) {
		skip_point("kernel without dilation", "offset-only ns: /proc/self/timens_dilation reads '1' inside");
	} else {
		int ret = srv_call(&s, OP_READ_DIL, 0, &rs);

		ksft_test_result(!ret && !rs.err && !strcmp(rs.s, "1\n"),
				 "offset-only ns: /proc/self/timens_dilation reads '1' inside (got '%s')\n",
				 ret ? "?" : rs.err ? strerror(rs.err) : esc(rs.s, ebuf, sizeof(ebuf)));
	}

	srv_stop(&s);
	ksft_finished();
	return 0;
}
