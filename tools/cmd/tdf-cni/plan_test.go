package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
)

var profiles, _ = filepath.Abs("../../../netem-profiles")

func conf(ann string) []byte {
	return []byte(`{"cniVersion":"1.0.0","name":"k","type":"tdf-cni","profileDir":"` + profiles + `",
		"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{` + ann + `}}}`)
}

func TestPlan(t *testing.T) {
	c, err := parseConf(conf(`"io.github.time-dilated-containers.tdf":"10","io.github.time-dilated-containers.netem":"dsl"`))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := MakePlan(c)
	if err != nil || pl == nil {
		t.Fatalf("plan: %v", err)
	}
	// the profile's perceived delays are ten times longer physically, its
	// rates ten times lower: compare with the unscaled profile at TDF 1
	c1, _ := parseConf(conf(`"io.github.time-dilated-containers.tdf":"1","io.github.time-dilated-containers.netem":"dsl"`))
	p1, err := MakePlan(c1)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Down.DelayNS != 10*p1.Down.DelayNS || pl.Up.DelayNS != 10*p1.Up.DelayNS || pl.Down.DelayNS == 0 {
		t.Errorf("delays: %d %d vs %d %d", pl.Down.DelayNS, pl.Up.DelayNS, p1.Down.DelayNS, p1.Up.DelayNS)
	}
	if d := int64(p1.Down.RateBytesPerSec) - 10*int64(pl.Down.RateBytesPerSec); p1.Down.RateBytesPerSec == 0 || d < -10 || d > 10 {
		t.Errorf("rates: %d vs %d", pl.Down.RateBytesPerSec, p1.Down.RateBytesPerSec)
	}
}

func TestPlanNone(t *testing.T) {
	for _, ann := range []string{``, `"io.github.time-dilated-containers.tdf":"10"`, `"other":"x"`} {
		c, _ := parseConf(conf(ann))
		if pl, err := MakePlan(c); pl != nil || err != nil {
			t.Errorf("%s: %v %v", ann, pl, err)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	for _, c := range []struct{ ann, want string }{
		{`"io.github.time-dilated-containers.netem":"dsl"`, "needs io.github.time-dilated-containers.tdf"},
		{`"io.github.time-dilated-containers.tdf":"0","io.github.time-dilated-containers.netem":"dsl"`, `invalid TDF "0"`},
		{`"io.github.time-dilated-containers.tdf":"10","io.github.time-dilated-containers.netem":"no-such"`, `profile "no-such" not found`},
		{`"io.github.time-dilated-containers.tdf":"10","io.github.time-dilated-containers.netem":"../x"`, `is not a profile name`},
		// 10 Gbit/s perceived at TDF 1/10 would need 100 Gbit/s of netem
		{`"io.github.time-dilated-containers.tdf":"1/10","io.github.time-dilated-containers.netem":"10gbe-dc"`, `above the`},
	} {
		cf, _ := parseConf(conf(c.ann))
		if _, err := MakePlan(cf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.ann, err, c.want)
		}
	}
}

func TestEnds(t *testing.T) {
	args := &skel.CmdArgs{IfName: "eth0", Netns: "/var/run/netns/x"}
	bridge := &current.Result{Interfaces: []*current.Interface{{Name: "cni0"}, {Name: "veth1"}, {Name: "eth0", Sandbox: "/var/run/netns/x"}}}
	if h, p, err := ends(bridge, args); h != "veth1" || p != "eth0" || err != nil {
		t.Errorf("bridge: %s %s %v", h, p, err)
	}
	ptp := &current.Result{Interfaces: []*current.Interface{{Name: "veth2"}, {Name: "eth0", Sandbox: "/x"}}}
	if h, p, err := ends(ptp, args); h != "veth2" || p != "eth0" || err != nil {
		t.Errorf("ptp: %s %s %v", h, p, err)
	}
	if _, _, err := ends(&current.Result{Interfaces: []*current.Interface{{Name: "macvlan0", Sandbox: "/x"}}}, args); err == nil {
		t.Errorf("no host end accepted")
	}
}
