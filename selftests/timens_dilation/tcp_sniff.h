/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a test's TCP puts on lo, seen through a packet socket: the ports,
 * flags, payload length and timestamp option of each segment, for the
 * selftests of TCP's timestamp option (dilation_tcp_tsval,
 * dilation_tcp_tsval_change). Setup failures go through tcp_util.h's fail().
 */
#ifndef TCP_SNIFF_H
#define TCP_SNIFF_H

#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <netinet/ip.h>
#include "tcp_util.h"

#define OPT_EOL		0		/* TCP option kinds (RFC 9293, RFC 7323) */
#define OPT_NOP		1
#define OPT_TS		8
#define OPT_TS_LEN	10
#define TH_SYN_ACK	0x12		/* SYN and ACK in the TCP flags byte */
#define SNIFF_RCVBUF	(4 << 20)	/* bytes the packet socket may hold */

struct seg {
	unsigned short sport, dport;
	unsigned char flags;
	unsigned int len;		/* payload bytes */
	int has_ts;
	unsigned int tsval, tsecr;
};

static int sniffer = -1;
static unsigned int sniff_cut;	/* segments read past a caller's @max, dropped */

/* A packet socket on lo: what this namespace's TCP sends there */
static inline int sniff_open(void)
{
	struct sockaddr_ll sll = { 0 };

	sniffer = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(ETH_P_IP));
	if (sniffer < 0)
		return fail("socket(AF_PACKET)");
	/* room for a stall of the reader under emulation (root may exceed rmem_max) */
	setsockopt(sniffer, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ SNIFF_RCVBUF }, sizeof(int));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_IP);
	sll.sll_ifindex = if_nametoindex("lo");
	if (!sll.sll_ifindex || bind(sniffer, (struct sockaddr *)&sll, sizeof(sll)))
		return fail("bind the packet socket to lo");
	return 0;
}

/* Parse one IPv4 packet (@n bytes of it may be cut short); 0 if it is a TCP segment */
static inline int sniff_parse(const unsigned char *p, size_t n, struct seg *s)
{
	const struct iphdr *ip = (const void *)p;
	const struct tcphdr *th;
	size_t ihl, doff, o;

	if (n < sizeof(*ip) || ip->protocol != IPPROTO_TCP)
		return -1;
	ihl = ip->ihl * 4;
	if (n < ihl + sizeof(*th))
		return -1;
	th = (const void *)(p + ihl);
	doff = th->doff * 4;
	if (n < ihl + doff || ntohs(ip->tot_len) < ihl + doff)
		return -1;
	memset(s, 0, sizeof(*s));
	s->sport = ntohs(th->source);
	s->dport = ntohs(th->dest);
	s->flags = p[ihl + 13];
	s->len = ntohs(ip->tot_len) - ihl - doff;
	for (o = sizeof(*th); o < doff;) {
		unsigned char kind = p[ihl + o], len;

		if (kind == OPT_EOL)
			break;
		if (kind == OPT_NOP) {
			o++;
			continue;
		}
		if (o + 1 >= doff)
			break;
		len = p[ihl + o + 1];
		if (len < 2 || o + len > doff)
			break;
		if (kind == OPT_TS && len == OPT_TS_LEN) {
			uint32_t v[2];

			memcpy(v, p + ihl + o + 2, sizeof(v));
			s->has_ts = 1;
			s->tsval = ntohl(v[0]);
			s->tsecr = ntohl(v[1]);
		}
		o += len;
	}
	return 0;
}

/*
 * The segments sent since the last call, in the order they left, at most
 * @max (the rest are read and dropped). Only headers are kept: a TSO
 * segment is cut to the buffer, its length read from the IP header.
 */
static inline int sniff(struct seg *segs, int max)
{
	unsigned char buf[2048];
	int n = 0;
	ssize_t r;

	for (;;) {
		r = recv(sniffer, buf, sizeof(buf), 0);
		if (r < 0)
			break;
		/* a packet socket sees each segment on lo once (PACKET_HOST) */
		if (n == max) {
			sniff_cut++;
			continue;
		}
		if (!sniff_parse(buf, r, &segs[n]))
			n++;
	}
	return n;
}

/*
 * Segments the capture lost since the last call: those the packet socket
 * dropped (its buffer full) and those sniff() cut; -1 if unknown.
 */
static inline long long sniff_lost(void)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);
	long long cut = sniff_cut;

	sniff_cut = 0;
	if (getsockopt(sniffer, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		return -1;
	return cut + st.tp_drops;
}

/* The last segment from @sport to @dport with payload (@syn_ack: a SYN-ACK); NULL if none */
static inline const struct seg *sniff_find(const struct seg *segs, int n, int sport, int dport,
					   int syn_ack)
{
	const struct seg *found = NULL;
	int k;

	for (k = 0; k < n; k++) {
		if (segs[k].sport != sport || segs[k].dport != dport || !segs[k].has_ts)
			continue;
		if (syn_ack ? (segs[k].flags & TH_SYN_ACK) == TH_SYN_ACK : segs[k].len > 0)
			found = &segs[k];
	}
	return found;
}

static inline unsigned int ms_of(i64 ns)
{
	return (unsigned int)(ns / NSEC_PER_MSEC);
}

/* Write a byte from @from in [*w0, *w1], read it at @to; the segment it went out in */
static inline int send_byte(int from, int to, i64 *w0, i64 *w1, struct seg *segs, int max,
			    struct seg *out)
{
	const struct seg *s;
	char b = 'x';
	int n;

	sniff(segs, max);
	*w0 = now_ns();
	if (write(from, &b, 1) != 1)
		return fail("write");
	*w1 = now_ns();
	if (read(to, &b, 1) != 1)
		return fail("read");
	n = sniff(segs, max);
	s = sniff_find(segs, n, port_of(from, 0), port_of(from, 1), 0);
	if (!s) {
		errno = ENOENT;
		return fail("no data segment with timestamps seen");
	}
	*out = *s;
	return 0;
}

/* TSval @v in the ms of the bracket [lo, hi] (ns), less @early ms */
static inline int in_ms(unsigned int v, i64 lo, i64 hi, unsigned int early)
{
	return (int)(v - (ms_of(lo) - early)) >= 0 && (int)(ms_of(hi) - v) >= 0;
}

#endif /* TCP_SNIFF_H */
