package node

import (
	"encoding/binary"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"tdfctl/scaling"
)

// netem attribute numbers beyond what the netlink library names.
const (
	tcaNetemLatency64 = 10
	tcaNetemJitter64  = 11
	tcaNetemSlot      = 12
	tcaNetemPrngSeed  = 14 // TCA_NETEM_PRNG_SEED (Linux 6.3)
)

// replaceNetem installs netem as the root qdisc of ifindex through sock (a
// netlink socket in the right network namespace). The library's Netem type
// lacks 64-bit delays, slots and the PRNG seed, so the message is built here
// with its nl helpers.
func replaceNetem(sock *nl.NetlinkSocket, ifindex int, n scaling.Netem) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: sock}}
	req.AddData(&nl.TcMsg{
		Family:  nl.FAMILY_ALL,
		Ifindex: int32(ifindex),
		Handle:  netlink.MakeHandle(1, 0),
		Parent:  netlink.HANDLE_ROOT,
	})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("netem")))
	ticks := func(ns int64) uint32 { // psched ticks are 64 ns
		t := ns >> 6
		if t > 0xFFFFFFFF {
			return 0xFFFFFFFF
		}
		return uint32(t)
	}
	opt := nl.TcNetemQopt{
		Latency:   ticks(n.DelayNS),
		Limit:     n.Limit,
		Loss:      scaling.ProbU32(n.Loss),
		Duplicate: scaling.ProbU32(n.Duplicate),
		Jitter:    ticks(n.JitterNS),
	}
	options := nl.NewRtAttr(nl.TCA_OPTIONS, opt.Serialize())
	corr := nl.TcNetemCorr{
		DelayCorr: scaling.ProbU32(n.DelayCorrelation),
		LossCorr:  scaling.ProbU32(n.LossCorrelation),
		DupCorr:   scaling.ProbU32(n.DuplicateCorrelation),
	}
	if corr.DelayCorr > 0 || corr.LossCorr > 0 || corr.DupCorr > 0 {
		options.AddRtAttr(nl.TCA_NETEM_CORR, corr.Serialize())
	}
	if p := scaling.ProbU32(n.Corrupt); p > 0 {
		c := nl.TcNetemCorrupt{Probability: p, Correlation: scaling.ProbU32(n.CorruptCorrelation)}
		options.AddRtAttr(nl.TCA_NETEM_CORRUPT, c.Serialize())
	}
	if p := scaling.ProbU32(n.Reorder); p > 0 {
		r := nl.TcNetemReorder{Probability: p, Correlation: scaling.ProbU32(n.ReorderCorrelation)}
		options.AddRtAttr(nl.TCA_NETEM_REORDER, r.Serialize())
	}
	if n.RateBytesPerSec > 0 {
		r := nl.TcNetemRate{PacketOverhead: n.PacketOverhead}
		if n.RateBytesPerSec >= 1<<32 {
			options.AddRtAttr(nl.TCA_NETEM_RATE64, nl.Uint64Attr(n.RateBytesPerSec))
			r.Rate = ^uint32(0)
		} else {
			r.Rate = uint32(n.RateBytesPerSec)
		}
		options.AddRtAttr(nl.TCA_NETEM_RATE, r.Serialize())
	}
	if n.ECN {
		options.AddRtAttr(nl.TCA_NETEM_ECN, nl.Uint32Attr(1))
	}
	if n.Distribution != "" {
		table, err := LoadDistribution(n.Distribution)
		if err != nil {
			return err
		}
		b := make([]byte, 2*len(table))
		for i, v := range table {
			binary.NativeEndian.PutUint16(b[2*i:], uint16(v))
		}
		options.AddRtAttr(nl.TCA_NETEM_DELAY_DIST, b)
	}
	options.AddRtAttr(tcaNetemLatency64, nl.Uint64Attr(uint64(n.DelayNS)))
	options.AddRtAttr(tcaNetemJitter64, nl.Uint64Attr(uint64(n.JitterNS)))
	if n.SlotMinNS > 0 {
		// struct tc_netem_slot { s64 min_delay, max_delay; s32 max_packets, max_bytes; s64 dist_delay, dist_jitter; }
		b := make([]byte, 40)
		binary.NativeEndian.PutUint64(b[0:], uint64(n.SlotMinNS))
		binary.NativeEndian.PutUint64(b[8:], uint64(n.SlotMaxNS))
		binary.NativeEndian.PutUint32(b[16:], n.SlotPackets)
		binary.NativeEndian.PutUint32(b[20:], n.SlotBytes)
		options.AddRtAttr(tcaNetemSlot, b)
	}
	if n.Seed != nil {
		options.AddRtAttr(tcaNetemPrngSeed, nl.Uint64Attr(*n.Seed))
	}
	req.AddData(options)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}
