package node

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Marker put in the alias of every link this tool creates, so that cleanup
// finds them and a shared bridge is only removed by a dilated node.
const aliasMark = "dilated-node"

// CgroupParent is the directory (under the cgroup v2 root) holding one
// child per node.
const CgroupParent = "dilated-node"

// ExecHelper is the hidden subcommand run in the new namespaces; it waits
// until the parent has configured everything, then execs the command.
const ExecHelper = "__exec"

type undo struct {
	what string
	fn   func() error
}

type runner struct {
	p      *Plan
	undos  []undo
	sigc   chan os.Signal
	logf   func(string, ...any)
	cgRoot string
	cgDir  string
	rec    *record
	// references to the node's namespaces, closed last in the teardown
	nsFiles []*os.File
}

func (r *runner) push(what string, fn func() error) { r.undos = append(r.undos, undo{what, fn}) }

// teardown runs the undo stack in reverse; it reports every failure.
func (r *runner) teardown() error {
	var errs []error
	for i := len(r.undos) - 1; i >= 0; i-- {
		if err := r.undos[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %v", r.undos[i].what, err))
		}
	}
	r.undos = nil
	return errors.Join(errs...)
}

func (r *runner) interrupted() error {
	select {
	case s := <-r.sigc:
		return fmt.Errorf("interrupted by %v during setup", s)
	default:
		return nil
	}
}

// Cgroup2Root finds the cgroup v2 mount point.
func Cgroup2Root() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" {
				return fields[4], nil
			}
		}
	}
	return "", fmt.Errorf("no cgroup v2 file system mounted (mount -t cgroup2 none /sys/fs/cgroup)")
}

func writeFile(path, s string) error {
	if err := os.WriteFile(path, []byte(s), 0); err != nil {
		return fmt.Errorf("write %q to %s: %v", strings.TrimSpace(s), path, err)
	}
	return nil
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// preflight checks everything that can be checked without changing anything.
func (r *runner) preflight() error {
	p := r.p
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root (try: dilated-node plan ...)")
	}
	if _, err := os.Stat("/proc/self/timens_dilation"); err != nil {
		return fmt.Errorf("kernel without time dilation: /proc/self/timens_dilation missing (CONFIG_TIME_NS_DILATION)")
	}
	if p.CPU != nil || len(p.IOMax) > 0 {
		root, err := Cgroup2Root()
		if err != nil {
			return err
		}
		r.cgRoot = root
		avail := strings.Fields(readTrim(filepath.Join(root, "cgroup.controllers")))
		need := []string{}
		if p.CPU != nil {
			need = append(need, "cpu")
		}
		if len(p.IOMax) > 0 {
			need = append(need, "io")
		}
		for _, c := range need {
			if !contains(avail, c) {
				return fmt.Errorf("cgroup v2 controller %q not available in %s (kernel config, or bound to cgroup v1)", c, root)
			}
		}
		r.cgDir = filepath.Join(root, CgroupParent, CgroupName(p.Name))
		if _, err := os.Stat(r.cgDir); err == nil {
			return fmt.Errorf("cgroup %s exists: node %q running? (dilated-node cleanup --name %s)", r.cgDir, p.Name, p.Name)
		}
		for _, m := range p.IOMax {
			if _, err := os.Stat("/sys/dev/block/" + m.Dev); err != nil {
				return fmt.Errorf("block device %s not found", m.Dev)
			}
		}
	}
	if !p.NoNet {
		if _, err := netlink.LinkByName(p.HostIf); err == nil {
			return fmt.Errorf("interface %s exists: node %q running? (dilated-node cleanup --name %s)", p.HostIf, p.Name, p.Name)
		}
		if br, err := netlink.LinkByName(p.Bridge); err == nil {
			if _, ok := br.(*netlink.Bridge); !ok {
				return fmt.Errorf("%s exists and is not a bridge", p.Bridge)
			}
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// enableControllers enables ctrls in dir/cgroup.subtree_control, undoing it
// later if it was not enabled before.
func (r *runner) enableControllers(dir string, ctrls []string) error {
	have := strings.Fields(readTrim(filepath.Join(dir, "cgroup.subtree_control")))
	for _, c := range ctrls {
		if contains(have, c) {
			continue
		}
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+c); err != nil {
			return err
		}
		c := c
		r.push("enable "+c+" in "+dir, func() error {
			// Give it back only if no cgroup below dir but ours exists; any
			// other may rely on it.
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() && e.Name() != CgroupParent && filepath.Join(dir, e.Name()) != r.cgDir {
					return nil
				}
			}
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("-"+c), 0)
			return nil
		})
	}
	return nil
}

func (r *runner) setupCgroup() (*os.File, error) {
	p := r.p
	var ctrls []string
	if p.CPU != nil {
		ctrls = append(ctrls, "cpu")
	}
	if len(p.IOMax) > 0 {
		ctrls = append(ctrls, "io")
	}
	parent := filepath.Join(r.cgRoot, CgroupParent)
	if err := r.enableControllers(r.cgRoot, ctrls); err != nil {
		return nil, err
	}
	if err := os.Mkdir(parent, 0755); err == nil {
		r.push("cgroup "+parent, func() error {
			if err := os.Remove(parent); err != nil && !errors.Is(err, syscall.EBUSY) && !os.IsNotExist(err) {
				return err
			}
			return nil // still used by another node
		})
	} else if !os.IsExist(err) {
		return nil, err
	}
	if err := r.enableControllers(parent, ctrls); err != nil {
		return nil, err
	}
	if err := os.Mkdir(r.cgDir, 0755); err != nil {
		return nil, err
	}
	dir := r.cgDir
	r.push("cgroup "+dir, func() error { return removeCgroup(dir) })
	if err := faultAfter("cgroup"); err != nil {
		return nil, err
	}
	if p.CPU != nil {
		if err := writeFile(filepath.Join(dir, "cpu.max"), p.CPU.Line()); err != nil {
			return nil, err
		}
		if err := faultAfter("cpu.max"); err != nil {
			return nil, err
		}
	}
	for _, m := range p.IOMax {
		if err := writeFile(filepath.Join(dir, "io.max"), m.Line()); err != nil {
			return nil, err
		}
	}
	if len(p.IOMax) > 0 {
		if err := faultAfter("io.max"); err != nil {
			return nil, err
		}
	}
	return os.Open(dir)
}

// removeCgroup kills what is left in a cgroup and removes it.
func removeCgroup(dir string) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	var err error
	for i := 0; i < 200; i++ {
		if err = os.Remove(dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// setupHostNet creates the bridge (if needed) and the veth pair; the peer
// stays in the host until the child exists.
func (r *runner) setupHostNet() (peer string, err error) {
	p := r.p
	br, err := netlink.LinkByName(p.Bridge)
	if err != nil {
		b := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: p.Bridge}}
		b.TxQLen = -1
		if err := netlink.LinkAdd(b); err != nil && !errors.Is(err, syscall.EEXIST) {
			return "", fmt.Errorf("create bridge %s: %v", p.Bridge, err)
		}
		if br, err = netlink.LinkByName(p.Bridge); err != nil {
			return "", err
		}
		_ = netlink.LinkSetAlias(br, aliasMark)
	}
	bridge := p.Bridge
	r.push("bridge "+bridge, func() error { return removeBridgeIfUnused(bridge) })
	if err := netlink.LinkSetUp(br); err != nil {
		return "", err
	}
	hostAddr := &netlink.Addr{IPNet: prefixToIPNet(p.HostAddr)}
	addrs, _ := netlink.AddrList(br, netlink.FAMILY_V4)
	have := false
	for _, a := range addrs {
		if a.IPNet.String() == hostAddr.IPNet.String() {
			have = true
		}
	}
	if !have {
		if err := netlink.AddrAdd(br, hostAddr); err != nil && !errors.Is(err, syscall.EEXIST) {
			return "", fmt.Errorf("address %s on %s: %v", p.HostAddr, p.Bridge, err)
		}
	}
	if err := faultAfter("bridge"); err != nil {
		return "", err
	}
	if !p.Addr.IsValid() {
		a, err := r.pickAddr(br)
		if err != nil {
			return "", err
		}
		p.Addr = a
	}
	peer = "dnp-" + p.Name
	veth := &netlink.Veth{
		LinkAttrs:  netlink.LinkAttrs{Name: p.HostIf, GSOMaxSegs: 1, TxQLen: 1000},
		PeerName:   peer,
		PeerTxQLen: 1000,
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return "", fmt.Errorf("create veth %s: %v", p.HostIf, err)
	}
	hostIf := p.HostIf
	r.push("veth "+hostIf, func() error {
		l, err := netlink.LinkByName(hostIf)
		if err != nil {
			return nil // gone with the node's network namespace
		}
		// the namespace may still be going away: then the pair goes with it
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			return err
		}
		return nil
	})
	host, err := netlink.LinkByName(p.HostIf)
	if err != nil {
		return "", err
	}
	// One segment per skb: netem's loss, limit and corruption must act on
	// packets, not on 64 KB TSO/GSO aggregates.
	_ = netlink.LinkSetGSOMaxSegs(host, 1)
	_ = netlink.LinkSetAlias(host, aliasMark+" "+p.Addr.Addr().String())
	if err := netlink.LinkSetMaster(host, br); err != nil {
		return "", err
	}
	if err := faultAfter("veth"); err != nil {
		return "", err
	}
	if p.Down != nil {
		s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
		if err != nil {
			return "", err
		}
		err = replaceNetem(s, host.Attrs().Index, *p.Down)
		s.Close()
		if err != nil {
			return "", fmt.Errorf("netem on %s: %v (is sch_netem available?)", p.HostIf, err)
		}
		if err := faultAfter("qdisc-down"); err != nil {
			return "", err
		}
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return "", err
	}
	return peer, nil
}

// pickAddr chooses the lowest host address of the subnet not used by the
// bridge or another node (nodes record theirs in their veth's alias).
func (r *runner) pickAddr(br netlink.Link) (netip.Prefix, error) {
	used := map[netip.Addr]bool{r.p.HostAddr.Addr(): true}
	links, _ := netlink.LinkList()
	for _, l := range links {
		if f := strings.Fields(l.Attrs().Alias); len(f) == 2 && f[0] == aliasMark {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				used[a] = true
			}
		}
	}
	last := lastAddr(r.p.Subnet)
	for a := r.p.Subnet.Addr().Next(); a.IsValid() && a.Less(last); a = a.Next() {
		if !used[a] {
			return netip.PrefixFrom(a, r.p.Subnet.Bits()), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free address in %s", r.p.Subnet)
}

func removeBridgeIfUnused(name string) error {
	br, err := netlink.LinkByName(name)
	if err != nil || br.Attrs().Alias != aliasMark {
		return nil // gone, or not ours
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			return nil // another node still attached
		}
	}
	// Two nodes that stop together may both find the bridge unused; the
	// one that deletes it second must not fail over a bridge already gone.
	if err := netlink.LinkDel(br); err != nil && !errors.Is(err, unix.ENODEV) {
		return err
	}
	return nil
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// setupNodeNet moves the peer into the child's network namespace and
// configures it there.
func (r *runner) setupNodeNet(peer string, pid int) error {
	p := r.p
	l, err := netlink.LinkByName(peer)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetNsPid(l, pid); err != nil {
		return fmt.Errorf("move %s into node: %v", peer, err)
	}
	ns, err := netns.GetFromPid(pid)
	if err != nil {
		return err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	if lo, err := h.LinkByName("lo"); err == nil {
		if err := h.LinkSetUp(lo); err != nil {
			return err
		}
	}
	l, err = h.LinkByName(peer)
	if err != nil {
		return err
	}
	if err := h.LinkSetName(l, p.NodeIf); err != nil {
		return err
	}
	if err := faultAfter("veth-move"); err != nil {
		return err
	}
	_ = h.LinkSetGSOMaxSegs(l, 1)
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: prefixToIPNet(p.Addr)}); err != nil {
		return fmt.Errorf("address %s in node: %v", p.Addr, err)
	}
	if err := faultAfter("address"); err != nil {
		return err
	}
	// one socket in the node for the messages the library does not build
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer s.Close()
	if p.Up != nil {
		if err := replaceNetem(s, l.Attrs().Index, *p.Up); err != nil {
			return fmt.Errorf("netem on %s in node: %v (is sch_netem available?)", p.NodeIf, err)
		}
		if err := faultAfter("qdisc-up"); err != nil {
			return err
		}
	}
	if !p.TDF.IsOne() {
		// before the link is up, so that no neighbour is resolved on host time
		set, err := dilateNeighbourTimes(s, l.Attrs().Index, p.TDF)
		if err != nil {
			return fmt.Errorf("%s in node: %v", p.NodeIf, err)
		}
		r.logf("%s", describeNeighbourTimes(p.NodeIf, set))
		if err := faultAfter("neighbour"); err != nil {
			return err
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return err
	}
	rto := int(p.RTOMinMS)
	if rto > 0 {
		// replace the connected route to carry rto_min as well
		err := h.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: prefixToIPNet(p.Subnet),
			Src: net.IP(p.Addr.Addr().AsSlice()), Scope: netlink.SCOPE_LINK, Protocol: unix.RTPROT_KERNEL,
			RtoMin: rto, RtoMinLock: true})
		if err != nil {
			return fmt.Errorf("route %s rto_min %dms: %v", p.Subnet, rto, err)
		}
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IP(p.HostAddr.Addr().AsSlice()),
		RtoMin: rto, RtoMinLock: rto > 0}); err != nil {
		return fmt.Errorf("default route in node: %v", err)
	}
	return faultAfter("route")
}

// Run runs the plan's command as a dilated node and returns its exit status.
// Everything it configured is undone before it returns.
func Run(p *Plan) (status int, err error) {
	// Pdeathsig follows the thread that forked the child: keep it alive.
	runtime.LockOSThread()
	r := &runner{p: p, sigc: make(chan os.Signal, 4)}
	r.logf = func(f string, a ...any) {
		if !p.Quiet {
			fmt.Fprintf(os.Stderr, "dilated-node: "+f+"\n", a...)
		}
	}
	signal.Notify(r.sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(r.sigc)
	if err := checkFaultEnv(); err != nil {
		return 1, err
	}
	if err := r.preflight(); err != nil {
		return 1, err
	}
	// The record names everything the node may create, before it exists;
	// it goes when the teardown succeeded (else cleanup can finish it).
	r.rec = &record{Name: p.Name, Pid: os.Getpid(), PidStart: startTime(os.Getpid()), CgDir: r.cgDir,
		StartedAt: time.Now().UTC().Format(time.RFC3339)}
	if !p.NoNet {
		r.rec.HostIf, r.rec.Bridge = p.HostIf, p.Bridge
	}
	if old, err := os.ReadFile(recordPath(p.Name)); err == nil {
		return 1, fmt.Errorf("node %q has a record (%s): running, or killed? (dilated-node cleanup --name %s)",
			p.Name, strings.TrimSpace(string(old)), p.Name)
	}
	if err := r.rec.save(); err != nil {
		return 1, err
	}
	defer func() {
		terr := r.teardown()
		if terr == nil {
			if rerr := os.Remove(recordPath(p.Name)); rerr != nil && !os.IsNotExist(rerr) {
				terr = rerr
			}
		}
		if terr != nil {
			if err == nil {
				err = terr
			} else {
				err = errors.Join(err, terr)
			}
		}
	}()
	if err := faultAfter("record"); err != nil {
		return 1, err
	}
	status, err = r.run()
	return status, err
}

func (r *runner) run() (int, error) {
	p := r.p
	r.push("namespace references", func() error {
		for _, f := range r.nsFiles {
			f.Close()
		}
		return nil
	})
	var cgFile *os.File
	var err error
	if p.CPU != nil || len(p.IOMax) > 0 {
		if cgFile, err = r.setupCgroup(); err != nil {
			return 1, err
		}
		defer cgFile.Close()
	}
	if err := r.interrupted(); err != nil {
		return 1, err
	}
	var peer string
	if !p.NoNet {
		if peer, err = r.setupHostNet(); err != nil {
			return 1, err
		}
	}
	if err := r.interrupted(); err != nil {
		return 1, err
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	defer syncW.Close()
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	args := append([]string{"dilated-node", ExecHelper, p.TDF.String(), "--"}, p.ExecArgs...)
	cmd := &exec.Cmd{Path: self, Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		ExtraFiles: []*os.File{syncR}}
	cmd.Env = append(os.Environ(), "DILATED_NODE_NAME="+p.Name, "DILATED_NODE_TDF="+p.TDF.String())
	if !p.NoNet {
		cmd.Env = append(cmd.Env, "DILATED_NODE_ADDR="+p.Addr.Addr().String(), "DILATED_NODE_HOST="+p.HostAddr.Addr().String())
	}
	flags := uintptr(unix.CLONE_NEWTIME)
	if !p.NoNet {
		flags |= unix.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL}
	if cgFile != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(cgFile.Fd())
	}
	if err := cmd.Start(); err != nil {
		syncR.Close()
		return 1, fmt.Errorf("start node: %v", err)
	}
	syncR.Close()
	pid := cmd.Process.Pid
	killChild := func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	// Record the child's namespaces before anything can run in them: the
	// teardown, or cleanup after a SIGKILL, kills whatever is left there.
	spid := strconv.Itoa(pid)
	if id, ok := nsOf(spid, "net"); ok && !p.NoNet {
		r.rec.NetNS = &id
	}
	if id, ok := nsOf(spid, "time"); ok {
		if own, _ := nsOf("self", "time"); id != own {
			r.rec.TimeNS = &id
		}
	}
	r.rec.Child, r.rec.TDF = pid, p.TDF.String()
	if err := r.rec.save(); err != nil {
		killChild()
		return 1, err
	}
	// Hold the namespaces until the teardown, so that their numbers cannot
	// be given to new namespaces before the teardown has looked for them.
	var netNSFile *os.File
	for _, kind := range []string{"net", "time"} {
		if f, err := os.Open("/proc/" + spid + "/ns/" + kind); err == nil {
			r.nsFiles = append(r.nsFiles, f)
			if kind == "net" {
				netNSFile = f
			}
		}
	}
	netNS, timeNS, tdf := r.rec.NetNS, r.rec.TimeNS, r.rec.TDF
	if !p.NoNet && netNSFile != nil {
		// Undone after the processes are gone, before the veth is: their
		// connections' FINs and resets, and answers to peers, get out.
		bound := lingerBound(p)
		r.push("connections of the node", func() error { return lingerConnections(netNSFile, p.NodeIf, bound) })
	}
	r.push("processes of the node", func() error { return killNodeProcs(netNS, timeNS, tdf, nil) })
	if err := faultAfter("netns"); err != nil {
		killChild()
		return 1, err
	}
	// The child's time namespace was created with it (clone3 CLONE_NEWTIME);
	// it is blocked on the pipe, so setting the TDF now is before CMD runs.
	// Decimal(), not String(): the reduced fraction of 999.999999999 has a
	// numerator above the kernel's 10^9 for N/D (found by FuzzParseFactor)
	if err := writeFile(fmt.Sprintf("/proc/%d/timens_dilation", pid), p.TDF.Decimal()); err != nil {
		killChild()
		return 1, err
	}
	if got := readTrim(fmt.Sprintf("/proc/%d/timens_dilation", pid)); got != p.TDF.String() {
		killChild()
		return 1, fmt.Errorf("timens_dilation reads %q after writing %s", got, p.TDF)
	}
	if err := faultAfter("tdf"); err != nil {
		killChild()
		return 1, err
	}
	if !p.NoNet {
		if err := r.setupNodeNet(peer, pid); err != nil {
			killChild()
			return 1, err
		}
	}
	if err := r.interrupted(); err != nil {
		killChild()
		return 1, err
	}
	if !p.Quiet {
		var b strings.Builder
		p.Describe(&b)
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			r.logf("%s", line)
		}
		r.logf("pid %d", pid)
	}
	if _, err := syncW.Write([]byte{1}); err != nil {
		killChild()
		return 1, err
	}
	syncW.Close()
	if err := faultAfter("running"); err != nil {
		killChild()
		return 1, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var killTimer <-chan time.Time
	for {
		select {
		case s := <-r.sigc:
			_ = cmd.Process.Signal(s)
			if killTimer == nil {
				killTimer = time.After(10 * time.Second)
			}
		case <-killTimer:
			_ = cmd.Process.Kill()
		case err := <-done:
			if err == nil {
				return 0, nil
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return ee.ExitCode(), nil
			}
			return 1, err
		}
	}
}

// ExecMain is the child side: wait for the parent's go-ahead on fd 3, check
// the TDF, exec the command (or $SHELL).
func ExecMain(args []string) {
	if len(args) < 2 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "dilated-node: internal helper, do not call")
		os.Exit(127)
	}
	sync := os.NewFile(3, "sync")
	b := make([]byte, 1)
	if n, _ := sync.Read(b); n != 1 {
		os.Exit(1) // parent gave up; it reports why
	}
	sync.Close()
	if got := readTrim("/proc/self/timens_dilation"); got != args[0] {
		fmt.Fprintf(os.Stderr, "dilated-node: TDF is %q in the node, expected %s\n", got, args[0])
		os.Exit(127)
	}
	argv := args[2:]
	if len(argv) == 0 {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{sh}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "dilated-node: %v\n", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "dilated-node: exec %s: %v\n", path, err)
	os.Exit(126)
}

// Cleanup removes what nodes killed with SIGKILL left behind: for each
// record in RunDir whose dilated-node is gone (only NAME's, if name is not
// ""), the processes in the node's namespaces, its veth, its cgroup (killing
// what is left in it) and the shared bridge when unused, then the record.
// Then anything marked as a node's (links with the alias marker, cgroups
// under dilated-node/) that no running node owns. A running node is left
// alone; naming one is an error.
func Cleanup(name, bridge string) error {
	var errs []error
	recs, rerrs := loadRecords()
	errs = append(errs, rerrs...)
	live := map[string]bool{}
	exclude := map[nsID]bool{}
	for _, rec := range recs {
		if rec.alive() {
			for _, id := range []*nsID{rec.NetNS, rec.TimeNS} {
				if id != nil {
					exclude[*id] = true
				}
			}
		}
	}
	for _, rec := range recs {
		if name != "" && rec.Name != name {
			continue
		}
		if rec.alive() {
			live[rec.Name] = true
			if name != "" {
				return fmt.Errorf("node %q is running (pid %d); stop it instead", name, rec.Pid)
			}
			continue
		}
		if err := cleanRecord(rec, exclude); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %v", rec.Name, err))
		}
	}
	for _, rec := range recs {
		if rec.alive() {
			live[rec.Name] = true
		}
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		a := l.Attrs()
		n, isNode := strings.CutPrefix(a.Name, "dn-")
		if strings.HasPrefix(a.Alias, aliasMark+" ") && isNode && !live[n] && (name == "" || n == name) {
			if err := delLink(a.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if root, err := Cgroup2Root(); err == nil {
		parent := filepath.Join(root, CgroupParent)
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if e.IsDir() && !live[e.Name()] && (name == "" || e.Name() == CgroupName(name)) {
				if err := removeCgroup(filepath.Join(parent, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
		_ = os.Remove(parent)
	}
	if err := removeBridgeIfUnused(bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
