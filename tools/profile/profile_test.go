package profile

import (
	"math/big"
	"strings"
	"testing"

	"tdfctl/scaling"
)

var shipped = []string{"1gbe-lan", "10gbe-dc", "wan-transcontinental-100m", "geo-satellite", "lte-4g", "dsl"}

func TestShippedProfiles(t *testing.T) {
	dirs := []string{"../../netem-profiles"}
	got := List(dirs)
	for _, n := range shipped {
		p, err := Load(n, dirs)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if p.Description == "" || !p.Down.Rate.IsSet() || !p.Up.Rate.IsSet() {
			t.Errorf("%s: incomplete %+v", n, p)
		}
		// every shipped profile must scale without error at TDF 10 and 100
		for _, tdf := range []string{"10", "100"} {
			for _, l := range []scaling.Link{p.Down, p.Up} {
				if _, _, err := scaling.ScaleLink(scaling.MustFactor(tdf), l, scaling.DefaultLimits); err != nil {
					t.Errorf("%s at TDF %s: %v", n, tdf, err)
				}
			}
		}
		found := false
		for _, g := range got {
			found = found || g == n
		}
		if !found {
			t.Errorf("List does not contain %s: %v", n, got)
		}
	}
}

func TestShippedValues(t *testing.T) {
	dirs := []string{"../../netem-profiles"}
	p, err := Load("wan-transcontinental-100m", dirs)
	if err != nil {
		t.Fatal(err)
	}
	rtt := new(big.Rat).Add(p.Down.Delay.NS, p.Up.Delay.NS)
	if rtt.Cmp(big.NewRat(80e6, 1)) != 0 || p.Down.Rate.BitsPerSec.Cmp(big.NewRat(100e6, 1)) != 0 {
		t.Errorf("wan: rtt %s rate %s", rtt, p.Down.Rate)
	}
	p, err = Load("dsl", dirs)
	if err != nil {
		t.Fatal(err)
	}
	if p.Down.Rate.BitsPerSec.Cmp(p.Up.Rate.BitsPerSec) <= 0 {
		t.Errorf("dsl is not asymmetric: %s/%s", p.Down.Rate, p.Up.Rate)
	}
	p, err = Load("geo-satellite", dirs)
	if err != nil {
		t.Fatal(err)
	}
	rtt = new(big.Rat).Add(p.Down.Delay.NS, p.Up.Delay.NS)
	if rtt.Cmp(big.NewRat(600e6, 1)) != 0 || p.Up.Loss.String() != "1%" || p.Down.Loss.String() != "1%" {
		t.Errorf("geo: rtt %s loss %s", rtt, p.Up.Loss)
	}
	// by path too
	if _, err := Load("../../netem-profiles/dsl.toml", nil); err != nil {
		t.Error(err)
	}
}

func TestMerge(t *testing.T) {
	src := `description = "x"
[link]
rate = "10mbit"
delay = "5ms"
loss = "1%"
[up]
rate = "1mbit"
loss = "0%"
`
	p, err := Parse("x", "x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Down.Rate.String() != "10Mbit" || p.Up.Rate.String() != "1Mbit" || p.Up.Delay.String() != "5ms" ||
		p.Down.Loss.String() != "1%" || p.Up.Loss.String() != "0%" {
		t.Errorf("merge: %+v", p)
	}
	if p.Line("up", "rate") != 7 || p.Line("up", "delay") != 4 || p.Line("down", "rate") != 3 {
		t.Errorf("lines: %d %d %d", p.Line("up", "rate"), p.Line("up", "delay"), p.Line("down", "rate"))
	}
}

// A [link] seed reaches both directions; [up] or [down] sets its own, so the
// two directions can draw independent losses; no seed leaves it to the kernel.
func TestSeed(t *testing.T) {
	src := `description = "x"
[link]
loss = "1%"
seed = 7
[up]
seed = 9223372036854775807
`
	p, err := Parse("x", "x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Down.Seed == nil || *p.Down.Seed != 7 || p.Up.Seed == nil || *p.Up.Seed != 1<<63-1 {
		t.Errorf("seeds: down %v up %v", p.Down.Seed, p.Up.Seed)
	}
	p, err = Parse("x", "x.toml", []byte("description = \"x\"\n[link]\nloss = \"1%\"\n"))
	if err != nil || p.Down.Seed != nil || p.Up.Seed != nil {
		t.Errorf("no seed in the file: %v, %v %v", err, p.Down.Seed, p.Up.Seed)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"description = \"x\"\n[link]\nrate = \"10mbit\"\nfoo = 1\n", `x.toml:4: unknown key "link.foo"`},
		{"description = \"x\"\n[link]\nrate = \"10mbit\"\n[sideways]\nrate = \"1mbit\"\n", `x.toml:4: unknown key "sideways"`},
		{"description = \"x\"\nbogus = 2\n[link]\nrate = \"10mbit\"\n", `x.toml:2: unknown key "bogus"`},
		{"description = \"x\"\n\n[link]\nrate = \"10 furlongs\"\n", `x.toml:4: `},
		{"description = \"x\"\n[link]\nrate = 100\n", `x.toml:3: link.rate: wrong type, expected a string such as "100mbit"`},
		{"description = \"x\"\n[link]\nloss = 1.0\n", `x.toml:3: link.loss: wrong type, expected a string such as "1%"`},
		{"description = \"x\"\n[link]\nloss = \"101%\"\n", `x.toml:3: `},
		{"description = \"x\"\n[link]\ndelay = \"40\"\n", `x.toml:3: `},
		{"description = \"x\"\n[link]\nlimit = 0\n", `x.toml:3: limit = 0 out of range`},
		{"description = \"x\"\n[link]\nlimit = \"1000\"\n", `x.toml:3: link.limit: wrong type`},
		{"description = \"x\"\n[link]\nloss = \"1%\"\n[up]\nseed = -1\n", `x.toml:5: seed = -1 out of range`},
		{"description = \"x\"\n[link]\nseed = \"7\"\n", `x.toml:3: link.seed: wrong type, expected an integer`},
		{"description = \"x\"\n[link]\ndelay = \"1ms\"\n\njitter = \"2ms\"\n", `x.toml:5: [down] jitter (2ms) must not exceed delay (1ms)`},
		{"description = \"x\"\n[link]\ndelay = \"10ms\"\n[up]\nloss_correlation = \"5%\"\n", `x.toml:5: [up] loss_correlation needs a non-zero loss`},
		{"[link]\nrate = \"1mbit\"\n", `x.toml:1: missing description`},
		{"description = \"x\"\n[up]\nrate = \"1mbit\"\n", `a [link] table`},
		{"description = \"x\"\n[link]\nrate = \"1mbit\"\nrate = \"2mbit\"\n", `x.toml:4:`},
		{"description = \"x\"\n[link\n", `x.toml:2:`},
	}
	for _, c := range cases {
		_, err := Parse("x", "x.toml", []byte(c.src))
		if err == nil {
			t.Errorf("%q: no error, want %q", c.src, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.src, err, c.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load("no-such-profile", []string{"../../netem-profiles"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing profile: %v", err)
	}
	if _, err := Load("/nonexistent/x.toml", nil); err == nil {
		t.Error("missing file accepted")
	}
	if !IsName("dsl") || IsName("./dsl.toml") || IsName("a/b") || IsName("dsl.toml") {
		t.Error("IsName")
	}
}

func TestDistribution(t *testing.T) {
	src := "description = \"x\"\n[link]\ndelay = \"10ms\"\njitter = \"2ms\"\ndistribution = \"normal\"\n"
	p, err := Parse("x", "x.toml", []byte(src))
	if err != nil || p.Up.Distribution != "normal" {
		t.Fatalf("%v %v", p, err)
	}
	_, err = Parse("x", "x.toml", []byte("description = \"x\"\n[link]\ndelay = \"10ms\"\ndistribution = \"normal\"\n"))
	if err == nil || !strings.Contains(err.Error(), "x.toml:4: [down] distribution needs a non-zero jitter") {
		t.Errorf("got %v", err)
	}
	_, err = Parse("x", "x.toml", []byte("description = \"x\"\n[link]\ndelay = \"10ms\"\njitter = \"1ms\"\ndistribution = \"gauss\"\n"))
	if err == nil || !strings.Contains(err.Error(), "x.toml:5: ") {
		t.Errorf("got %v", err)
	}
}
