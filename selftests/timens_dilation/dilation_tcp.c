// SPDX-License-Identifier: GPL-2.0
/*
 * TCP in a dilated time namespace: the durations TCP fixes in absolute
 * time (the RTO floor, TCP_RTO_MIN, 200 ms; the delayed-ACK timeout,
 * TCP_ATO_MIN, 40 ms; the initial RTO; the tail-loss-probe constants) are
 * the socket's owner's time, and TCP_INFO reports durations in the reading
 * task's time and rates per second of it. TCP's packets, RTT samples and
 * timers stay in host time, and so does netem: a dilated node whose link
 * is dilated with it (dilated-node, tdf-cni) then sees TCP behave as on the
 * link it perceives. Before the kernel converted them, at TDF 10 the RTO
 * floor was 20 ms of namespace time, the delayed ACK 4 ms, and tcpi_rtt
 * was in host units (10 times the perceived round trip).
 *
 * A child at TDF 10 in a network namespace of its own (lo up, no other
 * traffic) measures with its CLOCK_MONOTONIC, over TCP pairs on 127.0.0.1:
 *
 *  - retransmissions: after a few exchanges (srtt: loopback, well under a
 *    ms), `tc qdisc add dev lo root netem loss 100%`, tcpi_rto read, one
 *    byte written at t0, TCP_INFO (tcpi_total_retrans) polled every 1 ms.
 *    With the default net.ipv4.tcp_early_retrans (3) the first
 *    retransmission is the tail loss probe, armed at min(PTO, time to the
 *    RTO) = RTO = srtt + 200 ms (one segment out: PTO = 2 srtt + 200 ms);
 *    it re-arms the RTO timer at a full RTO, so the second retransmission
 *    (the RTO, tcpi_backoff 1) comes one RTO after the probe, and the third
 *    (tcpi_backoff 2) two RTOs after that. Points: probe in [170, 260] ms
 *    after t0, RTO in [170, 260] ms after the probe, backed-off RTO in
 *    [340, 520] ms after that (the timer wheel rounds a 1000-jiffy host
 *    timeout up by up to 64 jiffies, 26 ms at TDF 10), and tcpi_rto in
 *    [200000, 260000] us.
 *  - the initial RTO: a non-blocking connect() under `netem loss 100%`:
 *    the SYN is retransmitted after TCP_TIMEOUT_INIT, 1 s: in [900, 1200]
 *    ms (the wheel rounds 2500 host jiffies up by up to 64), and the
 *    connecting socket's tcpi_rto is 1000000 us (+-5%).
 *  - delayed ACK: a new connection per sample (the delack timer firing in
 *    pingpong mode leaves pingpong mode, so only a connection's first
 *    delayed ACK is TCP_ATO_MIN); the receiver sets TCP_QUICKACK 0 after
 *    accept() and does not read; the sender writes 1 byte and polls
 *    tcpi_unacked until 0: the narrowest of 5 samples in [36, 60] ms. The
 *    narrowest, because nothing can make the ACK earlier than its timer
 *    (40 ms, plus at most 1 tick of arming and 8 of timer-wheel rounding,
 *    3.6 ms at TDF 10), while a late poll, timer softirq or vCPU (QEMU TCG)
 *    only makes a sample longer. The receiver's tcpi_ato: 40000 us.
 *  - round trips: `netem delay 100ms` on lo (each packet crosses lo once
 *    each way: 200 ms of host time, 20 ms perceived at TDF 10), then a
 *    connection, then 10 one-byte request/response exchanges (TCP_NODELAY;
 *    the server answers each, so its ACKs ride on the answers): tcpi_rtt
 *    and tcpi_min_rtt within 5% of 200 ms / TDF and of the median round
 *    trip the child measured; tcpi_pacing_rate within 10% of what TCP
 *    sets it to (pacing ratio x snd_mss x snd_cwnd per round trip) and
 *    tcpi_delivery_rate within 10% of snd_mss per shortest round trip
 *    (one segment delivered per round trip), both with the round trips
 *    the child measured, in bytes per namespace second; after 50 ms idle,
 *    tcpi_last_data_sent, _last_data_recv and _last_ack_recv within the
 *    child's bracket (+- a host tick, up to 10 ms of wakeup latency).
 *  - TCP_TX_DELAY, a delay of the socket's time: `fq` on lo (it holds a
 *    segment until the departure time TCP gives it), a connection whose
 *    client sets TCP_TX_DELAY before its SYN (200 ms of host time: 20000
 *    us at TDF 10, 200000 in the root namespace), 10 exchanges: the
 *    client's tcpi_rtt and the median round trip in [-5%, +25%] of the
 *    delay (a round trip is not shorter than it, and may be late).
 *    Before the kernel scaled the option: 2 ms at TDF 10.
 *
 * Each bound rejects a kernel applying twice or half the factor: RTO
 * 100/400 ms, SYN 500/2000 ms, delayed ACK 20/80 ms, tcpi_rto 100/400
 * ms, tcpi_ato 20000/80000 us, tcpi_rtt 10/40 ms, rates and tcpi_last_*
 * x2 or /2, TCP_TX_DELAY's round trip 10/40 ms. Before the kernel
 * converted TCP, 9 of the first 11 points failed (RTO 21 ms, SYN 102 ms,
 * delayed ACK 4.4 ms, tcpi_rtt 202043 us); only tcpi_rto and tcpi_ato
 * passed: the host floor, read in host units.
 *
 * The same measurement, with the same bounds, in a child in the root time
 * namespace (its own network namespace too; points 13-24): undilated
 * sockets keep host time (RTO 200 ms, delayed ACK 40 ms, tcpi_rtt 200 ms).
 * The child makes its network namespace with unshare(CLONE_NEWNET), sets
 * net.ipv4.tcp_no_metrics_save there (no connection inherits another's
 * RTT or ssthresh) and runs /usr/sbin/tc (sch_netem).
 *
 * MPTCP (points 25-42): an MPTCP socket carries its traffic over TCP
 * subflows, kernel sockets that run on the time of the MPTCP socket. At
 * TDF 10 and in the root namespace, over IPPROTO_MPTCP sockets:
 *  - a connection with a second subflow, which the client's path manager
 *    adds from a workqueue (`ip mptcp endpoint add 127.0.0.2 dev lo
 *    subflow`) and the server accepts with MP_JOIN: both ends MPTCP
 *    (MPTCP_INFO: no fallback to TCP) with 2 subflows each, and after an
 *    exchange every subflow's tcpi_rto (MPTCP_TCPINFO) at the RTO floor,
 *    in [200000, 260000] us;
 *  - a connection with an endpoint that has a port of its own
 *    (`ip mptcp endpoint add 127.0.0.3 port 10100 signal`, run by the
 *    child): the path manager listens on it with a kernel socket and
 *    announces it; the client joins there (the server accepts no
 *    announcements: limits of 1 subflow and 1 accepted announcement when
 *    the client's socket is made, 0 when the server's is). Each end has 2
 *    subflows, the server's second accepted on the endpoint's listener
 *    (MPTCP_SUBFLOW_ADDRS: local 127.0.0.3:10100), and after an exchange
 *    every subflow's tcpi_rto is in [200000, 260000] us;
 *  - with the endpoints removed, the retransmission and initial-RTO
 *    measurements above, with the same bounds (TCP_INFO of an MPTCP
 *    socket is its first subflow's).
 * Before the subflows were tied to their MPTCP socket's time, 6 of the 7
 * MPTCP points then measured failed at TDF 10 (every subflow's tcpi_rto
 * 20400 us, probe 21 ms, RTO 21 ms, backed-off 40-44 ms, SYN retransmitted
 * after 101-102 ms); only the first passed. Before the endpoint's listener
 * took the time of the task that added the endpoint, the subflow accepted
 * on it kept host time: tcpi_rto 20400 us at TDF 10.
 *
 * SMC (points 43-58): an SMC socket sets its connections up over a TCP
 * socket of its own, a kernel socket, which carries all its traffic once
 * it falls back to TCP, as it does here: there is no RDMA or ISM device.
 * At TDF 10 and in the root namespace, over IPPROTO_SMC sockets: a
 * connection whose client set SO_RCVTIMEO 100 ms before connect() (SMC
 * copies it to its TCP socket, on which a fallen-back recv() waits): recv()
 * times out after [100 ms - a host tick, 130 ms]; a non-blocking connect()
 * with SO_SNDTIMEO 100 ms to a peer that drops the SYN (SMC waits for the
 * TCP handshake in a worker, that long, then fails the connection with
 * EPIPE): poll() reports the error within the same bounds; a listener
 * with TCP_DEFER_ACCEPT 1 s and a connection that sends nothing: accept()
 * returns it after [1 s - a host tick, 1 s + the timer wheel's granule +
 * 30 ms] (1055.6 ms at TDF 10, 1062 ms in the root namespace, HZ 250);
 * then the retransmission and initial-RTO measurements above, with the
 * same bounds. Before the TCP socket was tied to its SMC socket's time,
 * the 5 TDF-10 retransmission points failed (probe 21.1 ms, RTO 21.2 ms,
 * backed-off 43.5 ms, tcpi_rto 20400 us, SYN 103.5 ms); before its
 * timeouts were scaled as the SMC socket's, recv() timed out after
 * 10.2 ms; before the worker's wait was scaled, connect() failed after
 * 10.2 ms.
 */
#define _GNU_SOURCE
#include <linux/mptcp.h>
#include "tcp_util.h"

#define NRTX		3	/* retransmissions timed: probe, RTO, backed-off RTO */
#define NDACK		5	/* delayed-ACK samples, a connection each */
#define NRT		10	/* request/response exchanges */
#define NETEM_DELAY_MS	100	/* host time, each way */
#define IDLE_MS		50	/* before reading tcpi_last_* */
#define POLL_NS		NSEC_PER_MSEC
#define RTX_WAIT_MS	2000	/* give up on the retransmissions (expected: ~800 ms) */
#define DACK_WAIT_MS	1000
#define SYN_WAIT_MS	3000	/* expected: 1000 ms */
#define TX_DELAY_HOST_US	200000	/* TCP_TX_DELAY: 200 ms of host time / TDF */
#define NPOINTS_RUN	12
#define NPOINTS_RTX	5	/* of a run's points, those of report_rtx() */
#define NPOINTS_MPTCP	(4 + NPOINTS_RTX)
#define MPTCP_SUBFLOWS	2	/* the first and one a path manager adds */
#define PM_PORT		10100	/* the port of the endpoint's own listener */
#define PM_ADDR		"127.0.0.3"
#define NPOINTS_SMC	(3 + NPOINTS_RTX)
#define SMC_TIMEO_MS	100	/* SMC's SO_RCVTIMEO and SO_SNDTIMEO */
#define SMC_DEFER_S	1	/* TCP_DEFER_ACCEPT of an SMC listener */
#define NPOINTS		(2 * NPOINTS_RUN + 2 * NPOINTS_MPTCP + 2 * NPOINTS_SMC)

#ifndef SOL_MPTCP
#define SOL_MPTCP	284
#endif

/* The subflows of an MPTCP connection, client and server end, and their tcpi_rto (us) */
struct subflow_rtos {
	int n[2];
	unsigned int rto[2][MPTCP_SUBFLOWS];
};

struct meas {
	char err[TU_ERR_LEN];	/* a setup failure, "" if none */
	/* MPTCP runs: MPTCP_INFO's flags, subflows and their tcpi_rto (us), client and server end */
	unsigned int mptcp_flags[2];
	struct subflow_rtos sf;
	/* with an endpoint of its own port: its subflows, those on PM_ADDR:PM_PORT */
	struct subflow_rtos port_sf;
	int port_joined[2];
	/* retransmissions: namespace ns after the write when each was seen */
	int nrtx;
	i64 rtx[NRTX];
	int backoff[NRTX];
	unsigned int rto0;	/* tcpi_rto just before the write, us */
	i64 syn;		/* ns from connect() to the SYN's retransmission, -1: none */
	i64 rcvtimeo;		/* SMC: ns from recv() to its timeout */
	i64 sndtimeo;		/* SMC: ns from connect() to its failure */
	i64 defer;		/* SMC: ns accept() waited for data that never came */
	unsigned int synrto;	/* tcpi_rto of the connecting socket, us */
	unsigned int rtt0;	/* tcpi_rtt then, us */
	/* delayed ACKs: ns from the write to tcpi_unacked 0; receiver's tcpi_ato */
	i64 dack[NDACK];
	unsigned int ato[NDACK];
	/* round trips, ns; the client's TCP_INFO after them and after idling */
	i64 rt[NRT];
	struct tcp_info ti, tidle;
	/* the last exchange; TCP_INFO idle in [i0, i1] */
	struct exchange_times x;
	i64 i0, i1;
	/* round trips with TCP_TX_DELAY on the client, ns; its tcpi_rtt after them, us */
	i64 txd_rt[NRT];
	unsigned int txd_rtt;
};

static struct meas *M;

/* One request from c answered by s; the round trip in *@rt, ns */
static int round_trip(int c, int s, i64 *rt)
{
	if (exchange(c, s, &M->x))
		return -1;
	*rt = M->x.r1 - M->x.w0;
	return 0;
}

static int measure_rtx(int l, const struct sockaddr_in *a)
{
	struct tcp_info ti;
	int c, s, k, ret;
	unsigned int base;
	i64 t0, t;

	if (conn(l, a, &c, &s))
		return -1;
	for (k = 0; k < 3; k++)
		if (exchange(c, s, &M->x))
			return -1;
	if (tc("add dev lo root netem loss 100%"))
		return -1;
	ret = -1;
	if (tinfo(c, &ti))
		goto out;
	M->rto0 = ti.tcpi_rto;
	M->rtt0 = ti.tcpi_rtt;
	base = ti.tcpi_total_retrans;
	t0 = now_ns();
	if (write(c, "x", 1) != 1) {
		fail("write");
		goto out;
	}
	while (M->nrtx < NRTX) {
		if (tinfo(c, &ti))
			goto out;
		t = now_ns() - t0;
		while (M->nrtx < NRTX && ti.tcpi_total_retrans - base > (unsigned int)M->nrtx) {
			M->rtx[M->nrtx] = t;
			M->backoff[M->nrtx++] = ti.tcpi_backoff;
		}
		if (t > RTX_WAIT_MS * NSEC_PER_MSEC)
			break;
		sleep_ns(POLL_NS);
	}
	ret = 0;
out:
	return lo_qdisc_done(ret, c, s);
}

/* The SYN of a connection whose packets are all lost: retransmitted after the initial RTO */
static int measure_syn(const struct sockaddr_in *a)
{
	struct tcp_info ti;
	int c, ret = -1;
	i64 t0, t;

	M->syn = -1;
	if (tc("add dev lo root netem loss 100%"))
		return -1;
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, tu_proto);
	if (c < 0) {
		fail("socket");
		goto out;
	}
	t0 = now_ns();
	if (!connect(c, (const struct sockaddr *)a, sizeof(*a)) || errno != EINPROGRESS) {
		fail("non-blocking connect");
		goto out;
	}
	for (;;) {
		if (tinfo(c, &ti))
			goto out;
		t = now_ns() - t0;
		if (!M->synrto)
			M->synrto = ti.tcpi_rto;
		if (ti.tcpi_total_retrans || ti.tcpi_retransmits) {
			M->syn = t;
			break;
		}
		if (t > SYN_WAIT_MS * NSEC_PER_MSEC)
			break;
		sleep_ns(POLL_NS);
	}
	ret = 0;
out:
	return lo_qdisc_done(ret, c, -1);
}

static int measure_dack(int l, const struct sockaddr_in *a, int k)
{
	struct tcp_info ti;
	int c, s, zero = 0, ret = -1;
	i64 t0, t;

	if (conn(l, a, &c, &s))
		return -1;
	if (setsockopt(s, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero))) {
		fail("TCP_QUICKACK 0");
		goto out;
	}
	t0 = now_ns();
	if (write(c, "d", 1) != 1) {
		fail("write");
		goto out;
	}
	for (;;) {
		if (tinfo(c, &ti))
			goto out;
		t = now_ns() - t0;
		if (!ti.tcpi_unacked)
			break;
		if (t > DACK_WAIT_MS * NSEC_PER_MSEC) {
			errno = ETIMEDOUT;
			fail("no ACK in %d ms", DACK_WAIT_MS);
			goto out;
		}
		sleep_ns(POLL_NS);
	}
	M->dack[k] = t;
	if (tinfo(s, &ti))
		goto out;
	M->ato[k] = ti.tcpi_ato;
	ret = 0;
out:
	drop(c);
	drop(s);
	return ret;
}

static int measure_rt(int l, const struct sockaddr_in *a)
{
	char args[64];
	int c = -1, s = -1, k, ret = -1;

	snprintf(args, sizeof(args), "add dev lo root netem delay %dms", NETEM_DELAY_MS);
	if (tc(args))
		return -1;
	if (conn(l, a, &c, &s))
		goto out;
	for (k = 0; k < NRT; k++)
		if (round_trip(c, s, &M->rt[k]))
			goto out;
	if (tinfo(c, &M->ti))
		goto out;
	sleep_ns(IDLE_MS * NSEC_PER_MSEC);
	M->i0 = now_ns();
	if (tinfo(c, &M->tidle))
		goto out;
	M->i1 = now_ns();
	ret = 0;
out:
	return lo_qdisc_done(ret, c, s);
}

static unsigned int tx_delay_us;	/* the run's TCP_TX_DELAY */

/*
 * TCP_TX_DELAY on the client, from its SYN on (so that srtt starts at the
 * delay), fq on lo (it holds each segment until its departure time):
 * requests leave tx_delay_us of the socket's time late, and the client's
 * RTT samples, which start at the undelayed departure, count the delay.
 */
static int measure_txdelay(int l, const struct sockaddr_in *a)
{
	int c, s = -1, k, ret = -1, d = tx_delay_us, one = 1;
	struct tcp_info ti;

	if (tc("add dev lo root fq"))
		return -1;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || setsockopt(c, IPPROTO_TCP, TCP_TX_DELAY, &d, sizeof(d)) ||
	    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(c, (const struct sockaddr *)a, sizeof(*a))) {
		fail("a client with TCP_TX_DELAY %d", d);
		goto out;
	}
	s = accept(l, NULL, NULL);
	if (s < 0 || setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		fail("accept");
		goto out;
	}
	for (k = 0; k < NRT; k++)
		if (round_trip(c, s, &M->txd_rt[k]))
			goto out;
	if (tinfo(c, &ti))
		goto out;
	M->txd_rtt = ti.tcpi_rtt;
	ret = 0;
out:
	return lo_qdisc_done(ret, c, s);
}

/*
 * TCP_INFO of the first @n subflows of MPTCP socket @fd (MPTCP_TCPINFO);
 * returns how many subflows it has
 */
static int subflow_info(int fd, struct tcp_info *ti, int n)
{
	struct {
		struct mptcp_subflow_data d;
		struct tcp_info ti[MPTCP_SUBFLOWS];
	} req;
	socklen_t len = sizeof(req);

	memset(&req, 0, sizeof(req));
	req.d.size_subflow_data = sizeof(req.d);
	req.d.size_user = sizeof(req.ti[0]);
	if (getsockopt(fd, SOL_MPTCP, MPTCP_TCPINFO, &req, &len))
		return fail("MPTCP_TCPINFO");
	memcpy(ti, req.ti, n * sizeof(*ti));
	return req.d.num_subflows;
}

/* How many subflows of MPTCP socket @fd have the local address PM_ADDR:PM_PORT; -1 on a failure */
static int subflows_on_pm_port(int fd)
{
	struct {
		struct mptcp_subflow_data d;
		struct mptcp_subflow_addrs a[MPTCP_SUBFLOWS];
	} req;
	socklen_t len = sizeof(req);
	int j, n = 0;

	memset(&req, 0, sizeof(req));
	req.d.size_subflow_data = sizeof(req.d);
	req.d.size_user = sizeof(req.a[0]);
	if (getsockopt(fd, SOL_MPTCP, MPTCP_SUBFLOW_ADDRS, &req, &len))
		return fail("MPTCP_SUBFLOW_ADDRS");
	for (j = 0; j < (int)req.d.num_subflows && j < MPTCP_SUBFLOWS; j++)
		n += req.a[j].sin_local.sin_family == AF_INET &&
		     req.a[j].sin_local.sin_addr.s_addr == inet_addr(PM_ADDR) &&
		     ntohs(req.a[j].sin_local.sin_port) == PM_PORT;
	return n;
}

/* The subflows of client end @c and server end @s and their tcpi_rto in *@r */
static int record_subflows(int c, int s, struct subflow_rtos *r)
{
	struct tcp_info ti[MPTCP_SUBFLOWS] = { { 0 } };
	int k, j, n;

	for (k = 0; k < 2; k++) {
		n = subflow_info(k ? s : c, ti, MPTCP_SUBFLOWS);
		if (n < 0)
			return -1;
		r->n[k] = n;
		for (j = 0; j < n && j < MPTCP_SUBFLOWS; j++)
			r->rto[k][j] = ti[j].tcpi_rto;
	}
	return 0;
}

/* The number of subflows MPTCP socket @fd has added to its first, -1 on a failure */
static int subflows_added(int fd, struct mptcp_info *mi)
{
	socklen_t len = sizeof(*mi);

	memset(mi, 0, sizeof(*mi));
	if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, mi, &len))
		return fail("MPTCP_INFO");
	return mi->mptcpi_subflows;
}

/*
 * Connect MPTCP socket @c to listener @l at @a (*s the accepted end) and
 * wait until the path managers have added a subflow at each end; then an
 * exchange gives every subflow an RTT sample.
 */
static int mptcp_conn(int l, const struct sockaddr_in *a, int c, int *s)
{
	struct mptcp_info mi;
	int nc, ns;
	i64 t0;

	/* the path managers add subflows once the first exchange completes the handshake */
	if (connect_accept(l, a, c, s) || exchange(c, *s, &M->x))
		return -1;
	for (t0 = now_ns();; sleep_ns(POLL_NS)) {
		nc = subflows_added(c, &mi);
		ns = subflows_added(*s, &mi);
		if (nc < 0 || ns < 0)
			return -1;
		if (nc >= 1 && ns >= 1)
			break;
		if (now_ns() - t0 > DACK_WAIT_MS * NSEC_PER_MSEC) {
			errno = ETIMEDOUT;
			return fail("no second subflow in %d ms (%d and %d added)", DACK_WAIT_MS,
				    nc, ns);
		}
	}
	return exchange(c, *s, &M->x);
}

/* Close a measured connection and remove the endpoints: the next measurements time one subflow */
static int mptcp_done(int c, int s, int ret)
{
	drop(c);
	drop(s);
	if (run_cmd(IP " mptcp endpoint flush"))
		ret = -1;
	return ret;
}

/*
 * A connection with a second subflow, which the client's path manager adds
 * from a workqueue (an endpoint 127.0.0.2, "subflow") and the server
 * accepts with MP_JOIN: MPTCP_INFO's flags of both ends and the RTO of
 * every subflow after an exchange.
 */
static int measure_mptcp(int l, const struct sockaddr_in *a)
{
	struct mptcp_info mi;
	int c = -1, s = -1, k, ret = -1;

	if (run_cmd(IP " mptcp limits set subflows 1 add_addr_accepted 0") ||
	    run_cmd(IP " mptcp endpoint add 127.0.0.2 dev lo subflow"))
		return -1;
	c = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
	if (mptcp_conn(l, a, c, &s))
		goto out;
	for (k = 0; k < 2; k++) {
		if (subflows_added(k ? s : c, &mi) < 0)
			goto out;
		M->mptcp_flags[k] = mi.mptcpi_flags;
	}
	ret = record_subflows(c, s, &M->sf);
out:
	return mptcp_done(c, s, ret);
}

/*
 * An endpoint with a port of its own (PM_ADDR port PM_PORT, "signal"):
 * the path manager listens on it with a kernel socket and announces it to
 * the peer, which joins there. Client and server share this network
 * namespace, so both ends announce it; only the client accepts
 * announcements: an MPTCP socket takes that from the limits when it is
 * made, and the server's is made when the handshake completes, after they
 * drop to 0. The client joins the endpoint, the server accepts the join on
 * its listener. The subflows of both ends and their tcpi_rto after an
 * exchange.
 */
static int measure_mptcp_port(int l, const struct sockaddr_in *a)
{
	char cmd[128];
	int c = -1, s = -1, k, ret = -1;

	snprintf(cmd, sizeof(cmd), IP " mptcp endpoint add %s port %d signal", PM_ADDR, PM_PORT);
	if (run_cmd(IP " mptcp limits set subflows 1 add_addr_accepted 1") || run_cmd(cmd))
		return -1;
	c = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
	if (run_cmd(IP " mptcp limits set subflows 1 add_addr_accepted 0") ||
	    mptcp_conn(l, a, c, &s))
		goto out;
	for (k = 0; k < 2; k++) {
		M->port_joined[k] = subflows_on_pm_port(k ? s : c);
		if (M->port_joined[k] < 0)
			goto out;
	}
	ret = record_subflows(c, s, &M->port_sf);
out:
	return mptcp_done(c, s, ret);
}

/*
 * SO_RCVTIMEO, set before connect(), of an SMC socket that falls back to
 * TCP: SMC copies it to its TCP socket, on which recv() then waits
 */
static int measure_smc_rcvtimeo(int l, const struct sockaddr_in *a)
{
	struct timeval tv = { .tv_usec = SMC_TIMEO_MS * 1000 };
	int c, s = -1, ret = -1;
	char b;
	i64 t0;

	c = socket(AF_INET, SOCK_STREAM, IPPROTO_SMC);
	if (c < 0 || setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		fail("SMC socket with SO_RCVTIMEO");
		goto out;
	}
	if (connect_accept(l, a, c, &s))
		goto out;
	t0 = now_ns();
	if (recv(c, &b, 1, 0) != -1 || errno != EAGAIN) {
		fail("recv() did not time out");
		goto out;
	}
	M->rcvtimeo = now_ns() - t0;
	ret = 0;
out:
	drop(c);
	drop(s);
	return ret;
}

/*
 * SO_SNDTIMEO of an SMC socket whose non-blocking connect() gets no
 * answer: SMC waits for the TCP handshake in a worker, that long, then
 * fails the connection with EPIPE
 */
static int measure_smc_sndtimeo(const struct sockaddr_in *a)
{
	struct timeval tv = { .tv_usec = SMC_TIMEO_MS * 1000 };
	struct pollfd p = { .events = POLLOUT };
	socklen_t len = sizeof(int);
	int c, err = 0, ret = -1;
	i64 t0;

	if (tc("add dev lo root netem loss 100%"))
		return -1;
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_SMC);
	if (c < 0 || setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		fail("SMC socket with SO_SNDTIMEO");
		goto out;
	}
	t0 = now_ns();
	if (!connect(c, (const struct sockaddr *)a, sizeof(*a)) || errno != EINPROGRESS) {
		fail("non-blocking connect");
		goto out;
	}
	p.fd = c;
	if (poll(&p, 1, SYN_WAIT_MS) != 1) {
		fail("the unanswered connect() did not fail in %d ms", SYN_WAIT_MS);
		goto out;
	}
	M->sndtimeo = now_ns() - t0;
	if (getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len) || err != EPIPE) {
		fail("the unanswered connect() failed with %d, not EPIPE", err);
		goto out;
	}
	ret = 0;
out:
	return lo_qdisc_done(ret, c, -1);
}

/*
 * TCP_DEFER_ACCEPT of an SMC listener: accept() waits that long for the
 * first data of a connection, here on the TCP socket it fell back to, and
 * returns it without data. Timed from when the listener has it queued.
 */
static int measure_smc_defer_accept(void)
{
	struct pollfd p = { .events = POLLIN };
	int secs = SMC_DEFER_S, l, c = -1, s = -1, ret = -1;
	struct sockaddr_in a;
	i64 t0;

	l = listener(&a);
	if (l < 0)
		return -1;
	if (setsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs))) {
		fail("TCP_DEFER_ACCEPT on the SMC listener");
		goto out;
	}
	c = socket(AF_INET, SOCK_STREAM, IPPROTO_SMC);
	if (c < 0 || connect(c, (const struct sockaddr *)&a, sizeof(a))) {
		fail("connect");
		goto out;
	}
	p.fd = l;
	if (poll(&p, 1, SYN_WAIT_MS) != 1) {
		fail("no connection queued on the listener in %d ms", SYN_WAIT_MS);
		goto out;
	}
	t0 = now_ns();
	s = accept(l, NULL, NULL);
	if (s < 0) {
		fail("accept");
		goto out;
	}
	M->defer = now_ns() - t0;
	ret = 0;
out:
	drop(c);
	drop(s);
	drop(l);
	return ret;
}

static void child(int rfd, int wfd)
{
	struct sockaddr_in a;
	struct meas m = { 0 };
	int l, k;

	(void)rfd;
	M = &m;
	tu_err = m.err;
	if (netns_setup())
		goto out;
	l = listener(&a);
	if (tu_proto == IPPROTO_SMC) {
		/* with no SMC device, the connections fall back to TCP */
		if (l >= 0 && !measure_smc_rcvtimeo(l, &a) && !measure_smc_sndtimeo(&a) &&
		    !measure_smc_defer_accept() && !measure_rtx(l, &a))
			measure_syn(&a);
		goto out;
	}
	if (tu_proto == IPPROTO_MPTCP) {
		/* the retransmissions and the initial RTO of the subflows */
		if (l >= 0 && !measure_mptcp(l, &a) && !measure_mptcp_port(l, &a) &&
		    !measure_rtx(l, &a))
			measure_syn(&a);
		goto out;
	}
	if (l < 0 || measure_rtx(l, &a) || measure_syn(&a))
		goto out;
	for (k = 0; k < NDACK; k++)
		if (measure_dack(l, &a, k))
			goto out;
	if (measure_txdelay(l, &a))
		goto out;
	measure_rt(l, &a);
out:
	if (write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(1);
	_exit(0);
}

/* ------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
	i64 x = *(const i64 *)a, y = *(const i64 *)b;

	return x < y ? -1 : x > y;
}

static int within(double v, double want, double rel)
{
	return v >= want * (1 - rel) && v <= want * (1 + rel);
}

/*
 * A round trip with TCP_TX_DELAY @d: not shorter than the delay (-5%: the
 * timer wheel and rounding), at most 25% longer (a late fq watchdog or
 * softirq of the emulated guest; srtt averages only 11 samples). Twice or
 * half the factor is +100% or -50%.
 */
static int txd_ok(double v, double d)
{
	return v >= d * 0.95 && v <= d * 1.25;
}

/* The retransmissions and the initial RTO: NPOINTS_RTX points */
static void report_rtx(const struct meas *m, const char *w)
{
	i64 gap[NRTX];
	int k;

	for (k = 0; k < NRTX; k++) {
		gap[k] = k < m->nrtx ? m->rtx[k] - (k ? m->rtx[k - 1] : 0) : -1;
		if (k < m->nrtx)
			ksft_print_msg("%s: retransmission %d at %.1f ms after the write (+%.1f ms), tcpi_backoff %d\n",
				       w, k + 1, ms(m->rtx[k]), ms(gap[k]), m->backoff[k]);
		else
			ksft_print_msg("%s: retransmission %d not seen within %d ms\n", w, k + 1, RTX_WAIT_MS);
	}
	ksft_print_msg("%s: before the write: tcpi_rto %u us, tcpi_rtt %u us\n",
		       w, m->rto0, m->rtt0);
	ksft_test_result(gap[0] >= 170 * NSEC_PER_MSEC && gap[0] <= 260 * NSEC_PER_MSEC,
			 "%s: first retransmission (tail loss probe at the RTO) %.1f ms after the write, in [170, 260]\n",
			 w, ms(gap[0]));
	ksft_test_result(gap[1] >= 170 * NSEC_PER_MSEC && gap[1] <= 260 * NSEC_PER_MSEC,
			 "%s: RTO (floor 200 ms) %.1f ms after the probe, in [170, 260]\n",
			 w, ms(gap[1]));
	ksft_test_result(gap[2] >= 340 * NSEC_PER_MSEC && gap[2] <= 520 * NSEC_PER_MSEC,
			 "%s: backed-off RTO %.1f ms after the first, in [340, 520]\n",
			 w, ms(gap[2]));
	ksft_test_result(m->rto0 >= 200000 && m->rto0 <= 260000,
			 "%s: tcpi_rto %u us, in [200000, 260000]\n", w, m->rto0);
	ksft_test_result(m->syn >= 900 * NSEC_PER_MSEC && m->syn <= 1200 * NSEC_PER_MSEC &&
			 m->synrto >= 950000 && m->synrto <= 1050000,
			 "%s: SYN retransmitted %.1f ms after connect(), in [900, 1200]; tcpi_rto %u us in [950000, 1050000] (initial RTO 1 s)\n",
			 w, ms(m->syn), m->synrto);
}

/* The host's tick (a jiffy) in the time of a namespace at @tdf. */
static double host_tick_ms(int tdf)
{
	return ms(tick_ns()) / tdf;
}

static void report(const struct meas *m, int tdf, const char *w)
{
	double tick_ms = host_tick_ms(tdf);
	double rt_want = 2.0 * NETEM_DELAY_MS * 1000 / tdf, med, rtmin, p_want, d_want;
	const struct tcp_info *ti = &m->ti, *tl = &m->tidle;
	i64 d[NDACK], r[NRT];
	unsigned int txd_us;
	int k, ok, ratio;

	if (setup_failed(m->err, w, NPOINTS_RUN))
		return;
	report_rtx(m, w);

	/* delayed ACKs */
	memcpy(d, m->dack, sizeof(d));
	qsort(d, NDACK, sizeof(d[0]), cmp_i64);
	ksft_print_msg("%s: delayed ACKs (ms, sorted): %.1f %.1f %.1f %.1f %.1f\n",
		       w, ms(d[0]), ms(d[1]), ms(d[2]), ms(d[3]), ms(d[4]));
	ksft_test_result(d[0] >= 36 * NSEC_PER_MSEC && d[0] <= 60 * NSEC_PER_MSEC,
			 "%s: delayed ACK (narrowest of %d) %.1f ms, in [36, 60]\n",
			 w, NDACK, ms(d[0]));
	ksft_print_msg("%s: receivers' tcpi_ato after the delayed ACK (us): %u %u %u %u %u\n",
		       w, m->ato[0], m->ato[1], m->ato[2], m->ato[3], m->ato[4]);
	for (ok = 1, k = 0; k < NDACK; k++)
		ok &= m->ato[k] >= 38000 && m->ato[k] <= 42000;
	ksft_test_result(ok, "%s: receiver's tcpi_ato in [38000, 42000] us (%d connections)\n", w,
			 NDACK);

	/* round trips and rates */
	memcpy(r, m->rt, sizeof(r));
	qsort(r, NRT, sizeof(r[0]), cmp_i64);
	med = (double)(r[NRT / 2 - 1] + r[NRT / 2]) / 2 / NSEC_PER_USEC;
	rtmin = (double)r[0] / NSEC_PER_USEC;
	ksft_print_msg("%s: round trips (ms): min %.2f median %.2f max %.2f; tcpi_rtt %u us, tcpi_min_rtt %u us, tcpi_rttvar %u us\n",
		       w, rtmin / 1000, med / 1000, ms(r[NRT - 1]), ti->tcpi_rtt, ti->tcpi_min_rtt,
		       ti->tcpi_rttvar);
	ksft_test_result(within(ti->tcpi_rtt, rt_want, 0.05) && within(ti->tcpi_rtt, med, 0.05),
			 "%s: tcpi_rtt %u us within 5%% of %.0f us and of the median round trip %.0f us\n",
			 w, ti->tcpi_rtt, rt_want, med);
	ksft_test_result(within(ti->tcpi_min_rtt, rt_want, 0.05) &&
			 within(ti->tcpi_min_rtt, med, 0.05),
			 "%s: tcpi_min_rtt %u us within 5%% of %.0f us and of the median round trip %.0f us\n",
			 w, ti->tcpi_min_rtt, rt_want, med);
	/*
	 * tcp_update_pacing_rate(): ratio % of mss x max(cwnd, packets out)
	 * per srtt, the slow-start ratio below ssthresh / 2 (0: initial)
	 */
	ratio = !ti->tcpi_snd_ssthresh || ti->tcpi_snd_cwnd < ti->tcpi_snd_ssthresh / 2 ? 200 : 120;
	p_want = ratio / 100.0 * ti->tcpi_snd_mss * 1e6 / med *
		 (ti->tcpi_snd_cwnd > ti->tcpi_unacked ? ti->tcpi_snd_cwnd : ti->tcpi_unacked);
	d_want = ti->tcpi_snd_mss * 1e6 / rtmin;
	ksft_print_msg("%s: tcpi_pacing_rate %llu B/s (want %.0f: %d%% x mss %u x cwnd %u per median round trip), tcpi_delivery_rate %llu B/s (want %.0f: mss per shortest round trip)\n",
		       w, (unsigned long long)ti->tcpi_pacing_rate, p_want, ratio, ti->tcpi_snd_mss,
		       ti->tcpi_snd_cwnd, (unsigned long long)ti->tcpi_delivery_rate, d_want);
	ksft_test_result(within((double)ti->tcpi_pacing_rate, p_want, 0.10) &&
			 within((double)ti->tcpi_delivery_rate, d_want, 0.10),
			 "%s: tcpi_pacing_rate and tcpi_delivery_rate within 10%% of their value per namespace second\n",
			 w);
	ksft_print_msg("%s: after %d ms idle: tcpi_last_data_sent %u ms in [%.1f, %.1f], tcpi_last_data_recv %u ms, tcpi_last_ack_recv %u ms in [%.1f, %.1f] (+- %.1f ms)\n",
		       w, IDLE_MS, tl->tcpi_last_data_sent, ms(m->i0 - m->x.w1), ms(m->i1 - m->x.w0),
		       tl->tcpi_last_data_recv, tl->tcpi_last_ack_recv, ms(m->i0 - m->x.r1),
		       ms(m->i1 - m->x.r1 + 10 * NSEC_PER_MSEC), tick_ms + 1);
	ksft_test_result(last_ok(tl->tcpi_last_data_sent, m->i0 - m->x.w1, m->i1 - m->x.w0, tick_ms) &&
			 last_ok(tl->tcpi_last_data_recv, m->i0 - m->x.r1,
				 m->i1 - m->x.r1 + 10 * NSEC_PER_MSEC, tick_ms) &&
			 last_ok(tl->tcpi_last_ack_recv, m->i0 - m->x.r1,
				 m->i1 - m->x.r1 + 10 * NSEC_PER_MSEC, tick_ms),
			 "%s: tcpi_last_data_sent, _data_recv, _ack_recv after %d ms idle\n",
			 w, IDLE_MS);

	/* TCP_TX_DELAY: a delay of the socket's time */
	txd_us = TX_DELAY_HOST_US / tdf;
	memcpy(r, m->txd_rt, sizeof(r));
	qsort(r, NRT, sizeof(r[0]), cmp_i64);
	med = (double)(r[NRT / 2 - 1] + r[NRT / 2]) / 2 / NSEC_PER_USEC;
	ksft_print_msg("%s: TCP_TX_DELAY %u us, fq on lo: round trips (ms): min %.2f median %.2f max %.2f; tcpi_rtt %u us\n",
		       w, txd_us, ms(r[0]), med / 1000, ms(r[NRT - 1]), m->txd_rtt);
	ksft_test_result(txd_ok(m->txd_rtt, txd_us) && txd_ok(med, txd_us),
			 "%s: TCP_TX_DELAY %u us: tcpi_rtt %u us and the median round trip %.0f us in [-5%%, +25%%] of it\n",
			 w, txd_us, m->txd_rtt, med);
}

/* A point: every subflow of both ends at the RTO floor (200 ms, plus the RTT and a tick or so) */
static void report_subflow_rtos(const struct subflow_rtos *r, const char *w, const char *what)
{
	int k, j, ok = r->n[0] && r->n[1];

	for (k = 0; k < 2; k++)
		for (j = 0; j < r->n[k] && j < MPTCP_SUBFLOWS; j++) {
			ksft_print_msg("%s: %s%s subflow %d: tcpi_rto %u us\n", w, what,
				       k ? "server" : "client", j + 1, r->rto[k][j]);
			ok &= r->rto[k][j] >= 200000 && r->rto[k][j] <= 260000;
		}
	ksft_test_result(ok, "%s: %stcpi_rto of every subflow of both ends in [200000, 260000] us (RTO floor 200 ms)\n",
			 w, what);
}

/* An MPTCP run: NPOINTS_MPTCP points */
static void report_mptcp(const struct meas *m, const char *w)
{
	unsigned int fb = MPTCP_INFO_FLAG_FALLBACK;

	if (setup_failed(m->err, w, NPOINTS_MPTCP))
		return;
	ksft_test_result(!(m->mptcp_flags[0] & fb) && !(m->mptcp_flags[1] & fb) &&
			 m->sf.n[0] == MPTCP_SUBFLOWS && m->sf.n[1] == MPTCP_SUBFLOWS,
			 "%s: both ends MPTCP, no fallback to TCP (MPTCP_INFO flags %#x, %#x), %d and %d subflows (want %d)\n",
			 w, m->mptcp_flags[0], m->mptcp_flags[1], m->sf.n[0], m->sf.n[1],
			 MPTCP_SUBFLOWS);
	report_subflow_rtos(&m->sf, w, "");
	ksft_test_result(m->port_sf.n[0] == MPTCP_SUBFLOWS && m->port_sf.n[1] == MPTCP_SUBFLOWS &&
			 m->port_joined[0] == 0 && m->port_joined[1] == 1,
			 "%s: endpoint %s port %d: %d and %d subflows (want %d), %d and %d of them accepted on its listener (want 0 and 1)\n",
			 w, PM_ADDR, PM_PORT, m->port_sf.n[0], m->port_sf.n[1],
			 MPTCP_SUBFLOWS, m->port_joined[0], m->port_joined[1]);
	report_subflow_rtos(&m->port_sf, w, "endpoint with a port: ");
	report_rtx(m, w);
}

/*
 * How late the timer wheel may end a timeout of @host_ms, in ms: a timeout
 * of n jiffies goes to the level whose granule is 8^L jiffies, where
 * 63 * 8^(L-1) <= n < 63 * 8^L, and is rounded up to a whole granule
 * (at most about 12.5%: 32 ms for 1 s at HZ 250).
 */
static double wheel_granule_ms(double host_ms)
{
	double tick = ms(tick_ns());
	double n = host_ms / tick, g = 1;

	while (n >= 63 * g)
		g *= 8;
	return g * tick;
}

/*
 * An SMC run: NPOINTS_SMC points. The receive and connect timeouts and the
 * deferred accept: not shorter than their time, less a host tick (a
 * timeout of n jiffies ends after n - 1 and a fraction), at most 30 ms
 * late, and for the deferred accept, a 1 s wait, also the timer wheel's
 * granule (in the root namespace a VM run measured 1027.7 ms); twice or
 * half the factor is 200 or 50 ms, 2 or 0.5 s.
 */
static void report_smc(const struct meas *m, int tdf, const char *w)
{
	double lo = SMC_TIMEO_MS - host_tick_ms(tdf), hi = SMC_TIMEO_MS + 30;

	if (setup_failed(m->err, w, NPOINTS_SMC))
		return;
	ksft_test_result(ms(m->rcvtimeo) >= lo && ms(m->rcvtimeo) <= hi,
			 "%s: SO_RCVTIMEO %d ms, set before connect(): recv() timed out after %.1f ms, in [%.1f, %.1f]\n",
			 w, SMC_TIMEO_MS, ms(m->rcvtimeo), lo, hi);
	ksft_test_result(ms(m->sndtimeo) >= lo && ms(m->sndtimeo) <= hi,
			 "%s: SO_SNDTIMEO %d ms, non-blocking connect() unanswered: it failed after %.1f ms, in [%.1f, %.1f]\n",
			 w, SMC_TIMEO_MS, ms(m->sndtimeo), lo, hi);
	lo = SMC_DEFER_S * 1000 - host_tick_ms(tdf);
	hi = SMC_DEFER_S * 1000 + wheel_granule_ms(SMC_DEFER_S * 1000.0 * tdf) / tdf + 30;
	ksft_test_result(ms(m->defer) >= lo && ms(m->defer) <= hi,
			 "%s: TCP_DEFER_ACCEPT %d s, no data: accept() returned after %.1f ms, in [%.1f, %.1f]\n",
			 w, SMC_DEFER_S, ms(m->defer), lo, hi);
	report_rtx(m, w);
}

static void run(const char *factor, int tdf, struct meas *m)
{
	tx_delay_us = TX_DELAY_HOST_US / tdf;
	if (tcp_child_result(factor, child, m, sizeof(*m)))
		snprintf(m->err, sizeof(m->err), "the child died");
}

int main(void)
{
	static struct meas dil, host, mp_dil, mp_host, smc_dil, smc_host;
	i64 t0;

	tcp_test_start(NPOINTS);

	/* the controls first, in the root time namespace: TCP, then MPTCP */
	t0 = host_ns(CLOCK_MONOTONIC);
	run(NULL, 1, &host);
	tu_proto = IPPROTO_MPTCP;
	run(NULL, 1, &mp_host);
	tu_proto = IPPROTO_SMC;
	run(NULL, 1, &smc_host);
	ksft_print_msg("root namespace: measured in %.1f s\n",
		       ms(host_ns(CLOCK_MONOTONIC) - t0) / 1000);
	unshare_timens_or_skip();
	t0 = host_ns(CLOCK_MONOTONIC);
	tu_proto = 0;
	run("10", 10, &dil);
	tu_proto = IPPROTO_MPTCP;
	run("10", 10, &mp_dil);
	tu_proto = IPPROTO_SMC;
	run("10", 10, &smc_dil);
	ksft_print_msg("TDF 10: measured in %.1f s of host time\n",
		       ms(host_ns(CLOCK_MONOTONIC) - t0) / 1000);

	report(&dil, 10, "TDF 10");
	report(&host, 1, "root namespace");
	report_mptcp(&mp_dil, "MPTCP, TDF 10");
	report_mptcp(&mp_host, "MPTCP, root namespace");
	report_smc(&smc_dil, 10, "SMC, TDF 10");
	report_smc(&smc_host, 1, "SMC, root namespace");
	ksft_finished();
	return 0;
}
