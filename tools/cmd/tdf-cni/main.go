// Command tdf-cni is a chained CNI plugin (CNI spec 1.0) that gives a pod's
// veth the link of a netem profile, as perceived at the pod's TDF: the pod
// annotation io.github.time-dilated-containers.netem names a profile of
// netem-profiles/, io.github.time-dilated-containers.tdf the TDF, and
// tdfctl/scaling turns it into two netem qdiscs, "down" on the host end of
// the veth (towards the pod) and "up" on the pod's interface; the times of
// the pod interface's ARP and NDP tables are multiplied by the TDF (the
// kernel runs them on host time). It runs after an interface plugin (bridge,
// ptp) whose result names both ends, and needs the capability
// io.kubernetes.cri.pod-annotations (containerd >= 1.6, CRI-O). Pods without
// the netem annotation pass through untouched.
//
// ADD installs the qdiscs, sets the neighbour times (entries already made by
// then keep their running timer once) and passes the previous result on;
// CHECK verifies the qdiscs; DEL removes them (a missing namespace or link is
// not an error, and the interface plugin's DEL then removes the veth).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/vishvananda/netns"

	"tdfctl/node"
)

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Check: cmdCheck, Del: cmdDel},
		version.PluginSupports("1.0.0", "1.1.0"), "tdf-cni: time-dilated netem for pod veths (time-dilated-containers)")
}

// ends returns the host end and the pod end of the veth in the previous
// result: the pod end is the interface in the pod (sandbox set) named
// args.IfName, the host end the last host-side interface listed before it
// (bridge lists [bridge, host veth, pod interface], ptp [host veth, pod
// interface]).
func ends(res *current.Result, args *skel.CmdArgs) (host, pod string, err error) {
	for _, i := range res.Interfaces {
		if i.Sandbox == "" {
			if pod == "" {
				host = i.Name
			}
		} else if i.Name == args.IfName {
			pod = i.Name
		}
	}
	if host == "" || pod == "" {
		return "", "", fmt.Errorf("the previous result names no veth pair (host end and %s in the pod); chain tdf-cni after bridge or ptp", args.IfName)
	}
	return host, pod, nil
}

func load(args *skel.CmdArgs) (*NetConf, *Plan, *current.Result, error) {
	c, err := parseConf(args.StdinData)
	if err != nil {
		return nil, nil, nil, err
	}
	pl, err := MakePlan(c)
	if err != nil {
		return nil, nil, nil, err
	}
	var res *current.Result
	if c.RawPrevResult != nil {
		if err := version.ParsePrevResult(&c.NetConf); err != nil {
			return nil, nil, nil, err
		}
		if res, err = current.NewResultFromResult(c.PrevResult); err != nil {
			return nil, nil, nil, err
		}
	}
	return c, pl, res, nil
}

func cmdAdd(args *skel.CmdArgs) error {
	c, pl, res, err := load(args)
	if err != nil {
		return err
	}
	if res == nil {
		return fmt.Errorf("tdf-cni must be chained after an interface plugin (no prevResult)")
	}
	if pl != nil {
		host, pod, err := ends(res, args)
		if err != nil {
			return err
		}
		ns, err := netns.GetFromPath(args.Netns)
		if err != nil {
			return fmt.Errorf("pod network namespace %s: %v", args.Netns, err)
		}
		defer ns.Close()
		if err := node.ReplaceNetemAt(netns.None(), host, pl.Down); err != nil {
			return fmt.Errorf("netem on %s (down, towards the pod): %v", host, err)
		}
		if err := node.ReplaceNetemAt(ns, pod, pl.Up); err != nil {
			return fmt.Errorf("netem on %s in the pod (up): %v", pod, err)
		}
		if !pl.TDF.IsOne() {
			// ARP and NDP on the pod's clock, as dilated-node does
			if _, err := node.DilateNeighbourTimesAt(ns, pod, pl.TDF); err != nil {
				return fmt.Errorf("%s in the pod: %v", pod, err)
			}
		}
	}
	return types.PrintResult(res, c.CNIVersion)
}

func cmdCheck(args *skel.CmdArgs) error {
	_, pl, res, err := load(args)
	if err != nil {
		return err
	}
	if pl == nil {
		return nil
	}
	if res == nil {
		return fmt.Errorf("CHECK needs the prevResult")
	}
	host, pod, err := ends(res, args)
	if err != nil {
		return err
	}
	ns, err := netns.GetFromPath(args.Netns)
	if err != nil {
		return fmt.Errorf("pod network namespace %s: %v", args.Netns, err)
	}
	defer ns.Close()
	for _, e := range []struct {
		ns   netns.NsHandle
		name string
		dir  string
		want func() (uint32, uint64, int64, int64)
	}{
		{netns.None(), host, "down", func() (uint32, uint64, int64, int64) {
			return pl.Down.Limit, pl.Down.RateBytesPerSec, pl.Down.DelayNS, pl.Down.JitterNS
		}},
		{ns, pod, "up", func() (uint32, uint64, int64, int64) {
			return pl.Up.Limit, pl.Up.RateBytesPerSec, pl.Up.DelayNS, pl.Up.JitterNS
		}},
	} {
		q, err := node.RootNetem(e.ns, e.name)
		if err != nil {
			return fmt.Errorf("%s (%s): %v", e.name, e.dir, err)
		}
		if q == nil {
			return fmt.Errorf("%s (%s): no netem root qdisc", e.name, e.dir)
		}
		limit, rate, d, j := e.want()
		// netlink reads back the 32-bit delays in psched ticks of 64 ns (as
		// replaceNetem wrote them)
		tick := func(ns int64) uint32 { return uint32(min(ns>>6, 0xFFFFFFFF)) }
		if q.Limit != limit || q.Rate64 != rate || q.Latency != tick(d) || q.Jitter != tick(j) {
			return fmt.Errorf("%s (%s): netem limit %d rate %d B/s delay %dus jitter %dus, want limit %d rate %d B/s delay %dus jitter %dus",
				e.name, e.dir, q.Limit, q.Rate64, int64(q.Latency)*64/1000, int64(q.Jitter)*64/1000, limit, rate, d/1000, j/1000)
		}
	}
	return nil
}

func cmdDel(args *skel.CmdArgs) error {
	c, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	if c.RawPrevResult == nil {
		return nil // nothing known to remove; the interface plugin removes the veth
	}
	if err := version.ParsePrevResult(&c.NetConf); err != nil {
		return nil
	}
	res, err := current.NewResultFromResult(c.PrevResult)
	if err != nil {
		return nil
	}
	host, pod, err := ends(res, args)
	if err != nil {
		return nil
	}
	var errs []error
	if err := node.DelRootNetem(netns.None(), host); err != nil {
		errs = append(errs, fmt.Errorf("%s: %v", host, err))
	}
	if args.Netns != "" {
		if ns, err := netns.GetFromPath(args.Netns); err == nil {
			if err := node.DelRootNetem(ns, pod); err != nil {
				errs = append(errs, fmt.Errorf("%s in the pod: %v", pod, err))
			}
			ns.Close()
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("pod network namespace %s: %v", args.Netns, err))
		}
	}
	return errors.Join(errs...)
}
