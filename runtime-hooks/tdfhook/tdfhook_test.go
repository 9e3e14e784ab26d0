package tdfhook

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		ann     map[string]string
		enabled bool
		tdf     string // Decimal()
		cpu     string // cpu.max line, "" for none
		err     string // substring
	}{
		{ann: nil},
		{ann: map[string]string{"org.example.other": "1"}},
		{ann: map[string]string{KeyTDF: "10"}, enabled: true, tdf: "10"},
		{ann: map[string]string{KeyTDF: " 10\n"}, enabled: true, tdf: "10"},
		{ann: map[string]string{KeyTDF: "5/2"}, enabled: true, tdf: "2.5"},
		{ann: map[string]string{KeyTDF: "1/3"}, enabled: true, tdf: "1/3"},
		{ann: map[string]string{KeyTDF: "0.001"}, enabled: true, tdf: "0.001"},
		{ann: map[string]string{KeyTDF: "10", KeyCPUs: "1"}, enabled: true, tdf: "10", cpu: "1000 10000"},
		{ann: map[string]string{KeyTDF: "10", KeyCPUs: "2"}, enabled: true, tdf: "10", cpu: "2000 10000"},
		{ann: map[string]string{KeyTDF: "100", KeyCPUs: "1"}, enabled: true, tdf: "100", cpu: "1000 100000"},
		{ann: map[string]string{KeyTDF: "0"}, err: "must lie in [1/1000, 1000]"},
		{ann: map[string]string{KeyTDF: "1001"}, err: "must lie in [1/1000, 1000]"},
		{ann: map[string]string{KeyTDF: "ten"}, err: `annotation io.github.time-dilated-containers.tdf: invalid TDF "ten"`},
		{ann: map[string]string{KeyTDF: ""}, err: "empty"},
		{ann: map[string]string{KeyTDF: "-2"}, err: "invalid TDF"},
		{ann: map[string]string{KeyCPUs: "1"}, err: "needs " + KeyTDF},
		{ann: map[string]string{KeyTDF: "10", KeyTDF + ".cpu": "1"}, err: `unknown annotation "` + KeyTDF + `.cpu"`},
		{ann: map[string]string{KeyTDF: "10", KeyCPUs: "1/2"}, err: "expected a number"},
		{ann: map[string]string{KeyTDF: "10", KeyCPUs: ""}, err: "expected a number"},
		{ann: map[string]string{KeyTDF: "10", KeyCPUs: "1e3"}, err: "expected a number"},
		{ann: map[string]string{KeyTDF: "10", KeyCPUs: "0"}, err: "must be positive"},
		{ann: map[string]string{KeyTDF: "1", KeyCPUs: "8"}, err: "above the 4 of this machine"},
		{ann: map[string]string{KeyTDF: "1000", KeyCPUs: "0.5"}, err: "below what cpu.max can express"},
	} {
		s, err := Parse(tc.ann, 4)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.ann, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.ann, err)
			continue
		}
		if s.Enabled != tc.enabled {
			t.Errorf("%v: enabled %v", tc.ann, s.Enabled)
			continue
		}
		if !s.Enabled {
			continue
		}
		if got := s.TDF.Decimal(); got != tc.tdf {
			t.Errorf("%v: TDF %s, want %s", tc.ann, got, tc.tdf)
		}
		got := ""
		if s.CPU != nil {
			got = s.CPU.Line()
		}
		if got != tc.cpu {
			t.Errorf("%v: cpu.max %q, want %q", tc.ann, got, tc.cpu)
		}
	}
}

func TestCheckSpec(t *testing.T) {
	s, _ := Parse(map[string]string{KeyTDF: "10", KeyCPUs: "1"}, 4)
	q := int64(50000)
	for _, tc := range []struct {
		name string
		spec specs.Spec
		err  string
	}{
		{"no linux", specs.Spec{}, TimeNamespaceError},
		{"no time ns", specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "pid"}, {Type: "mount"}}}}, TimeNamespaceError},
		{"time ns", specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "pid"}, {Type: "time"}}}}, ""},
		{"time ns by path", specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "time", Path: "/proc/1/ns/time"}}}}, "joined by path"},
		{"quota conflict", specs.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: "time"}},
			Resources: &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &q}}}}, "conflicts with linux.resources.cpu.quota"},
	} {
		err := CheckSpec(&tc.spec, s)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
	if TimeNamespaceError != `container has no time namespace; add {"type": "time"} to linux.namespaces` {
		t.Errorf("message changed: %s", TimeNamespaceError)
	}
}

func TestAnnotationsConfigWins(t *testing.T) {
	spec := &specs.Spec{Annotations: map[string]string{KeyTDF: "10"}}
	st := &specs.State{Annotations: map[string]string{KeyTDF: "2", "a": "b"}}
	m := Annotations(spec, st)
	if m[KeyTDF] != "10" || m["a"] != "b" {
		t.Errorf("merge: %v", m)
	}
}

func TestCgroupHelpers(t *testing.T) {
	p, err := CgroupPath("0::/system.slice/runc-x.scope\n")
	if err != nil || p != "/system.slice/runc-x.scope" {
		t.Errorf("CgroupPath: %q %v", p, err)
	}
	if _, err := CgroupPath("1:cpu:/x\n"); err == nil {
		t.Errorf("CgroupPath v1 only: no error")
	}
	if _, err := CgroupPath("0::/a/../b\n"); err == nil {
		t.Errorf("CgroupPath with ..: no error")
	}
	mi := "22 1 0:20 / /sys rw - sysfs sysfs rw\n30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
	if m, err := Cgroup2Mount(mi); err != nil || m != "/sys/fs/cgroup" {
		t.Errorf("Cgroup2Mount: %q %v", m, err)
	}
	if _, err := Cgroup2Mount("22 1 0:20 / /sys rw - sysfs sysfs rw\n"); err == nil {
		t.Errorf("Cgroup2Mount without cgroup2: no error")
	}
	for in, want := range map[string]int{"0-1\n": 2, "0": 1, "0-3,6,8-9": 7, "": 0} {
		if got := OnlineCPUs(in); got != want {
			t.Errorf("OnlineCPUs(%q) = %d, want %d", in, got, want)
		}
	}
}
