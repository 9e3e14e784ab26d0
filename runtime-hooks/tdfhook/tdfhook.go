// Package tdfhook turns the OCI annotations of a container into the time
// dilation settings the tdf-oci-hook applies. It is pure (no I/O) so that it
// can be unit-tested; every number comes from tdfctl/scaling, the single place
// for scaling rules.
package tdfhook

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tdfctl/scaling"
)

// Annotation keys (reverse-domain, after the project's GitHub name).
const (
	// KeyTDF is the time dilation factor, in the kernel's syntax ("10",
	// "2.5", "5/2"; range [1/1000, 1000]), relative to the host.
	KeyTDF = "io.github.time-dilated-containers.tdf"
	// KeyCPUs is the number of CPUs the container perceives (may be
	// fractional); the hook writes cpu.max = CPUs/TDF real CPUs.
	KeyCPUs = KeyTDF + ".cpus"
)

// Settings is what the annotations ask for.
type Settings struct {
	Enabled bool           // KeyTDF present
	TDF     scaling.Factor // valid when Enabled
	CPU     *scaling.CPU   // nil: no cpu.max
	Warn    []string
}

// Parse reads the annotations. Without KeyTDF (and no other key of ours) it
// returns Enabled == false and no error: the hook must then do nothing. Keys
// under KeyTDF+"." other than the known ones are rejected, so that a typo
// does not silently run a container undilated or uncapped. online is the
// number of online CPUs (for the cpu.max check).
func Parse(ann map[string]string, online int) (Settings, error) {
	var s Settings
	var unknown []string
	for k := range ann {
		if strings.HasPrefix(k, KeyTDF+".") && k != KeyCPUs {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return s, fmt.Errorf("unknown annotation %q (known: %s, %s)", unknown[0], KeyTDF, KeyCPUs)
	}
	v, ok := ann[KeyTDF]
	if !ok {
		if _, c := ann[KeyCPUs]; c {
			return s, fmt.Errorf("annotation %s needs %s", KeyCPUs, KeyTDF)
		}
		return s, nil
	}
	f, err := scaling.ParseFactor("TDF", strings.TrimSpace(v))
	if err != nil {
		return s, fmt.Errorf("annotation %s: %v", KeyTDF, err)
	}
	s.Enabled, s.TDF = true, f
	if c, ok := ann[KeyCPUs]; ok {
		c = strings.TrimSpace(c)
		// digits and one dot only: big.Rat alone would take 0x10, 0x1p4
		r, ok := new(big.Rat).SetString(c)
		if !ok || !plainDecimal(c) {
			return s, fmt.Errorf("annotation %s %q: expected a number such as 2 or 0.5", KeyCPUs, c)
		}
		cpu, warn, err := scaling.ScaleCPU(r, f, f, online, 0)
		if err != nil {
			return s, fmt.Errorf("annotation %s: %v", KeyCPUs, err)
		}
		s.CPU, s.Warn = &cpu, warn
	}
	return s, nil
}

// plainDecimal: digits with at most one dot between digits ("2", "0.5").
func plainDecimal(s string) bool {
	ip, fp, dot := strings.Cut(s, ".")
	digits := func(x string) bool { return x != "" && strings.Trim(x, "0123456789") == "" }
	return digits(ip) && (!dot || digits(fp))
}

// TimeNamespaceError is the message when the spec has no time namespace.
const TimeNamespaceError = `container has no time namespace; add {"type": "time"} to linux.namespaces`

// CheckSpec verifies that the container gets a new time namespace of its
// own (the factor applies to the whole namespace: dilating a namespace
// joined by path would dilate whoever else is in it) and that the spec's own
// CPU limit does not conflict with KeyCPUs.
func CheckSpec(spec *specs.Spec, s Settings) error {
	if spec.Linux == nil {
		return fmt.Errorf("%s", TimeNamespaceError)
	}
	found := false
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.TimeNamespace {
			if ns.Path != "" {
				return fmt.Errorf("the time namespace is joined by path (%s); the hook only dilates a new namespace of the container's own", ns.Path)
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s", TimeNamespaceError)
	}
	if s.CPU != nil && spec.Linux.Resources != nil && spec.Linux.Resources.CPU != nil {
		if q := spec.Linux.Resources.CPU.Quota; q != nil && *q > 0 {
			return fmt.Errorf("annotation %s conflicts with linux.resources.cpu.quota in config.json; set only one", KeyCPUs)
		}
	}
	return nil
}

// Annotations merges the annotations of config.json (authoritative) with
// those of the runtime state passed on stdin.
func Annotations(spec *specs.Spec, st *specs.State) map[string]string {
	m := map[string]string{}
	if st != nil {
		for k, v := range st.Annotations {
			m[k] = v
		}
	}
	if spec != nil {
		for k, v := range spec.Annotations {
			m[k] = v
		}
	}
	return m
}

// CgroupPath returns the cgroup v2 path ("/a/b") in the content of
// /proc/PID/cgroup (the "0::" line).
func CgroupPath(procCgroup string) (string, error) {
	for _, l := range strings.Split(procCgroup, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			if !strings.HasPrefix(p, "/") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
				return "", fmt.Errorf("unexpected cgroup path %q", p)
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("no cgroup v2 entry (0::) in /proc/PID/cgroup; cgroup v2 is required for %s", KeyCPUs)
}

// Cgroup2Mount returns the mount point of the cgroup2 file system in the
// content of /proc/self/mountinfo.
func Cgroup2Mount(mountinfo string) (string, error) {
	for _, l := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 && f[3] == "/" {
			return f[4], nil
		}
	}
	return "", fmt.Errorf("no cgroup2 file system mounted; cgroup v2 is required for %s", KeyCPUs)
}

// OnlineCPUs counts the CPUs in the content of /sys/devices/system/cpu/online ("0-1,4").
func OnlineCPUs(s string) int {
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(s), ",") {
		var a, b int
		if _, err := fmt.Sscanf(r, "%d-%d", &a, &b); err == nil && b >= a {
			n += b - a + 1
		} else if _, err := fmt.Sscanf(r, "%d", &a); err == nil {
			n++
		}
	}
	return n
}
