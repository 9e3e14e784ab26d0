package scaling

import (
	"math/big"
	"strings"
	"testing"
)

func TestParseFactor(t *testing.T) {
	good := map[string]string{
		"10": "10", "2.5": "5/2", "5/2": "5/2", "10/4": "5/2", "0.001": "1/1000", "1000": "1000",
		"1/1000": "1/1000", "1": "1", "1.000000000": "1", "10\n": "10", "1000000000/1000000": "1000",
		"0.123456789": "123456789/1000000000", "007": "7",
	}
	for in, want := range good {
		f, err := ParseFactor("TDF", in)
		if err != nil {
			t.Errorf("ParseFactor(%q): %v", in, err)
			continue
		}
		if f.String() != want {
			t.Errorf("ParseFactor(%q) = %s, want %s", in, f, want)
		}
	}
	bad := []string{"", "0", "0.0009", "1001", "1000.000000001", "-1", "+2", "1e3", "1/0", "0/1", "2/", "/2",
		"1.2.3", "1.", ".5", "0.0000000001", "1000000001/1000000000", "abc", "10 ", " 10", "10\n\n", "1/1000000001",
		"5/2/1", "99999999999999999999"}
	for _, in := range bad {
		if f, err := ParseFactor("TDF", in); err == nil {
			t.Errorf("ParseFactor(%q) = %s, want error", in, f)
		} else if !strings.Contains(err.Error(), "TDF") {
			t.Errorf("error %q does not name the quantity", err)
		}
	}
}

func TestFactorDecimal(t *testing.T) {
	for in, want := range map[string]string{"5/2": "2.5", "10": "10", "1/3": "1/3", "1/1000": "0.001"} {
		if got := MustFactor(in).Decimal(); got != want {
			t.Errorf("Decimal(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, bits := range map[string]int64{
		"100mbit": 100e6, "1gbit": 1e9, "1Gbit": 1e9, "512kbit": 512e3, "1.5mbit": 1.5e6,
		"10mbps": 80e6, "1kibit": 1024, "8bit": 8, "10 Mbit": 10e6, "1bps": 8,
	} {
		r, err := ParseRate(in)
		if err != nil {
			t.Errorf("ParseRate(%q): %v", in, err)
			continue
		}
		if r.BitsPerSec.Cmp(big.NewRat(bits, 1)) != 0 {
			t.Errorf("ParseRate(%q) = %s, want %d", in, r.BitsPerSec, bits)
		}
	}
	for _, in := range []string{"", "100", "mbit", "0mbit", "-1mbit", "1.2.3mbit", "10 furlongs", "1e6bit", ".5mbit"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) succeeded", in)
		}
	}
}

func TestParseDurationPercentBytes(t *testing.T) {
	for in, ns := range map[string]int64{"40ms": 40e6, "1.5s": 1.5e9, "250us": 250e3, "250µs": 250e3, "0": 0, "10usec": 10e3, "7ns": 7, "2msec": 2e6} {
		d, err := ParseDuration(in)
		if err != nil || d.NS.Cmp(big.NewRat(ns, 1)) != 0 {
			t.Errorf("ParseDuration(%q) = %v, %v; want %d", in, d, err, ns)
		}
	}
	for _, in := range []string{"40", "-1ms", "1h", "ms", "1.ms"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", in)
		}
	}
	for in, want := range map[string]string{"1%": "1%", "0.5%": "0.5%", "100%": "100%", "0%": "0%"} {
		p, err := ParsePercent(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePercent(%q) = %v, %v", in, p, err)
		}
	}
	for _, in := range []string{"1", "101%", "-1%", "%", "x%"} {
		if _, err := ParsePercent(in); err == nil {
			t.Errorf("ParsePercent(%q) succeeded", in)
		}
	}
	for in, n := range map[string]int64{"500MB": 500e6, "64KiB": 65536, "4096": 4096, "1.5GB/s": 1.5e9, "10M": 10e6} {
		b, err := ParseBytes(in)
		if err != nil || b.N.Cmp(big.NewRat(n, 1)) != 0 {
			t.Errorf("ParseBytes(%q) = %v, %v", in, b, err)
		}
	}
	if _, err := ParseBytes("5 parsecs"); err == nil {
		t.Error("ParseBytes accepted a bad unit")
	}
}

func TestScaleLinkWAN(t *testing.T) {
	// 100 Mbit/s, 40 ms one way (80 ms RTT) at TDF 10: 10 Mbit/s, 400 ms.
	l := Link{Rate: MustRate("100mbit"), Delay: MustDuration("40ms"), Jitter: MustDuration("1ms"),
		Loss: MustPercent("0.1%"), Limit: 5000}
	n, warn, err := ScaleLink(MustFactor("10"), l, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if n.RateBytesPerSec != 1250000 || n.DelayNS != 400e6 || n.JitterNS != 10e6 || n.Limit != 5000 {
		t.Errorf("got %+v", n)
	}
	if n.Loss.String() != "0.1%" {
		t.Errorf("loss changed: %s", n.Loss)
	}
	if len(warn) != 0 {
		t.Errorf("unexpected warnings %v", warn)
	}
	if got, want := n.String(), "limit 5000 delay 400ms 10ms loss 0.1% rate 10Mbit"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestScaleLinkRatioTDF(t *testing.T) {
	// TDF 5/2: rates /2.5, delays x2.5
	l := Link{Rate: MustRate("1gbit"), Delay: MustDuration("100us"), Slot: MustDuration("1ms"), SlotPackets: 20}
	n, _, err := ScaleLink(MustFactor("5/2"), l, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if n.RateBytesPerSec != 50e6 || n.DelayNS != 250e3 || n.SlotMinNS != 2.5e6 || n.SlotMaxNS != 2.5e6 || n.SlotPackets != 20 {
		t.Errorf("got %+v", n)
	}
	// TDF < 1 speeds the namespace up: delay shrinks, rate grows.
	n, _, err = ScaleLink(MustFactor("0.5"), Link{Rate: MustRate("10mbit"), Delay: MustDuration("10ms")}, DefaultLimits)
	if err != nil || n.RateBytesPerSec != 2.5e6 || n.DelayNS != 5e6 {
		t.Errorf("TDF 0.5: %+v %v", n, err)
	}
}

func TestScaleLinkPercentagesUnchanged(t *testing.T) {
	l := Link{Delay: MustDuration("10ms"), Jitter: MustDuration("2ms"), DelayCorrelation: MustPercent("25%"),
		Loss: MustPercent("1%"), LossCorrelation: MustPercent("10%"), Duplicate: MustPercent("0.2%"),
		Corrupt: MustPercent("0.01%"), Reorder: MustPercent("5%"), ReorderCorrelation: MustPercent("50%"), Limit: 77}
	for _, tdf := range []string{"1", "10", "1000", "1/1000", "7/3"} {
		n, _, err := ScaleLink(MustFactor(tdf), l, DefaultLimits)
		if err != nil {
			t.Fatalf("TDF %s: %v", tdf, err)
		}
		for _, p := range [][2]Percent{{n.Loss, l.Loss}, {n.LossCorrelation, l.LossCorrelation}, {n.Duplicate, l.Duplicate},
			{n.Corrupt, l.Corrupt}, {n.Reorder, l.Reorder}, {n.ReorderCorrelation, l.ReorderCorrelation}, {n.DelayCorrelation, l.DelayCorrelation}} {
			if p[0].P.Cmp(p[1].P) != 0 {
				t.Errorf("TDF %s: percentage changed %s -> %s", tdf, p[1], p[0])
			}
		}
		if n.Limit != 77 {
			t.Errorf("limit changed")
		}
		want := new(big.Rat).Mul(big.NewRat(10e6, 1), MustFactor(tdf).Rat())
		if big.NewRat(n.DelayNS, 1).Cmp(roundRatR(want)) != 0 {
			t.Errorf("TDF %s: delay %d", tdf, n.DelayNS)
		}
	}
}

// The seed is not a duration or a rate: every TDF gets the same one, which
// is what lets a run at one TDF lose the same packets as at another.
func TestScaleLinkSeedUnchanged(t *testing.T) {
	seed := uint64(1<<63 - 1)
	l := Link{Delay: MustDuration("40ms"), Loss: MustPercent("0.01%"), Seed: &seed}
	for _, tdf := range []string{"1", "10", "1000", "1/1000"} {
		n, _, err := ScaleLink(MustFactor(tdf), l, DefaultLimits)
		if err != nil {
			t.Fatalf("TDF %s: %v", tdf, err)
		}
		if n.Seed == nil || *n.Seed != seed {
			t.Errorf("TDF %s: seed %v, want %d", tdf, n.Seed, seed)
		}
		if !strings.HasSuffix(n.String(), " loss 0.01% seed 9223372036854775807") {
			t.Errorf("TDF %s: String() = %q", tdf, n.String())
		}
	}
	n, _, err := ScaleLink(MustFactor("10"), Link{Loss: MustPercent("1%")}, DefaultLimits)
	if err != nil || n.Seed != nil || strings.Contains(n.String(), "seed") {
		t.Errorf("no seed: %v, %v, %q", err, n.Seed, n.String())
	}
}

func roundRatR(r *big.Rat) *big.Rat { return new(big.Rat).SetInt(roundRat(r)) }

func TestScaleLinkErrors(t *testing.T) {
	cases := []struct {
		tdf  string
		l    Link
		want string
	}{
		{"1", Link{Rate: MustRate("100gbit")}, "above"},     // too fast for netem
		{"1/10", Link{Rate: MustRate("10gbit")}, "above"},   // TDF<1 multiplies rates
		{"1000", Link{Rate: MustRate("100kbit")}, "below"},  // 12.5 B/s
		{"1000", Link{Delay: MustDuration("10s")}, "above"}, // 10000 s
		{"1", Link{Delay: MustDuration("1ms"), Jitter: MustDuration("2ms")}, "jitter"},
		{"1", Link{Jitter: MustDuration("2ms")}, "jitter"},
		{"1", Link{LossCorrelation: MustPercent("5%")}, "loss_correlation"},
		{"1", Link{Reorder: MustPercent("5%")}, "reorder"},
		{"1", Link{ECN: true}, "ecn"},
		{"1", Link{SlotMax: MustDuration("1ms")}, "slot"},
		{"1", Link{Slot: MustDuration("2ms"), SlotMax: MustDuration("1ms")}, "slot"},
		{"1", Link{SlotPackets: 3}, "slot"},
		{"1", Link{PacketOverhead: 20}, "packet_overhead"},
		{"1/1000", Link{Delay: MustDuration("0.1ns")}, "below 1 ns"},
	}
	for _, c := range cases {
		_, _, err := ScaleLink(MustFactor(c.tdf), c.l, DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("TDF %s %+v: err %v, want %q", c.tdf, c.l, err, c.want)
		}
	}
	// boundary: exactly 10 Gbit/s physical is accepted, exactly 100 B/s too
	if _, _, err := ScaleLink(MustFactor("10"), Link{Rate: MustRate("100gbit")}, DefaultLimits); err != nil {
		t.Errorf("100gbit at TDF 10: %v", err)
	}
	if n, _, err := ScaleLink(MustFactor("1000"), Link{Rate: MustRate("800kbit")}, DefaultLimits); err != nil || n.RateBytesPerSec != 100 {
		t.Errorf("800kbit at TDF 1000: %v %v", n, err)
	}
}

func TestScaleLinkWarnings(t *testing.T) {
	// 10 Gbit/s, 40 ms: BDP 33333 packets > default limit 1000
	_, warn, err := ScaleLink(MustFactor("100"), Link{Rate: MustRate("10gbit"), Delay: MustDuration("40ms")}, DefaultLimits)
	if err != nil || len(warn) != 1 || !strings.Contains(warn[0], "bandwidth-delay") {
		t.Errorf("warn %v err %v", warn, err)
	}
	_, warn, _ = ScaleLink(MustFactor("1/1000"), Link{Delay: MustDuration("100us")}, DefaultLimits)
	if len(warn) != 1 || !strings.Contains(warn[0], "hrtimer") {
		t.Errorf("warn %v", warn)
	}
}

func TestProbU32(t *testing.T) {
	if ProbU32(MustPercent("100%")) != 0xFFFFFFFF || ProbU32(MustPercent("0%")) != 0 || ProbU32(Percent{}) != 0 {
		t.Error("bounds")
	}
	if got := ProbU32(MustPercent("1%")); got != 42949673 {
		t.Errorf("1%% = %d", got)
	}
}

func TestScaleCPU(t *testing.T) {
	c, warn, err := ScaleCPU(big.NewRat(2, 1), MustFactor("10"), MustFactor("10"), 2, 0)
	if err != nil || c.Line() != "2000 10000" || len(warn) != 0 {
		t.Errorf("2 CPUs TDF 10: %v %v %v", c, warn, err)
	}
	c, _, err = ScaleCPU(big.NewRat(1, 1), MustFactor("1"), MustFactor("1"), 2, 0)
	if err != nil || c.Line() != "10000 10000" {
		t.Errorf("1 CPU TDF 1: %v %v", c, err)
	}
	// DieCast: TDF 20 at scale 10, 1 CPU -> 10%, perceived 2 CPUs, warning
	c, warn, err = ScaleCPU(big.NewRat(1, 1), MustFactor("20"), MustFactor("10"), 2, 0)
	if err != nil || c.Line() != "1000 10000" || len(warn) != 1 || c.Perceived.Cmp(big.NewRat(2, 1)) != 0 {
		t.Errorf("TDF 20 scale 10: %v %v %v", c, warn, err)
	}
	// small share: period raised to keep a 1ms quota
	c, warn, err = ScaleCPU(big.NewRat(1, 1), MustFactor("100"), MustFactor("100"), 2, 0)
	if err != nil || c.Line() != "1000 100000" || len(warn) != 1 {
		t.Errorf("TDF 100: %v %v %v", c, warn, err)
	}
	c, _, err = ScaleCPU(big.NewRat(1, 1), MustFactor("3"), MustFactor("3"), 2, 0)
	if err != nil || c.Line() != "3333 10000" {
		t.Errorf("TDF 3: %v %v", c, err)
	}
	c, _, err = ScaleCPU(big.NewRat(1, 1), MustFactor("1000"), MustFactor("1000"), 2, 0)
	if err != nil || c.Line() != "1000 1000000" {
		t.Errorf("TDF 1000: %v %v", c, err)
	}
	// explicit period
	c, _, err = ScaleCPU(big.NewRat(1, 2), MustFactor("5"), MustFactor("5"), 2, 20000)
	if err != nil || c.Line() != "2000 20000" {
		t.Errorf("period: %v %v", c, err)
	}
	for _, e := range []struct {
		cpus   *big.Rat
		tdf    string
		online int
		period uint64
		want   string
	}{
		{big.NewRat(30, 1), "10", 2, 0, "above"},       // 3 real CPUs on a 2-CPU machine
		{big.NewRat(3, 1), "1", 2, 0, "above"},         //
		{big.NewRat(0, 1), "10", 2, 0, "positive"},     //
		{big.NewRat(-1, 1), "10", 2, 0, "positive"},    //
		{big.NewRat(1, 2), "1000", 2, 0, "below"},      // 0.0005 CPU
		{big.NewRat(1, 1), "10", 2, 500, "range"},      // period too short
		{big.NewRat(1, 1), "10", 2, 2000000, "range"},  // too long
		{big.NewRat(1, 1), "100", 2, 10000, "minimum"}, // 100us quota
		{big.NewRat(1, 1), "10", 0, 0, "online"},       //
	} {
		_, _, err := ScaleCPU(e.cpus, MustFactor(e.tdf), MustFactor(e.tdf), e.online, e.period)
		if err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%v TDF %s online %d period %d: %v, want %q", e.cpus, e.tdf, e.online, e.period, err, e.want)
		}
	}
	// exactly the whole machine is allowed
	if _, _, err := ScaleCPU(big.NewRat(20, 1), MustFactor("10"), MustFactor("10"), 2, 0); err != nil {
		t.Errorf("whole machine: %v", err)
	}
}

func TestScaleDisk(t *testing.T) {
	d := Disk{Dev: "7:0", RBps: MustBytes("400MB").N, WBps: MustBytes("200MB").N, RIOPS: big.NewRat(50000, 1)}
	m, err := ScaleDisk(MustFactor("10"), d)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Line(), "7:0 rbps=40000000 wbps=20000000 riops=5000 wiops=max"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	m, err = ScaleDisk(MustFactor("5/2"), Disk{Dev: "253:16", WIOPS: big.NewRat(1000, 1)})
	if err != nil || m.Line() != "253:16 rbps=max wbps=max riops=max wiops=400" {
		t.Errorf("%v %v", m.Line(), err)
	}
	for _, e := range []struct {
		tdf  string
		d    Disk
		want string
	}{
		{"10", Disk{Dev: "sda", RBps: big.NewRat(1, 1)}, "MAJ:MIN"},
		{"10", Disk{Dev: "8:0"}, "at least one"},
		{"10", Disk{Dev: "8:0", RIOPS: big.NewRat(5, 1)}, "cannot represent"},    // 0.5 iops
		{"10", Disk{Dev: "8:0", RIOPS: big.NewRat(15, 1)}, "cannot represent"},   // 1.5 iops
		{"1000", Disk{Dev: "8:0", RBps: big.NewRat(100, 1)}, "cannot represent"}, // 0.1 B/s
		{"10", Disk{Dev: "8:0", WBps: big.NewRat(0, 1)}, "positive"},
	} {
		_, err := ScaleDisk(MustFactor(e.tdf), e.d)
		if err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%+v: %v, want %q", e.d, err, e.want)
		}
	}
}

func TestScaleRTOMin(t *testing.T) {
	ms, err := ScaleRTOMin(MustFactor("10"), MustDuration("200ms"))
	if err != nil || ms != 2000 {
		t.Errorf("%d %v", ms, err)
	}
	if _, err := ScaleRTOMin(MustFactor("1000"), MustDuration("200ms")); err == nil {
		t.Error("200 s rto_min accepted")
	}
	if _, err := ScaleRTOMin(MustFactor("1/1000"), MustDuration("200us")); err == nil {
		t.Error("0.2us rto_min accepted")
	}
	if _, err := ScaleRTOMin(MustFactor("1"), MustDuration("1.5ms")); err == nil {
		t.Error("1.5ms accepted")
	}
}

func TestScaleNeighbourTimeMS(t *testing.T) {
	for _, c := range []struct {
		tdf  string
		in   uint64
		want uint64
	}{
		{"1", 1000, 1000},
		{"10", 1000, 10000},
		{"100", 30000, 3000000},
		{"5/2", 5000, 12500},
		{"1/1000", 800, 1}, // 0.8 ms rounds to 1
		{"1000", 60000, 60000000},
		{"7", 0, 0}, // a zero delay (anycast_delay) stays zero
		{"1000", 2147483, 2147483000},
	} {
		got, err := ScaleNeighbourTimeMS(MustFactor(c.tdf), c.in)
		if err != nil || got != c.want {
			t.Errorf("TDF %s, %dms: %d %v, want %d", c.tdf, c.in, got, err, c.want)
		}
	}
	// 2147484ms x 1000 would be truncated by the kernel's int of jiffies
	if v, err := ScaleNeighbourTimeMS(MustFactor("1000"), 2147484); err == nil {
		t.Errorf("2147484ms at TDF 1000 accepted: %d", v)
	}
	if v, err := ScaleNeighbourTimeMS(MustFactor("1/1000"), 400); err == nil {
		t.Errorf("0.4ms accepted as %d", v)
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{10e6: "10Mbit", 1500: "1500bit", 800: "800bit", 2.5e9: "2500Mbit", 1.6e6: "1600Kbit", 100e3: "100Kbit", 1e9: "1Gbit", 1234567890: "1234.568Mbit"} {
		if got := FormatBits(big.NewRat(in, 1)); got != want {
			t.Errorf("FormatBits(%d) = %s", in, got)
		}
	}
	for in, want := range map[int64]string{400e6: "400ms", 1.5e9: "1.5s", 250e3: "250us", 7: "7ns"} {
		if got := FormatNS(big.NewRat(in, 1)); got != want {
			t.Errorf("FormatNS(%d) = %s", in, got)
		}
	}
}
