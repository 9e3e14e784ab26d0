package scaling

import (
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Rate is a data rate in bits per second (exact rational).
type Rate struct{ BitsPerSec *big.Rat }

// Bytes is an amount of data in bytes (exact rational).
type Bytes struct{ N *big.Rat }

// Duration is a time span in nanoseconds (exact rational, may be fractional
// before scaling).
type Duration struct{ NS *big.Rat }

// Percent is a percentage in [0, 100].
type Percent struct{ P *big.Rat }

func (r Rate) IsSet() bool     { return r.BitsPerSec != nil }
func (d Duration) IsSet() bool { return d.NS != nil }
func (p Percent) IsSet() bool  { return p.P != nil }
func (b Bytes) IsSet() bool    { return b.N != nil }

// splitNumber splits "12.5mbit" into ("12.5", "mbit").
func splitNumber(s string) (num, unit string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func parseDecimal(num string) (*big.Rat, bool) {
	if num == "" || strings.Count(num, ".") > 1 || num == "." ||
		strings.HasPrefix(num, ".") || strings.HasSuffix(num, ".") ||
		strings.Trim(num, "0123456789.") != "" {
		return nil, false
	}
	return new(big.Rat).SetString(num)
}

// rate units as tc(8) understands them: *bit are bits per second, *bps are
// BYTES per second; k/m/g/t are powers of 1000, ki/mi/gi/ti powers of 1024.
var rateUnits = map[string]int64{
	"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
	"kibit": 1 << 10, "mibit": 1 << 20, "gibit": 1 << 30, "tibit": 1 << 40,
	"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
	"kibps": 8 << 10, "mibps": 8 << 20, "gibps": 8 << 30, "tibps": 8 << 40,
}

// ParseRate parses a tc-style rate: "100mbit", "1.5gbit", "512kbit",
// "10mbps" (= 10 megaBYTES/s, as in tc). A unit is required; units are
// case-insensitive. The rate must be positive.
func ParseRate(s string) (Rate, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	v, ok := parseDecimal(num)
	if !ok {
		return Rate{}, fmt.Errorf("invalid rate %q: expected a number and a unit such as 100mbit", s)
	}
	if unit == "" {
		return Rate{}, fmt.Errorf("invalid rate %q: a unit is required (bit, kbit, mbit, gbit, or bps, kbps, mbps, gbps for bytes/s)", s)
	}
	m, ok := rateUnits[strings.ToLower(unit)]
	if !ok {
		return Rate{}, fmt.Errorf("invalid rate %q: unknown unit %q (bit, kbit, mbit, gbit, tbit, kibit.., or bps, kbps, mbps, gbps for bytes/s)", s, unit)
	}
	if v.Sign() <= 0 {
		return Rate{}, fmt.Errorf("invalid rate %q: must be positive", s)
	}
	return Rate{v.Mul(v, big.NewRat(m, 1))}, nil
}

var byteUnits = map[string]int64{
	"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}

// ParseBytes parses a byte count: "4096", "500MB", "1.5GiB", "64k". Decimal
// prefixes are powers of 1000, binary ones (Ki, Mi, Gi) powers of 1024. A
// trailing "/s" is accepted (for bandwidths).
func ParseBytes(s string) (Bytes, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	num, unit := splitNumber(t)
	v, ok := parseDecimal(num)
	if !ok {
		return Bytes{}, fmt.Errorf("invalid byte count %q: expected a number with an optional unit such as 500MB or 64KiB", s)
	}
	m, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return Bytes{}, fmt.Errorf("invalid byte count %q: unknown unit %q (B, KB, MB, GB, KiB, MiB, GiB)", s, unit)
	}
	return Bytes{v.Mul(v, big.NewRat(m, 1))}, nil
}

// ParseCount parses a plain non-negative decimal number with an optional k/M/G
// (powers of 1000) suffix, for IOPS: "20000", "20k", "2.5k".
func ParseCount(s string) (*big.Rat, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	v, ok := parseDecimal(num)
	if !ok {
		return nil, fmt.Errorf("invalid number %q", s)
	}
	switch strings.ToLower(unit) {
	case "":
	case "k":
		v.Mul(v, big.NewRat(1e3, 1))
	case "m":
		v.Mul(v, big.NewRat(1e6, 1))
	case "g":
		v.Mul(v, big.NewRat(1e9, 1))
	default:
		return nil, fmt.Errorf("invalid number %q: unknown suffix %q (k, M, G)", s, unit)
	}
	return v, nil
}

var durationUnits = map[string]int64{
	"ns": 1, "nsec": 1,
	"us": 1e3, "µs": 1e3, "usec": 1e3,
	"ms": 1e6, "msec": 1e6,
	"s": 1e9, "sec": 1e9,
	"min": 60e9,
}

// ParseDuration parses a non-negative duration: "40ms", "1.5s", "250us",
// "0". A unit is required except for 0.
func ParseDuration(s string) (Duration, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	v, ok := parseDecimal(num)
	if !ok {
		return Duration{}, fmt.Errorf("invalid duration %q: expected a number and a unit such as 40ms", s)
	}
	if unit == "" {
		if v.Sign() == 0 {
			return Duration{v}, nil
		}
		return Duration{}, fmt.Errorf("invalid duration %q: a unit is required (ns, us, ms, s)", s)
	}
	m, ok := durationUnits[strings.ToLower(unit)]
	if !ok {
		return Duration{}, fmt.Errorf("invalid duration %q: unknown unit %q (ns, us, ms, s)", s, unit)
	}
	return Duration{v.Mul(v, big.NewRat(m, 1))}, nil
}

// ParsePercent parses "1%", "0.5%" or "25%"; the value must lie in [0, 100].
func ParsePercent(s string) (Percent, error) {
	t := strings.TrimSpace(s)
	if !strings.HasSuffix(t, "%") {
		return Percent{}, fmt.Errorf("invalid percentage %q: expected a number followed by %%, such as 1%%", s)
	}
	v, ok := parseDecimal(strings.TrimSpace(strings.TrimSuffix(t, "%")))
	if !ok {
		return Percent{}, fmt.Errorf("invalid percentage %q: expected a number followed by %%, such as 1%%", s)
	}
	if v.Cmp(big.NewRat(100, 1)) > 0 {
		return Percent{}, fmt.Errorf("invalid percentage %q: must lie in [0%%, 100%%]", s)
	}
	return Percent{v}, nil
}

// MustRate, MustDuration, MustPercent, MustBytes panic on error (tests).
func MustRate(s string) Rate {
	r, err := ParseRate(s)
	if err != nil {
		panic(err)
	}
	return r
}
func MustDuration(s string) Duration {
	d, err := ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}
func MustPercent(s string) Percent {
	p, err := ParsePercent(s)
	if err != nil {
		panic(err)
	}
	return p
}
func MustBytes(s string) Bytes {
	b, err := ParseBytes(s)
	if err != nil {
		panic(err)
	}
	return b
}

func (r Rate) String() string {
	if r.BitsPerSec == nil {
		return "unlimited"
	}
	return FormatBits(r.BitsPerSec)
}

func (d Duration) String() string {
	if d.NS == nil {
		return "0"
	}
	return FormatNS(d.NS)
}

func (p Percent) String() string {
	if p.P == nil {
		return "0%"
	}
	return trimRat(p.P, 6) + "%"
}

// FormatBits renders bits/s the way tc(8) prints rates: the largest SI unit
// in which the value is a whole number (or at least 1000): 10000000 ->
// "10Mbit", 1600000 -> "1600Kbit", 1500 -> "1500bit". Non-integer inputs keep
// up to 3 decimals.
func FormatBits(b *big.Rat) string {
	units := []string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}
	v := new(big.Rat).Set(b)
	k := big.NewRat(1000, 1)
	i := 0
	for ; i < len(units)-1; i++ {
		if v.Cmp(k) < 0 {
			break
		}
		q := new(big.Rat).Quo(v, k)
		if !q.IsInt() && v.Cmp(big.NewRat(1000*1000, 1)) < 0 {
			break
		}
		v = q
	}
	return trimRat(v, 3) + units[i]
}

// FormatNS renders nanoseconds as s/ms/us/ns.
func FormatNS(ns *big.Rat) string {
	units := []struct {
		n string
		v int64
	}{{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}}
	for _, u := range units {
		if ns.Cmp(big.NewRat(u.v, 1)) >= 0 {
			return trimRat(new(big.Rat).Quo(ns, big.NewRat(u.v, 1)), 3) + u.n
		}
	}
	return trimRat(ns, 3) + "ns"
}

func trimRat(r *big.Rat, prec int) string {
	s := r.FloatString(prec)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// AsDuration converts to time.Duration (rounded to ns).
func (d Duration) AsDuration() time.Duration {
	if d.NS == nil {
		return 0
	}
	return time.Duration(roundRat(d.NS).Int64())
}

// roundRat rounds half away from zero to an integer.
func roundRat(r *big.Rat) *big.Int {
	n := new(big.Int).Set(r.Num())
	d := r.Denom()
	twice := new(big.Int).Mul(n, big.NewInt(2))
	twice.Add(twice, d)
	q := new(big.Int).Div(twice, new(big.Int).Mul(d, big.NewInt(2)))
	return q
}
