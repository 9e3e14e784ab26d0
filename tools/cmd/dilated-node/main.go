// Command dilated-node runs a command as a time-dilated node: its own time
// namespace at a TDF, its own network namespace joined to the host by a
// netem-shaped veth pair, its own cgroup v2 group with cpu.max and io.max, all
// scaled so that the node perceives the machine and link it was given.
//
//	dilated-node plan  --tdf 10 --profile wan-transcontinental-100m --cpus 2
//	dilated-node run   --tdf 10 --profile dsl --cpus 1 [--name N] -- CMD [ARGS]
//	dilated-node profiles
//	dilated-node check-profile FILE|NAME...
//	dilated-node cleanup [--name N]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"time"

	"tdfctl/node"
	"tdfctl/profile"
	"tdfctl/scaling"
)

const usage = `usage:
  dilated-node plan [OPTIONS]             print the physical parameters (no root needed)
  dilated-node run [OPTIONS] [-- CMD ...]  run CMD (default $SHELL) as a dilated node
  dilated-node profiles                    list the netem profiles found
  dilated-node check-profile NAME|FILE...  validate profiles
  dilated-node cleanup [--name N]          remove what a SIGKILLed node left behind

OPTIONS:
`

func die(err error) {
	// one line, always
	fmt.Fprintf(os.Stderr, "dilated-node: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	os.Exit(2)
}

type diskFlags []node.DiskSpec

func (d *diskFlags) String() string { return "" }
func (d *diskFlags) Set(s string) error {
	ds, err := node.ParseDisk(s)
	if err != nil {
		return err
	}
	*d = append(*d, ds)
	return nil
}

// rtoFlag accepts --rto-min (perceived 200ms, Linux's default) or --rto-min=D.
type rtoFlag struct{ d *scaling.Duration }

func (r *rtoFlag) String() string   { return "" }
func (r *rtoFlag) IsBoolFlag() bool { return true }
func (r *rtoFlag) Set(s string) error {
	if s == "true" {
		s = "200ms"
	}
	d, err := scaling.ParseDuration(s)
	if err != nil {
		return err
	}
	r.d = &d
	return nil
}

func configFlags(fs *flag.FlagSet, run bool) func() (node.Config, error) {
	tdf := fs.String("tdf", "", "time dilation factor: decimal (10, 2.5) or ratio (5/2), in [1/1000, 1000] (required)")
	scale := fs.String("scale", "", "resource scale factor for the CPU share (default: the TDF; DieCast: TDF 20 at scale 10)")
	prof := fs.String("profile", "", "netem profile name (see 'dilated-node profiles') or path to a .toml file; none: unshaped veth")
	profDir := fs.String("profiles-dir", "", "directory searched first for profiles given by name")
	cpus := fs.String("cpus", "", "perceived CPUs (may be fractional, e.g. 0.5); sets cpu.max to CPUS/scale")
	period := fs.Duration("cpu-period", 0, "cpu.max period (default 10ms, longer when the quota would fall below 1ms)")
	var disks diskFlags
	fs.Var(&disks, "disk", "perceived disk: DEV,rbps=500MB,wbps=200MB,riops=20k,wiops=10k (DEV: MAJ:MIN or /dev/...); repeatable")
	rto := &rtoFlag{}
	fs.Var(rto, "rto-min", "an RTO floor other than the kernel's 200ms perceived: the node's routes get rto_min = the value (200ms if none) x TDF")
	name := fs.String("name", fmt.Sprintf("n%d", os.Getpid()), "node name (1-12 chars: host interface dn-NAME, cgroup dilated-node/NAME)")
	bridge := fs.String("bridge", "dnbr0", "host bridge joining the nodes and the host (created on demand, removed when unused)")
	subnet := fs.String("subnet", "10.213.0.0/24", "IPv4 network of the bridge; the host has its first address")
	addr := fs.String("addr", "", "node address in --subnet, e.g. 10.213.0.2/24 (default: lowest free)")
	noNet := fs.Bool("no-net", false, "no network namespace (CPU, disk and time only)")
	quiet := fs.Bool("quiet", false, "do not print the applied parameters")
	return func() (node.Config, error) {
		var c node.Config
		var err error
		if *tdf == "" {
			return c, fmt.Errorf("--tdf is required")
		}
		if c.TDF, err = scaling.ParseFactor("TDF", *tdf); err != nil {
			return c, err
		}
		c.Scale = c.TDF
		if *scale != "" {
			if c.Scale, err = scaling.ParseFactor("scale", *scale); err != nil {
				return c, err
			}
		}
		if *prof != "" && *prof != "none" {
			dirs := profile.SearchDirs()
			if *profDir != "" {
				dirs = append([]string{*profDir}, dirs...)
			}
			if c.Profile, err = profile.Load(*prof, dirs); err != nil {
				return c, err
			}
		}
		if *cpus != "" {
			// digits and one dot only: big.Rat alone would take 0x10, 1e3, Inf
			r, ok := new(big.Rat).SetString(*cpus)
			if !ok || !plainDecimal(*cpus) {
				return c, fmt.Errorf("--cpus %q: expected a number such as 2 or 0.5", *cpus)
			}
			c.CPUs = r
		}
		if *period < 0 || *period%time.Microsecond != 0 {
			return c, fmt.Errorf("--cpu-period %s: must be a whole number of microseconds", *period)
		}
		c.CPUPeriodUS = uint64(*period / time.Microsecond)
		c.Disks = disks
		c.RTOMin = rto.d
		c.Name, c.Bridge, c.NoNet, c.Quiet = *name, *bridge, *noNet, *quiet
		if c.Subnet, err = netip.ParsePrefix(*subnet); err != nil {
			return c, fmt.Errorf("--subnet %q: expected an IPv4 network such as 10.213.0.0/24", *subnet)
		}
		if *addr != "" {
			if c.Addr, err = netip.ParsePrefix(*addr); err != nil {
				if a, err2 := netip.ParseAddr(*addr); err2 == nil {
					c.Addr = netip.PrefixFrom(a, c.Subnet.Bits())
				} else {
					return c, fmt.Errorf("--addr %q: expected an IPv4 address such as 10.213.0.2 or 10.213.0.2/24", *addr)
				}
			}
		}
		if *noNet && (*prof != "" && *prof != "none") {
			return c, fmt.Errorf("--no-net excludes --profile")
		}
		return c, nil
	}
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(os.Stdout, usage)
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			os.Exit(0)
		}
		die(flagError(fs.Name(), err))
	}
}

// plainDecimal: digits with at most one dot between digits ("2", "0.5").
func plainDecimal(s string) bool {
	ip, fp, dot := strings.Cut(s, ".")
	digits := func(x string) bool { return x != "" && strings.Trim(x, "0123456789") == "" }
	return digits(ip) && (!dot || digits(fp))
}

var (
	reUnknownFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reBadValue    = regexp.MustCompile(`^invalid (boolean )?value "(.*)" for (?:flag )?-+([a-z-]+): (.*)$`)
	reNeedsArg    = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError turns the flag package's messages into the tool's: the flag as
// it is written (--name), and the parser's own message when it has one.
func flagError(sub string, err error) error {
	msg := err.Error()
	if m := reUnknownFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s: unknown flag --%s (dilated-node %s --help lists them)", sub, m[1], sub)
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s: flag --%s needs a value", sub, m[1])
	}
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		val, name, why := m[2], m[3], m[4]
		switch {
		case strings.HasPrefix(why, "--"): // the parser names the flag itself
			return errors.New(why)
		case why == "parse error" && m[1] != "":
			why = "expected true or false"
		case why == "parse error" && name == "cpu-period":
			why = "expected a duration such as 10ms"
		case why == "parse error":
			why = "invalid value"
		}
		return fmt.Errorf("--%s %q: %s", name, val, why)
	}
	return err
}

func main() {
	if len(os.Args) < 2 {
		die(fmt.Errorf("no subcommand (plan, run, profiles, check-profile, cleanup; dilated-node --help)"))
	}
	sub, args := os.Args[1], os.Args[2:]
	switch sub {
	case node.ExecHelper:
		node.ExecMain(args)
	case "plan", "run":
		fs := newFlagSet(sub)
		get := configFlags(fs, sub == "run")
		parse(fs, args)
		cfg, err := get()
		if err != nil {
			die(err)
		}
		if sub == "plan" && fs.NArg() > 0 {
			die(fmt.Errorf("plan takes no command"))
		}
		cfg.ExecArgs = fs.Args()
		p, err := node.MakePlan(cfg, node.OnlineCPUs())
		if err != nil {
			die(err)
		}
		if sub == "plan" {
			p.Describe(os.Stdout)
			return
		}
		status, err := node.Run(p)
		if err != nil {
			die(err)
		}
		os.Exit(status)
	case "profiles":
		if len(args) > 0 {
			die(fmt.Errorf("profiles takes no arguments (check-profile NAME validates one)"))
		}
		dirs := profile.SearchDirs()
		for _, n := range profile.List(dirs) {
			p, err := profile.Load(n, dirs)
			if err != nil {
				fmt.Printf("%-28s INVALID: %v\n", n, err)
				continue
			}
			fmt.Printf("%-28s %s\n", n, p.Description)
		}
	case "check-profile":
		if len(args) == 0 {
			die(fmt.Errorf("check-profile needs NAME or FILE"))
		}
		bad := false
		for _, a := range args {
			p, err := profile.Load(a, profile.SearchDirs())
			if err != nil {
				fmt.Fprintf(os.Stderr, "dilated-node: %v\n", err)
				bad = true
				continue
			}
			fmt.Printf("%s: ok (%s)\n", p.Path, p.Description)
		}
		if bad {
			os.Exit(1)
		}
	case "cleanup":
		fs := newFlagSet(sub)
		name := fs.String("name", "", "node to clean up (default: all)")
		bridge := fs.String("bridge", "dnbr0", "bridge to remove when unused")
		parse(fs, args)
		if fs.NArg() > 0 {
			die(fmt.Errorf("cleanup takes no arguments (got %q); a node is named with --name", fs.Args()))
		}
		if *name != "" {
			if err := node.ValidName(*name); err != nil {
				die(err)
			}
		}
		if err := node.Cleanup(*name, *bridge); err != nil {
			die(err)
		}
	case "-h", "--help", "help":
		fmt.Print(usage)
		fs := newFlagSet("run")
		configFlags(fs, true)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
	default:
		die(fmt.Errorf("unknown subcommand %q (plan, run, profiles, check-profile, cleanup)", sub))
	}
}
