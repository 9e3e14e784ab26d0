package node

import (
	"strings"
	"testing"
)

func TestCheckFaultEnv(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{{"", true}, {"veth", true}, {"qdisc-up:kill", true}, {"running", true},
		{"vet", false}, {"veth:stop", false}, {":kill", false}, {"VETH", false}} {
		t.Setenv(FaultEnv, c.v)
		err := checkFaultEnv()
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: %v", FaultEnv, c.v, err)
		}
		if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "unknown step") && !strings.Contains(err.Error(), "mode")) {
			t.Errorf("%q: message %q", c.v, err)
		}
	}
	t.Setenv(FaultEnv, "veth")
	if err := faultAfter("bridge"); err != nil {
		t.Errorf("fault fired at the wrong step: %v", err)
	}
	if err := faultAfter("veth"); err == nil || !strings.Contains(err.Error(), "fault injected after step veth ") {
		t.Errorf("fault after veth: %v", err)
	}
}

// The host's own namespaces must never be taken for a node's: a corrupt or
// stale record would otherwise kill every process on the machine.
func TestKillNodeProcsRefusesHostNamespaces(t *testing.T) {
	for _, kind := range []string{"net", "time"} {
		id, ok := nsOf("self", kind)
		if !ok {
			t.Fatalf("no /proc/self/ns/%s", kind)
		}
		var err error
		if kind == "net" {
			err = killNodeProcs(&id, nil, "", nil)
		} else {
			err = killNodeProcs(nil, &id, "", nil)
		}
		if err == nil || !strings.Contains(err.Error(), "host's") {
			t.Errorf("%s namespace of this process accepted: %v", kind, err)
		}
	}
}

func TestStartTime(t *testing.T) {
	if startTime(1) == "" {
		t.Fatal("no /proc/1/stat")
	}
	if a, b := startTime(1), startTime(1); a != b || strings.Trim(a, "0123456789") != "" {
		t.Errorf("start time of pid 1: %q %q", a, b)
	}
}
