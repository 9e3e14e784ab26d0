package node

import (
	"errors"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TCP states (include/net/tcp_states.h) that need nothing more from the
// network: a listener, a connection in TIME_WAIT, a closed socket.
const (
	tcpTimeWait = 6
	tcpClose    = 7
	tcpListen   = 10
)

// Polling interval of the linger step, host time.
const lingerPoll = 20 * time.Millisecond

// lingerBound is how long the teardown keeps a node's network up for its
// connections to close: four host round trips of its link (netem delays are
// host time), at least 1 s, at most 20 s. A close takes one round trip; a
// peer that still sends data to a closed socket gets its reset one round
// trip later.
func lingerBound(p *Plan) time.Duration {
	var rtt time.Duration
	if p.Up != nil {
		rtt += time.Duration(p.Up.DelayNS + 2*p.Up.JitterNS)
	}
	if p.Down != nil {
		rtt += time.Duration(p.Down.DelayNS + 2*p.Down.JitterNS)
	}
	return min(max(4*rtt, time.Second), 20*time.Second)
}

// lingerConnections runs in the teardown after the node's processes have
// gone and before its veth does. Their sockets close with a FIN, or a reset
// when data was left unread, and both wait in the node's egress netem queue
// (the link's delay, in host time); a peer that still sends data is answered
// with a reset only while the node's network exists. Deleting the veth at
// once drops all of that, and the peer retransmits into the void for many
// minutes (an iperf3 server's control connection, seen at TDF 10). So wait
// until the node's network namespace holds no TCP connection still closing
// and its egress queue is empty, or until @bound.
func lingerConnections(netNS *os.File, nodeIf string, bound time.Duration) error {
	h, err := netlink.NewHandleAt(netns.NsHandle(netNS.Fd()), unix.NETLINK_INET_DIAG, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	deadline := time.Now().Add(bound)
	for {
		busy, err := nodeNetBusy(h, nodeIf)
		if err != nil || !busy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(lingerPoll)
	}
}

// nodeNetBusy: a TCP connection of the node is still opening or closing, or
// its egress queue holds packets.
func nodeNetBusy(h *netlink.Handle, nodeIf string) (bool, error) {
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := h.SocketDiagTCP(family)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return false, err
		}
		for _, s := range socks {
			if s.State != tcpTimeWait && s.State != tcpClose && s.State != tcpListen {
				return true, nil
			}
		}
		if err != nil {
			return true, nil // interrupted dump: look again
		}
	}
	l, err := h.LinkByName(nodeIf)
	if err != nil {
		return false, nil // the link is gone: nothing left to send
	}
	qdiscs, err := h.QdiscList(l)
	if err != nil {
		return false, err
	}
	for _, q := range qdiscs {
		if st := q.Attrs().Statistics; st != nil && st.Queue != nil && st.Queue.Qlen > 0 {
			return true, nil
		}
	}
	return false, nil
}
