package node

import (
	"math/big"
	"net/netip"
	"strings"
	"testing"

	"tdfctl/profile"
	"tdfctl/scaling"
)

func baseCfg(t *testing.T, prof string) Config {
	c := Config{TDF: scaling.MustFactor("10"), Name: "t", Bridge: "dnbr0", Subnet: netip.MustParsePrefix("10.213.0.0/24")}
	if prof != "" {
		p, err := profile.Load(prof, []string{"../../netem-profiles"})
		if err != nil {
			t.Fatal(err)
		}
		c.Profile = p
	}
	return c
}

func TestMakePlan(t *testing.T) {
	c := baseCfg(t, "dsl")
	c.CPUs = big.NewRat(2, 1)
	d, err := ParseDisk("8:0,rbps=400MB,wiops=10k")
	if err != nil {
		t.Fatal(err)
	}
	c.Disks = []DiskSpec{d}
	rto := scaling.MustDuration("200ms")
	c.RTOMin = &rto
	p, err := MakePlan(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.Describe(&b)
	for _, want := range []string{
		"cpu.max 2000 10000 ", "io.max 8:0 rbps=40000000 wbps=max riops=max wiops=1000 ",
		"netem down dn-t limit 300 delay 125ms 10ms rate 1600Kbit\n", "netem up eth0 limit 300 delay 125ms 10ms rate 100Kbit\n",
		"rto_min 2000ms", "host 10.213.0.1/24", "\nneighbour eth0 times x 10 (perceived: the kernel's ARP and NDP defaults)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

func TestMakePlanErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Name = "much-too-long-name" }, "1 to 12"},
		{func(c *Config) { c.Name = "Bad!" }, "only"},
		{func(c *Config) { c.CPUs = big.NewRat(100, 1) }, "above"},
		{func(c *Config) { c.Scale = scaling.MustFactor("5") }, "--scale"},
		{func(c *Config) { c.Subnet = netip.MustParsePrefix("10.0.0.0/31") }, "subnet"},
		{func(c *Config) { c.Addr = netip.MustParsePrefix("10.213.0.1/24") }, "--addr"},
		{func(c *Config) { c.Addr = netip.MustParsePrefix("10.9.0.5/24") }, "--addr"},
		{func(c *Config) { c.TDF = scaling.MustFactor("1/10") }, "10gbe-dc.toml:5: [down] rate"},
		{func(c *Config) { c.NoNet = true }, "--no-net"},
	} {
		cfg := baseCfg(t, "10gbe-dc")
		c.mod(&cfg)
		if _, err := MakePlan(cfg, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
	}
}

func TestParseDisk(t *testing.T) {
	for _, bad := range []string{"8:0", "8:0,rbps", "8:0,speed=1", "8:0,rbps=fast", "/nonexistent,rbps=1MB", "/etc/passwd,rbps=1MB"} {
		if _, err := ParseDisk(bad); err == nil {
			t.Errorf("ParseDisk(%q) accepted", bad)
		}
	}
	d, err := ParseDisk("253:1,rbps=1.5GB/s,wbps=64MiB,riops=2.5k,wiops=100")
	if err != nil || d.Disk.RBps.Cmp(big.NewRat(1.5e9, 1)) != 0 || d.Disk.WBps.Cmp(big.NewRat(64<<20, 1)) != 0 ||
		d.Disk.RIOPS.Cmp(big.NewRat(2500, 1)) != 0 {
		t.Errorf("%+v %v", d, err)
	}
}

func TestOnlineCPUs(t *testing.T) {
	if OnlineCPUs() < 1 {
		t.Error("no online CPUs")
	}
}

func TestLoadDistribution(t *testing.T) {
	tab, err := LoadDistribution("normal")
	if err != nil {
		t.Skip(err) // iproute2 not installed
	}
	if len(tab) != 4096 || tab[0] != -32768 {
		t.Errorf("normal table: %d entries, first %d", len(tab), tab[0])
	}
	if _, err := LoadDistribution("nonexistent"); err == nil {
		t.Error("missing table loaded")
	}
}
