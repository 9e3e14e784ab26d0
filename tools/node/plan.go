// Package node sets up and tears down a dilated node: a process tree in its
// own time namespace (at a TDF) and network namespace, joined to the host by a
// veth pair shaped with netem, in its own cgroup v2 group with cpu.max and
// io.max. The numbers come from package scaling; this package only applies
// them.
package node

import (
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"

	"tdfctl/profile"
	"tdfctl/scaling"
)

// DiskSpec is a --disk argument: DEV,rbps=..,wbps=..,riops=..,wiops=..
type DiskSpec struct {
	Arg  string
	Disk scaling.Disk // perceived; Dev resolved to MAJ:MIN
}

// ParseDisk parses "DEV,rbps=500MB,wbps=200MB,riops=20k,wiops=10k" where DEV
// is MAJ:MIN or a block device path. Byte rates take B/KB/MB/GB/KiB/MiB/GiB
// (optionally "/s").
func ParseDisk(arg string) (DiskSpec, error) {
	ds, err := parseDisk(arg)
	if err != nil {
		// one line, whatever the argument holds
		return ds, fmt.Errorf("--disk %s: %v", printable(arg), err)
	}
	return ds, nil
}

// printable is s, or s quoted when it holds a control character.
func printable(s string) string {
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

func parseDisk(arg string) (DiskSpec, error) {
	parts := strings.Split(arg, ",")
	dev := parts[0]
	ds := DiskSpec{Arg: arg}
	if err := scaling.ValidDev(dev); err != nil {
		var st syscall.Stat_t
		if err := syscall.Stat(dev, &st); err != nil {
			return ds, err
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFBLK {
			return ds, fmt.Errorf("%s is not a block device", printable(dev))
		}
		rdev := uint64(st.Rdev)
		major := (rdev>>8)&0xfff | (rdev>>32)&^0xfff
		minor := rdev&0xff | (rdev>>12)&^0xff
		dev = fmt.Sprintf("%d:%d", major, minor)
	}
	ds.Disk.Dev = dev
	if len(parts) == 1 {
		return ds, fmt.Errorf("give at least one of rbps=, wbps=, riops=, wiops=")
	}
	seen := map[string]bool{}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return ds, fmt.Errorf("%q is not KEY=VALUE", kv)
		}
		if seen[k] {
			return ds, fmt.Errorf("%s given twice", printable(k))
		}
		seen[k] = true
		switch k {
		case "rbps", "wbps":
			b, err := scaling.ParseBytes(v)
			if err != nil {
				return ds, fmt.Errorf("%s: %v", k, err)
			}
			if k == "rbps" {
				ds.Disk.RBps = b.N
			} else {
				ds.Disk.WBps = b.N
			}
		case "riops", "wiops":
			n, err := scaling.ParseCount(v)
			if err != nil {
				return ds, fmt.Errorf("%s: %v", k, err)
			}
			if k == "riops" {
				ds.Disk.RIOPS = n
			} else {
				ds.Disk.WIOPS = n
			}
		default:
			return ds, fmt.Errorf("unknown key %q (rbps, wbps, riops, wiops)", k)
		}
	}
	return ds, nil
}

// Config is what the user asked for, perceived figures.
type Config struct {
	TDF     scaling.Factor
	Scale   scaling.Factor // defaults to TDF
	Profile *profile.Profile
	CPUs    *big.Rat // nil: no cpu.max
	// CPUPeriodUS 0: automatic (scaling.DefaultPeriodUS)
	CPUPeriodUS uint64
	Disks       []DiskSpec
	RTOMin      *scaling.Duration // perceived TCP rto_min; nil: unchanged

	Name     string
	Bridge   string
	Subnet   netip.Prefix // host gets the first address on Bridge
	Addr     netip.Prefix // node address; invalid: chosen at run time
	NoNet    bool         // no network namespace, no veth
	Quiet    bool
	ExecArgs []string
}

// Plan is the physical configuration.
type Plan struct {
	Config
	CPU      *scaling.CPU
	IOMax    []scaling.IOMax
	Down, Up *scaling.Netem
	RTOMinMS uint32
	Warnings []string
	HostIf   string // host end of the veth (shapes Down)
	NodeIf   string // node end, inside the node (shapes Up)
	HostAddr netip.Prefix
}

// Names derived from the node name.
func HostIfName(name string) string { return "dn-" + name }
func CgroupName(name string) string { return name }

// ValidName checks a node name: it becomes part of an interface name (15
// bytes at most) and of a cgroup directory.
func ValidName(name string) error {
	if name == "" || len(HostIfName(name)) > 15 {
		return fmt.Errorf("node name %q must have 1 to 12 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("node name %q: only a-z, 0-9, - and _", name)
		}
	}
	return nil
}

// OnlineCPUs counts the CPUs in /sys/devices/system/cpu/online ("0-1,4").
func OnlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, ok := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		if !ok {
			if err1 == nil {
				n++
			}
			continue
		}
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && b >= a {
			n += b - a + 1
		}
	}
	return n
}

// MakePlan computes every physical parameter. It changes nothing.
func MakePlan(cfg Config, online int) (*Plan, error) {
	if !cfg.TDF.Valid() {
		return nil, fmt.Errorf("--tdf is required")
	}
	if !cfg.Scale.Valid() {
		cfg.Scale = cfg.TDF
	}
	if err := ValidName(cfg.Name); err != nil {
		return nil, err
	}
	p := &Plan{Config: cfg, HostIf: HostIfName(cfg.Name), NodeIf: "eth0"}
	if cfg.CPUs != nil {
		c, w, err := scaling.ScaleCPU(cfg.CPUs, cfg.TDF, cfg.Scale, online, cfg.CPUPeriodUS)
		if err != nil {
			return nil, fmt.Errorf("--cpus: %v", err)
		}
		p.CPU = &c
		p.Warnings = append(p.Warnings, w...)
	} else if !cfg.Scale.Equal(cfg.TDF) {
		return nil, fmt.Errorf("--scale only applies to --cpus")
	}
	seen := map[string]bool{}
	for _, d := range cfg.Disks {
		if seen[d.Disk.Dev] {
			return nil, fmt.Errorf("--disk %s: device %s given twice", printable(d.Arg), d.Disk.Dev)
		}
		seen[d.Disk.Dev] = true
		m, err := scaling.ScaleDisk(cfg.TDF, d.Disk)
		if err != nil {
			return nil, fmt.Errorf("--disk %s: %v", printable(d.Arg), err)
		}
		p.IOMax = append(p.IOMax, m)
	}
	if cfg.NoNet {
		if cfg.Profile != nil || cfg.RTOMin != nil || cfg.Addr.IsValid() {
			return nil, fmt.Errorf("--no-net excludes --profile, --rto-min and --addr")
		}
		return p, nil
	}
	if len(HostIfName(cfg.Bridge)) > 15 || cfg.Bridge == "" {
		return nil, fmt.Errorf("bridge name %q must have 1 to 12 characters", cfg.Bridge)
	}
	if !cfg.Subnet.IsValid() || !cfg.Subnet.Addr().Is4() || cfg.Subnet.Bits() > 30 || cfg.Subnet != cfg.Subnet.Masked() {
		return nil, fmt.Errorf("--subnet %s: need an IPv4 network of at most /30, e.g. 10.213.0.0/24", cfg.Subnet)
	}
	p.HostAddr = netip.PrefixFrom(cfg.Subnet.Addr().Next(), cfg.Subnet.Bits())
	if cfg.Addr.IsValid() {
		if cfg.Addr.Bits() != cfg.Subnet.Bits() || !cfg.Subnet.Contains(cfg.Addr.Addr()) || cfg.Addr.Addr() == p.HostAddr.Addr() ||
			cfg.Addr.Addr() == cfg.Subnet.Addr() || lastAddr(cfg.Subnet) == cfg.Addr.Addr() {
			return nil, fmt.Errorf("--addr %s: must be a host address of --subnet %s other than the host's %s", cfg.Addr, cfg.Subnet, p.HostAddr.Addr())
		}
	}
	if cfg.Profile != nil {
		for _, d := range []struct {
			name string
			l    scaling.Link
			dst  **scaling.Netem
		}{{"down", cfg.Profile.Down, &p.Down}, {"up", cfg.Profile.Up, &p.Up}} {
			n, w, err := scaling.ScaleLink(cfg.TDF, d.l, scaling.DefaultLimits)
			if err != nil {
				var fe *scaling.FieldError
				if ok := asFieldErr(err, &fe); ok {
					return nil, cfg.Profile.Errorf(d.name, fe.Field, "%s", fe.Msg)
				}
				return nil, fmt.Errorf("profile %s [%s]: %v", cfg.Profile.Name, d.name, err)
			}
			if n.Distribution != "" {
				if _, err := LoadDistribution(n.Distribution); err != nil {
					return nil, cfg.Profile.Errorf(d.name, "distribution", "%v", err)
				}
			}
			for _, s := range w {
				p.Warnings = append(p.Warnings, fmt.Sprintf("profile %s [%s]: %s", cfg.Profile.Name, d.name, s))
			}
			*d.dst = &n
		}
	}
	if cfg.RTOMin != nil {
		ms, err := scaling.ScaleRTOMin(cfg.TDF, *cfg.RTOMin)
		if err != nil {
			return nil, fmt.Errorf("--rto-min: %v", err)
		}
		p.RTOMinMS = ms
	}
	return p, nil
}

func asFieldErr(err error, fe **scaling.FieldError) bool {
	e, ok := err.(*scaling.FieldError)
	if ok {
		*fe = e
	}
	return ok
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= (1 << (32 - p.Bits())) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Describe prints the plan, one "key value" line per item: the physical
// parameters, with the perceived ones in parentheses.
func (p *Plan) Describe(w io.Writer) {
	fmt.Fprintf(w, "tdf %s\n", p.TDF)
	if p.CPU != nil {
		fmt.Fprintf(w, "cpu.max %s (perceived %s CPUs = %s real CPUs at scale %s, period %dus)\n",
			p.CPU.Line(), trim(p.CPUs), trim(p.CPU.Share), p.Scale, p.CPU.PeriodUS)
	}
	for i, m := range p.IOMax {
		fmt.Fprintf(w, "io.max %s (perceived %s)\n", m.Line(), printable(p.Disks[i].Arg))
	}
	if !p.NoNet {
		fmt.Fprintf(w, "node %s addr %s host %s bridge %s\n", p.Name, addrOrAuto(p.Addr), p.HostAddr, p.Bridge)
		if p.Profile != nil {
			fmt.Fprintf(w, "profile %s (%s)\n", p.Profile.Name, p.Profile.Description)
		}
		if p.Down != nil {
			fmt.Fprintf(w, "netem down %s %s\n", p.HostIf, p.Down)
		}
		if p.Up != nil {
			fmt.Fprintf(w, "netem up %s %s\n", p.NodeIf, p.Up)
		}
		if !p.TDF.IsOne() {
			// the values are read from the kernel at run time
			fmt.Fprintf(w, "neighbour %s times x %s (perceived: the kernel's ARP and NDP defaults)\n", p.NodeIf, p.TDF)
		}
		if p.RTOMinMS > 0 {
			fmt.Fprintf(w, "rto_min %dms (perceived %s)\n", p.RTOMinMS, p.RTOMin)
		}
	}
	for _, s := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}

func addrOrAuto(a netip.Prefix) string {
	if a.IsValid() {
		return a.String()
	}
	return "auto"
}

func trim(r *big.Rat) string {
	s := r.FloatString(4)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
