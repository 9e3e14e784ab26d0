package scaling

import (
	"fmt"
	"math/big"
	"strings"
)

// Link describes one direction of a network link AS PERCEIVED inside the
// dilated namespace. Zero values mean "not set" (no rate limit, no delay...).
type Link struct {
	Rate                 Rate     // unset: unlimited
	Delay                Duration // one-way delay of this direction
	Jitter               Duration // +- jitter around Delay (netem uniform by default)
	Distribution         string   // "", "normal", "pareto", "paretonormal", "experimental"
	DelayCorrelation     Percent
	Loss                 Percent
	LossCorrelation      Percent
	Duplicate            Percent
	DuplicateCorrelation Percent
	Corrupt              Percent
	CorruptCorrelation   Percent
	Reorder              Percent // immediately sent packets, the rest delayed
	ReorderCorrelation   Percent
	Limit                uint32 // netem queue limit in packets; 0: netem default (1000)
	Slot                 Duration
	SlotMax              Duration
	SlotPackets          uint32
	SlotBytes            uint32
	PacketOverhead       int32 // bytes added per packet for the rate computation
	ECN                  bool  // mark ECN-capable packets instead of dropping (needs Loss)
	// Seed seeds netem's random number generator (loss, duplicate, corrupt,
	// reorder, jitter), so that a run can be repeated with the same packets
	// lost, at any TDF; nil: the kernel picks a random seed.
	Seed *uint64
}

// Netem is one netem qdisc, physical parameters (what is configured).
type Netem struct {
	RateBytesPerSec      uint64 // 0: unlimited
	DelayNS              int64
	JitterNS             int64
	Distribution         string // unchanged: the table is in units of the jitter
	DelayCorrelation     Percent
	Loss                 Percent
	LossCorrelation      Percent
	Duplicate            Percent
	DuplicateCorrelation Percent
	Corrupt              Percent
	CorruptCorrelation   Percent
	Reorder              Percent
	ReorderCorrelation   Percent
	Limit                uint32 // packets, always set (1000 by default)
	SlotMinNS            int64
	SlotMaxNS            int64
	SlotPackets          uint32
	SlotBytes            uint32
	PacketOverhead       int32
	ECN                  bool
	Seed                 *uint64 // nil: the kernel picks one
}

// NetemDefaultLimit is netem's default queue limit in packets.
const NetemDefaultLimit = 1000

// Limits bound what the physical configuration may ask of netem.
type Limits struct {
	// MaxRateBitsPerSec is the highest physical rate netem is trusted to
	// emulate on a veth. Above about 10 Gbit/s one netem queue (one CPU,
	// per-packet hrtimers of about 1 us for 1500-byte packets) cannot keep up;
	// the result would be a lower rate than asked, not an error, so it is
	// refused here.
	MaxRateBitsPerSec *big.Rat
	// MinRateBytesPerSec: netem takes an integer rate in bytes/s; below
	// 100 B/s rounding would be off by more than 0.5%.
	MinRateBytesPerSec int64
	// MaxDelayNS: the longest physical delay accepted (1 hour); anything
	// longer is a mistake, not an experiment.
	MaxDelayNS int64
}

// DefaultLimits are the limits used by the tools.
var DefaultLimits = Limits{
	MaxRateBitsPerSec:  big.NewRat(10e9, 1),
	MinRateBytesPerSec: 100,
	MaxDelayNS:         3600e9,
}

// FieldError is an error about one field of a Link, named as in the
// netem-profiles format ("rate", "jitter", ...), so that a caller can point at
// the line that set it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func fieldErr(field, f string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(f, a...)}
}

// Distributions are the delay distribution tables iproute2 ships.
var Distributions = map[string]bool{"normal": true, "pareto": true, "paretonormal": true, "experimental": true}

// Validate checks a perceived link description for internal consistency.
func (l Link) Validate() error {
	if l.Jitter.IsSet() && l.Jitter.NS.Sign() > 0 {
		if !l.Delay.IsSet() || l.Jitter.NS.Cmp(l.Delay.NS) > 0 {
			return fieldErr("jitter", "jitter (%s) must not exceed delay (%s)", l.Jitter, l.Delay)
		}
	}
	corr := []struct {
		c, base      Percent
		cname, bname string
	}{
		{l.DelayCorrelation, l.Jitter2Percent(), "delay_correlation", "jitter"},
		{l.LossCorrelation, l.Loss, "loss_correlation", "loss"},
		{l.DuplicateCorrelation, l.Duplicate, "duplicate_correlation", "duplicate"},
		{l.CorruptCorrelation, l.Corrupt, "corrupt_correlation", "corrupt"},
		{l.ReorderCorrelation, l.Reorder, "reorder_correlation", "reorder"},
	}
	for _, c := range corr {
		if c.c.IsSet() && c.c.P.Sign() > 0 && (!c.base.IsSet() || c.base.P.Sign() == 0) {
			return fieldErr(c.cname, "%s needs a non-zero %s", c.cname, c.bname)
		}
	}
	if l.Distribution != "" {
		if !Distributions[l.Distribution] {
			return fieldErr("distribution", "distribution %q unknown (normal, pareto, paretonormal, experimental)", l.Distribution)
		}
		if !l.Jitter.IsSet() || l.Jitter.NS.Sign() == 0 {
			return fieldErr("distribution", "distribution needs a non-zero jitter")
		}
	}
	if l.Reorder.IsSet() && l.Reorder.P.Sign() > 0 && (!l.Delay.IsSet() || l.Delay.NS.Sign() == 0) {
		return fieldErr("reorder", "reorder needs a non-zero delay (netem reorders by sending some packets without the delay)")
	}
	if l.ECN && (!l.Loss.IsSet() || l.Loss.P.Sign() == 0) {
		return fieldErr("ecn", "ecn needs a non-zero loss")
	}
	if l.SlotMax.IsSet() && (!l.Slot.IsSet() || l.SlotMax.NS.Cmp(l.Slot.NS) < 0) {
		return fieldErr("slot_max", "slot_max (%s) needs slot and must not be below it", l.SlotMax)
	}
	if (l.SlotPackets > 0 || l.SlotBytes > 0) && !l.Slot.IsSet() {
		return fieldErr("slot", "slot_packets and slot_bytes need slot")
	}
	if l.PacketOverhead != 0 && !l.Rate.IsSet() {
		return fieldErr("packet_overhead", "packet_overhead needs rate")
	}
	return nil
}

// Jitter2Percent is a helper: a non-zero "percentage" when jitter is set, so
// that delay_correlation can be checked like the other correlations.
func (l Link) Jitter2Percent() Percent {
	if l.Jitter.IsSet() && l.Jitter.NS.Sign() > 0 {
		return Percent{big.NewRat(1, 1)}
	}
	return Percent{}
}

// ScaleLink turns one perceived direction into a physical netem at TDF tdf.
// Warnings are returned for configurations that work but may not behave as
// the user expects (e.g. a queue limit below the bandwidth-delay product).
func ScaleLink(tdf Factor, l Link, lim Limits) (Netem, []string, error) {
	var warn []string
	if !tdf.Valid() {
		return Netem{}, nil, fmt.Errorf("invalid TDF")
	}
	if err := l.Validate(); err != nil {
		return Netem{}, nil, err
	}
	t := tdf.Rat()
	n := Netem{
		DelayCorrelation: l.DelayCorrelation, Loss: l.Loss, LossCorrelation: l.LossCorrelation,
		Duplicate: l.Duplicate, DuplicateCorrelation: l.DuplicateCorrelation,
		Corrupt: l.Corrupt, CorruptCorrelation: l.CorruptCorrelation,
		Reorder: l.Reorder, ReorderCorrelation: l.ReorderCorrelation,
		Distribution: l.Distribution, Limit: l.Limit, SlotPackets: l.SlotPackets, SlotBytes: l.SlotBytes,
		PacketOverhead: l.PacketOverhead, ECN: l.ECN, Seed: l.Seed,
	}
	if n.Limit == 0 {
		n.Limit = NetemDefaultLimit
	}
	if l.Rate.IsSet() {
		// bytes/s physical = bits/s perceived / 8 / TDF
		exact := new(big.Rat).Quo(l.Rate.BitsPerSec, new(big.Rat).Mul(big.NewRat(8, 1), t))
		phys := new(big.Rat).Quo(l.Rate.BitsPerSec, t)
		if phys.Cmp(lim.MaxRateBitsPerSec) > 0 {
			return Netem{}, nil, fieldErr("rate", "rate %s at TDF %s needs a physical rate of %s, above the %s netem can emulate on a veth; use a higher TDF",
				l.Rate, tdf, FormatBits(phys), FormatBits(lim.MaxRateBitsPerSec))
		}
		if exact.Cmp(big.NewRat(lim.MinRateBytesPerSec, 1)) < 0 {
			return Netem{}, nil, fieldErr("rate", "rate %s at TDF %s needs a physical rate of %s B/s, below the %d B/s netem can represent to 0.5%% (netem takes whole bytes/s); use a lower TDF",
				l.Rate, tdf, exact.FloatString(3), lim.MinRateBytesPerSec)
		}
		n.RateBytesPerSec = roundRat(exact).Uint64()
	}
	scaleDur := func(name string, d Duration) (int64, error) {
		if !d.IsSet() {
			return 0, nil
		}
		exact := new(big.Rat).Mul(d.NS, t)
		if exact.Cmp(big.NewRat(lim.MaxDelayNS, 1)) > 0 {
			return 0, fieldErr(name, "%s %s at TDF %s is %s physically, above the %s accepted",
				name, d, tdf, FormatNS(exact), FormatNS(big.NewRat(lim.MaxDelayNS, 1)))
		}
		v := roundRat(exact).Int64()
		if d.NS.Sign() > 0 && v == 0 {
			return 0, fieldErr(name, "%s %s at TDF %s is below 1 ns physically", name, d, tdf)
		}
		if v > 0 && v < 1000 {
			warn = append(warn, fmt.Sprintf("%s is %dns physically, below hrtimer and scheduling precision (about 1us): expect it to be longer", name, v))
		}
		return v, nil
	}
	var err error
	if n.DelayNS, err = scaleDur("delay", l.Delay); err != nil {
		return Netem{}, nil, err
	}
	if n.JitterNS, err = scaleDur("jitter", l.Jitter); err != nil {
		return Netem{}, nil, err
	}
	if n.SlotMinNS, err = scaleDur("slot", l.Slot); err != nil {
		return Netem{}, nil, err
	}
	if n.SlotMaxNS, err = scaleDur("slot_max", l.SlotMax); err != nil {
		return Netem{}, nil, err
	}
	if n.SlotMinNS > 0 && n.SlotMaxNS == 0 {
		n.SlotMaxNS = n.SlotMinNS
	}
	// Bandwidth-delay product of this direction in full-size packets: netem's
	// limit counts the packets in its delay line.
	if l.Rate.IsSet() && l.Delay.IsSet() {
		bdp := new(big.Rat).Mul(l.Rate.BitsPerSec, l.Delay.NS)
		bdp.Quo(bdp, big.NewRat(8*1500*1e9, 1))
		if bdp.Cmp(big.NewRat(int64(n.Limit), 1)) > 0 {
			warn = append(warn, fmt.Sprintf("limit %d packets is below the bandwidth-delay product of this direction (%s full-size packets): netem drops packets when the link is full; set limit",
				n.Limit, bdp.FloatString(0)))
		}
	}
	return n, warn, nil
}

// IsNoop reports whether the netem would do nothing (no qdisc needed).
func (n Netem) IsNoop() bool {
	z := func(p Percent) bool { return !p.IsSet() || p.P.Sign() == 0 }
	return n.RateBytesPerSec == 0 && n.DelayNS == 0 && n.JitterNS == 0 && z(n.Loss) &&
		z(n.Duplicate) && z(n.Corrupt) && z(n.Reorder) && n.SlotMinNS == 0 && n.Limit == NetemDefaultLimit
}

// String renders the physical netem like tc(8) arguments, e.g.
// "limit 1000 delay 400ms jitter 10ms loss 1% rate 10Mbit".
func (n Netem) String() string {
	var b []string
	add := func(f string, a ...any) { b = append(b, fmt.Sprintf(f, a...)) }
	pct := func(p Percent) bool { return p.IsSet() && p.P.Sign() > 0 }
	add("limit %d", n.Limit)
	if n.DelayNS > 0 || n.JitterNS > 0 {
		add("delay %s", FormatNS(big.NewRat(n.DelayNS, 1)))
		if n.JitterNS > 0 {
			add("%s", FormatNS(big.NewRat(n.JitterNS, 1)))
			if pct(n.DelayCorrelation) {
				add("%s", n.DelayCorrelation)
			}
			if n.Distribution != "" {
				add("distribution %s", n.Distribution)
			}
		}
	}
	if pct(n.Loss) {
		add("loss %s", n.Loss)
		if pct(n.LossCorrelation) {
			add("%s", n.LossCorrelation)
		}
	}
	if pct(n.Duplicate) {
		add("duplicate %s", n.Duplicate)
		if pct(n.DuplicateCorrelation) {
			add("%s", n.DuplicateCorrelation)
		}
	}
	if pct(n.Reorder) {
		add("reorder %s", n.Reorder)
		if pct(n.ReorderCorrelation) {
			add("%s", n.ReorderCorrelation)
		}
	}
	if pct(n.Corrupt) {
		add("corrupt %s", n.Corrupt)
		if pct(n.CorruptCorrelation) {
			add("%s", n.CorruptCorrelation)
		}
	}
	if n.ECN {
		add("ecn")
	}
	if n.RateBytesPerSec > 0 {
		add("rate %s", FormatBits(new(big.Rat).SetInt64(int64(n.RateBytesPerSec)*8)))
		if n.PacketOverhead != 0 {
			add("%d", n.PacketOverhead)
		}
	}
	if n.SlotMinNS > 0 {
		add("slot %s %s", FormatNS(big.NewRat(n.SlotMinNS, 1)), FormatNS(big.NewRat(n.SlotMaxNS, 1)))
		if n.SlotPackets > 0 {
			add("packets %d", n.SlotPackets)
		}
		if n.SlotBytes > 0 {
			add("bytes %d", n.SlotBytes)
		}
	}
	if n.Seed != nil {
		add("seed %d", *n.Seed)
	}
	return strings.Join(b, " ")
}

// ProbU32 converts a percentage to netem's 32-bit probability (0 .. 2^32-1).
func ProbU32(p Percent) uint32 {
	if !p.IsSet() {
		return 0
	}
	v := new(big.Rat).Mul(p.P, big.NewRat(0xFFFFFFFF, 100))
	r := roundRat(v)
	if r.Cmp(big.NewInt(0xFFFFFFFF)) > 0 {
		return 0xFFFFFFFF
	}
	return uint32(r.Uint64())
}

// ScaleRTOMin returns the physical TCP rto_min route metric in milliseconds
// for a perceived minimum retransmission timeout (Linux default 200ms).
func ScaleRTOMin(tdf Factor, perceived Duration) (uint32, error) {
	if !perceived.IsSet() || perceived.NS.Sign() <= 0 {
		return 0, fmt.Errorf("rto_min must be positive")
	}
	ms := new(big.Rat).Mul(perceived.NS, tdf.Rat())
	ms.Quo(ms, big.NewRat(1e6, 1))
	if ms.Cmp(big.NewRat(120000, 1)) > 0 {
		return 0, fmt.Errorf("rto_min %s at TDF %s is %sms physically, above TCP's maximum RTO of 120s", perceived, tdf, ms.FloatString(0))
	}
	v := roundRat(ms)
	if v.Sign() == 0 {
		return 0, fmt.Errorf("rto_min %s at TDF %s is below 1ms physically (the route metric is in whole ms)", perceived, tdf)
	}
	if relErr(ms, v) > 0.01 {
		return 0, fmt.Errorf("rto_min %s at TDF %s is %sms physically, which whole milliseconds cannot represent to 1%%", perceived, tdf, ms.FloatString(3))
	}
	return uint32(v.Uint64()), nil
}

// MaxNeighbourTimeMS is the longest neighbour-table time (ARP, NDP) this
// package asks for. The kernel keeps those times in jiffies in an int:
// 2^31-1 jiffies, which at HZ=1000, the highest HZ, is about 24.8 days.
// A longer value would be truncated by the kernel, not refused.
const MaxNeighbourTimeMS = 1<<31 - 1

// ScaleNeighbourTimeMS returns the physical value, in whole milliseconds, of
// one of a node's neighbour-table times (the interval between ARP or
// neighbour solicitations, the reachable time, the delay before the first
// probe...) whose perceived value is perceivedMS. The kernel counts them in
// jiffies, so the millisecond rounding is finer than what it keeps.
func ScaleNeighbourTimeMS(tdf Factor, perceivedMS uint64) (uint64, error) {
	ms := new(big.Rat).Mul(new(big.Rat).SetFrac(new(big.Int).SetUint64(perceivedMS), big.NewInt(1)), tdf.Rat())
	v := roundRat(ms)
	if v.Cmp(big.NewInt(MaxNeighbourTimeMS)) > 0 {
		return 0, fmt.Errorf("%dms at TDF %s is %sms physically, above the kernel's limit for neighbour-table times (%dms)",
			perceivedMS, tdf, v, int64(MaxNeighbourTimeMS))
	}
	if v.Sign() == 0 && perceivedMS > 0 {
		return 0, fmt.Errorf("%dms at TDF %s is below 1ms physically (neighbour-table times are set in whole ms)", perceivedMS, tdf)
	}
	return v.Uint64(), nil
}

// relErr is |exact - rounded| / exact.
func relErr(exact *big.Rat, rounded *big.Int) float64 {
	if exact.Sign() == 0 {
		return 0
	}
	d := new(big.Rat).Sub(exact, new(big.Rat).SetInt(rounded))
	d.Abs(d)
	d.Quo(d, exact)
	f, _ := d.Float64()
	return f
}
