package node

import (
	"errors"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"tdfctl/scaling"
)

// ReplaceNetemAt installs n as the root qdisc (handle 1:) of the link named
// ifname in the network namespace ns (netns.None(): the current one), with
// the same netlink message dilated-node uses. For other programs (the CNI
// plugin tdf-cni).
func ReplaceNetemAt(ns netns.NsHandle, ifname string, n scaling.Netem) error {
	return atLink(ns, ifname, func(s *nl.NetlinkSocket, ifindex int) error {
		return replaceNetem(s, ifindex, n)
	})
}

// atLink calls fn with a netlink socket in ns and the index of its link
// ifname, for the exported *At functions.
func atLink(ns netns.NsHandle, ifname string, fn func(s *nl.NetlinkSocket, ifindex int) error) error {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(ifname)
	if err != nil {
		return err
	}
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s, l.Attrs().Index)
}

// RootNetem returns the root qdisc of ifname in ns if it is a netem (nil if
// the link has another root qdisc or none).
func RootNetem(ns netns.NsHandle, ifname string) (*netlink.Netem, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	l, err := h.LinkByName(ifname)
	if err != nil {
		return nil, err
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if n, ok := q.(*netlink.Netem); ok && q.Attrs().Parent == netlink.HANDLE_ROOT {
			return n, nil
		}
	}
	return nil, nil
}

// DelRootNetem removes the root netem qdisc of ifname in ns. A missing link
// or a root qdisc that is not a netem is not an error (nothing to remove).
func DelRootNetem(ns netns.NsHandle, ifname string) error {
	q, err := RootNetem(ns, ifname)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) || (err == nil && q == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
		return err
	}
	return nil
}
