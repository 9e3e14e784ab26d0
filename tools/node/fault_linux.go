package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// FaultEnv is for tests only: TDC_FAULT_AFTER=STEP makes `dilated-node run`
// fail right after setup step STEP, as if the next step had failed (the
// teardown must then undo everything); TDC_FAULT_AFTER=STEP:kill makes it
// SIGKILL itself there instead (no teardown runs; `dilated-node cleanup`
// must then find and remove what is left). tests/vm/node-faults.t runs every
// step both ways. An unknown STEP is an error, so that a misspelt fault does
// not pass as "nothing left behind".
const FaultEnv = "TDC_FAULT_AFTER"

// FaultSteps are the setup steps of a node, in order. The cgroup steps run
// with --cpus/--disk, the network ones without --no-net, the qdisc ones with
// a --profile, neighbour at a TDF other than 1, route with --rto-min (the
// default route is added always).
var FaultSteps = []string{
	"record",     // the node's record in RunDir
	"cgroup",     // dilated-node/NAME created
	"cpu.max",    // cpu.max written
	"io.max",     // io.max written
	"bridge",     // bridge up with the host address
	"veth",       // veth pair created, host end on the bridge
	"qdisc-down", // netem on the host end
	"netns",      // the child started in its new time and network namespaces
	"tdf",        // the factor written to /proc/PID/timens_dilation
	"veth-move",  // the peer moved into the node and renamed
	"address",    // the node's address
	"qdisc-up",   // netem on the node's end
	"neighbour",  // ARP/NDP times of the node's end x TDF
	"route",      // rto_min route and default route in the node
	"running",    // the command runs
}

func checkFaultEnv() error {
	v := os.Getenv(FaultEnv)
	if v == "" {
		return nil
	}
	step, mode, _ := strings.Cut(v, ":")
	if mode != "" && mode != "kill" {
		return fmt.Errorf("%s=%s: mode must be kill or nothing (for tests only)", FaultEnv, v)
	}
	for _, s := range FaultSteps {
		if s == step {
			return nil
		}
	}
	return fmt.Errorf("%s=%s: unknown step (%s; for tests only)", FaultEnv, v, strings.Join(FaultSteps, ", "))
}

// faultAfter is called after every setup step.
func faultAfter(step string) error {
	v := os.Getenv(FaultEnv)
	if v == "" {
		return nil
	}
	s, mode, _ := strings.Cut(v, ":")
	if s != step {
		return nil
	}
	if mode == "kill" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return fmt.Errorf("fault injected after step %s (%s, for tests)", step, FaultEnv)
}

// RunDir holds one record per running node (DILATED_NODE_RUN_DIR overrides
// it), so that `dilated-node cleanup` finds what a SIGKILLed node left.
func RunDir() string {
	if d := os.Getenv("DILATED_NODE_RUN_DIR"); d != "" {
		return d
	}
	return "/run/dilated-node"
}

// nsID identifies a namespace (device and inode of /proc/PID/ns/KIND).
type nsID struct{ Dev, Ino uint64 }

func nsOf(pid, kind string) (nsID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+pid+"/ns/"+kind, &st); err != nil {
		return nsID{}, false
	}
	return nsID{uint64(st.Dev), st.Ino}, true
}

// record is what a node created, written before each resource exists.
type record struct {
	Name      string
	Pid       int    // dilated-node
	PidStart  string // its start time (/proc/PID/stat field 22): pids are reused
	HostIf    string `json:",omitempty"`
	Bridge    string `json:",omitempty"`
	CgDir     string `json:",omitempty"`
	Child     int    `json:",omitempty"`
	NetNS     *nsID  `json:",omitempty"` // the child's namespaces
	TimeNS    *nsID  `json:",omitempty"`
	TDF       string // as /proc/PID/timens_dilation reads it
	StartedAt string
}

func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22; f[0] is field 3
}

func recordPath(name string) string { return filepath.Join(RunDir(), name+".json") }

func (rec *record) save() error {
	if err := os.MkdirAll(RunDir(), 0755); err != nil {
		return fmt.Errorf("node record: %v", err)
	}
	b, _ := json.Marshal(rec)
	tmp := recordPath(rec.Name) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0644); err != nil {
		return fmt.Errorf("node record: %v", err)
	}
	if err := os.Rename(tmp, recordPath(rec.Name)); err != nil {
		return fmt.Errorf("node record: %v", err)
	}
	return nil
}

func (rec *record) alive() bool {
	return rec.Pid > 0 && rec.Pid != os.Getpid() && rec.PidStart != "" && startTime(rec.Pid) == rec.PidStart
}

func loadRecords() ([]*record, []error) {
	var recs []*record
	var errs []error
	paths, _ := filepath.Glob(filepath.Join(RunDir(), "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil || ValidName(r.Name) != nil || recordPath(r.Name) != p {
			errs = append(errs, fmt.Errorf("%s: not a node record; remove it by hand", p))
			continue
		}
		recs = append(recs, &r)
	}
	return recs, errs
}

// killNodeProcs kills every process in the node's network namespace, or in
// its time namespace at the node's factor tdf, and waits until none is left.
// The namespaces of this process and of pid 1, and those in exclude (other
// nodes'), are never matched: a record pointing at them would be a bug, or
// a namespace number reused after the node's namespace went away.
func killNodeProcs(netNS, timeNS *nsID, tdf string, exclude map[nsID]bool) error {
	if netNS == nil && timeNS == nil {
		return nil
	}
	for _, who := range []string{"self", "1"} {
		for _, k := range []struct {
			kind string
			id   *nsID
		}{{"net", netNS}, {"time", timeNS}} {
			if id, ok := nsOf(who, k.kind); ok && k.id != nil && id == *k.id {
				return fmt.Errorf("the node's %s namespace is the host's; not killing anything", k.kind)
			}
		}
	}
	if netNS != nil && exclude[*netNS] {
		netNS = nil
	}
	if timeNS != nil && exclude[*timeNS] {
		timeNS = nil
	}
	self := strconv.Itoa(os.Getpid())
	var left []string
	for i := 0; i < 200; i++ {
		left = left[:0]
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid := e.Name()
			if pid == self || pid[0] < '0' || pid[0] > '9' {
				continue
			}
			n, okN := nsOf(pid, "net")
			t, okT := nsOf(pid, "time")
			inTime := okT && timeNS != nil && t == *timeNS && (tdf == "" || readTrim("/proc/"+pid+"/timens_dilation") == tdf)
			if okN && netNS != nil && n == *netNS || inTime {
				if p, err := strconv.Atoi(pid); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
					left = append(left, pid)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("processes %s of the node survive SIGKILL", strings.Join(left, " "))
}

// delLink deletes the link named name (with a veth, its peer goes too) and
// waits until it is gone; a link already gone is fine.
func delLink(name string) error {
	for i := 0; i < 100; i++ {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return nil
		}
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("delete %s: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s does not go away", name)
}

// cleanRecord removes what rec names, in teardown order; exclude holds the
// namespaces of running nodes.
func cleanRecord(rec *record, exclude map[nsID]bool) error {
	var errs []error
	netNS := rec.NetNS
	if _, err := netlink.LinkByName(rec.HostIf); rec.HostIf == "" || err != nil {
		// the veth lives as long as the node's network namespace: without
		// it, that namespace is gone and its number may be another's now
		netNS = nil
	}
	if err := killNodeProcs(netNS, rec.TimeNS, rec.TDF, exclude); err != nil {
		errs = append(errs, err)
	}
	if rec.HostIf != "" {
		if err := delLink(rec.HostIf); err != nil {
			errs = append(errs, err)
		}
		// a peer still in the host goes with its pair; one left by a
		// rename in flight would not
		if err := delLink("dnp-" + rec.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if rec.CgDir != "" {
		if err := removeCgroup(rec.CgDir); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %v", rec.CgDir, err))
		} else {
			_ = os.Remove(filepath.Dir(rec.CgDir)) // the parent, if no other node uses it
		}
	}
	if rec.Bridge != "" {
		if err := removeBridgeIfUnused(rec.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(recordPath(rec.Name)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
