package node

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"tdfctl/scaling"
)

// Attribute numbers of <linux/neighbour.h> (RTM_GETNEIGHTBL, RTM_SETNEIGHTBL)
// that x/sys/unix does not name.
const (
	ndtaName  = 1 // NDTA_NAME: the table, "arp_cache" or "ndisc_cache"
	ndtaParms = 6 // NDTA_PARMS: nested NDTPA_*

	ndtpaIfindex = 1 // NDTPA_IFINDEX: absent in the table's defaults
)

// neighbourTimes are the NDTPA_* attributes that are times (u64 ms), with the
// names `ip ntable` prints. They are all perceived times: how long a
// neighbour stays reachable, how often ARP or NDP asks again, how long a
// stale entry waits before probing, and so on. The counts (ucast_probes,
// queue lengths) are dimensionless and stay.
var neighbourTimes = []struct {
	attr uint16
	name string
}{
	{4, "base_reachable"},  // NDTPA_BASE_REACHABLE_TIME
	{5, "retrans"},         // NDTPA_RETRANS_TIME
	{6, "gc_stale"},        // NDTPA_GC_STALETIME
	{7, "delay_probe"},     // NDTPA_DELAY_PROBE_TIME
	{12, "anycast_delay"},  // NDTPA_ANYCAST_DELAY
	{13, "proxy_delay"},    // NDTPA_PROXY_DELAY
	{15, "locktime"},       // NDTPA_LOCKTIME
	{19, "interval_probe"}, // NDTPA_INTERVAL_PROBE_TIME_MS (Linux >= 5.19)
}

// neighbourTables are the tables of an interface: ARP, and NDP when the
// kernel has IPv6.
var neighbourTables = []struct {
	family uint8
	name   string
}{{unix.AF_INET, "arp_cache"}, {unix.AF_INET6, "ndisc_cache"}}

// NeighbourTime is one time of an interface's neighbour table: the table's
// default, read as perceived, and what was set.
type NeighbourTime struct {
	Table, Name string
	PerceivedMS uint64
	PhysicalMS  uint64
}

// describeNeighbourTimes is one line: "neighbour eth0 arp_cache retrans
// 10000ms (1000ms) ... ndisc_cache ...", physical (perceived).
func describeNeighbourTimes(ifname string, set []NeighbourTime) string {
	b := []string{"neighbour", ifname}
	table := ""
	for _, t := range set {
		if t.Table != table {
			table = t.Table
			b = append(b, table)
		}
		b = append(b, fmt.Sprintf("%s %dms (%dms)", t.Name, t.PhysicalMS, t.PerceivedMS))
	}
	return strings.Join(b, " ")
}

// DilateNeighbourTimesAt sets the neighbour-table times of the link ifname
// in the network namespace ns to the kernel's defaults for new interfaces
// multiplied by tdf (package scaling's rule for durations).
//
// The kernel runs neighbour resolution on host time. Without this, ARP gives
// up after mcast_probes x retrans = 3 host seconds: a node whose perceived
// round trip is 40 ms cannot resolve its peer at TDF 100 (4 host seconds),
// and a reachable entry goes stale after 15-45 host seconds, a fraction of
// a perceived second.
//
// The perceived values are the table's defaults, not the link's current ones,
// so calling it twice sets the same values. A kernel without IPv6 has no
// ndisc_cache; that table is then skipped.
func DilateNeighbourTimesAt(ns netns.NsHandle, ifname string, tdf scaling.Factor) (set []NeighbourTime, err error) {
	err = atLink(ns, ifname, func(s *nl.NetlinkSocket, ifindex int) error {
		set, err = dilateNeighbourTimes(s, ifindex, tdf)
		return err
	})
	return set, err
}

func dilateNeighbourTimes(s *nl.NetlinkSocket, ifindex int, tdf scaling.Factor) ([]NeighbourTime, error) {
	var set []NeighbourTime
	for _, tbl := range neighbourTables {
		defaults, err := neighbourDefaults(s, tbl.family, tbl.name)
		if err != nil {
			return set, fmt.Errorf("neighbour table %s: %v", tbl.name, err)
		}
		if defaults == nil {
			if tbl.family == unix.AF_INET {
				return set, fmt.Errorf("the kernel has no neighbour table %s", tbl.name)
			}
			continue
		}
		req := nl.NewNetlinkRequest(unix.RTM_SETNEIGHTBL, unix.NLM_F_ACK)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}
		req.AddData(ndtMsg(tbl.family))
		req.AddData(nl.NewRtAttr(ndtaName, nl.ZeroTerminated(tbl.name)))
		parms := nl.NewRtAttr(ndtaParms, nil)
		parms.AddRtAttr(ndtpaIfindex, nl.Uint32Attr(uint32(ifindex)))
		var these []NeighbourTime
		for _, t := range neighbourTimes {
			v, ok := defaults[t.attr]
			if !ok {
				continue // an older kernel
			}
			phys, err := scaling.ScaleNeighbourTimeMS(tdf, v)
			if err != nil {
				return set, fmt.Errorf("neighbour table %s, %s: %v", tbl.name, t.name, err)
			}
			parms.AddRtAttr(int(t.attr), nl.Uint64Attr(phys))
			these = append(these, NeighbourTime{tbl.name, t.name, v, phys})
		}
		req.AddData(parms)
		if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
			return set, fmt.Errorf("neighbour table %s of interface %d: %v", tbl.name, ifindex, err)
		}
		set = append(set, these...)
	}
	return set, nil
}

// ndtMsg is struct ndtmsg: the family and three bytes of padding.
type ndtMsg uint8

func (m ndtMsg) Len() int          { return 4 }
func (m ndtMsg) Serialize() []byte { return []byte{byte(m), 0, 0, 0} }

// neighbourDefaults returns the times of table name's defaults (the
// parameters the kernel copies to each new interface), nil if the kernel
// has no such table.
func neighbourDefaults(s *nl.NetlinkSocket, family uint8, name string) (map[uint16]uint64, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETNEIGHTBL, unix.NLM_F_DUMP)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}
	req.AddData(ndtMsg(family))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWNEIGHTBL)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if len(m) < 4 {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[4:])
		if err != nil {
			return nil, err
		}
		var tname string
		var parms []byte
		for _, a := range attrs {
			switch a.Attr.Type & nl.NLA_TYPE_MASK {
			case ndtaName:
				tname = strings.TrimRight(string(a.Value), "\x00")
			case ndtaParms:
				parms = a.Value
			}
		}
		if tname != name || parms == nil {
			continue
		}
		pattrs, err := nl.ParseRouteAttr(parms)
		if err != nil {
			return nil, err
		}
		times := map[uint16]uint64{}
		dev := false
		for _, a := range pattrs {
			if a.Attr.Type&nl.NLA_TYPE_MASK == ndtpaIfindex {
				dev = true
			}
			if len(a.Value) == 8 {
				times[a.Attr.Type&nl.NLA_TYPE_MASK] = binary.NativeEndian.Uint64(a.Value)
			}
		}
		if !dev { // the table's own message, not an interface's
			return times, nil
		}
	}
	return nil, nil
}
