// Package scaling is the single place that turns a description of a machine and
// a network link AS PERCEIVED inside a time-dilated namespace into the physical
// parameters (cgroup v2 cpu.max and io.max, netem on a veth, TCP rto_min, the
// times of the node's neighbour tables) that make a namespace running at a
// given time dilation factor (TDF) perceive it.
//
// Inside a namespace at TDF t, one perceived second lasts t real seconds.
// Therefore:
//
//   - durations (netem delay, jitter, slot, TCP rto_min, ARP/NDP times) are
//     multiplied by t,
//   - rates (netem rate, io.max rbps/wbps/riops/wiops) are divided by t,
//   - CPU shares are divided by the scale factor s (s defaults to t; DieCast
//     lets s differ from t, the perceived CPU capacity is then cpus*t/s),
//   - dimensionless quantities (loss, duplication, corruption, reordering
//     percentages and correlations, queue limits in packets, per-packet
//     overheads, slot packet and byte budgets) are unchanged. A netem queue
//     limit counts the packets in the delay line too; since rate/t * delay*t
//     is invariant, so is the number of packets in flight.
//
// All functions are pure and report values that cannot be represented
// faithfully as errors; nothing is ever clipped silently.
package scaling

import (
	"fmt"
	"math/big"
	"strings"
)

// Bounds of a factor, the same as the kernel's for /proc/PID/timens_dilation.
var (
	MinFactor = big.NewRat(1, 1000)
	MaxFactor = big.NewRat(1000, 1)
)

const maxRatioTerm = 1000000000 // 10^9, the kernel's limit for N and D of "N/D"

// Factor is a positive rational number in [1/1000, 1000]: a time dilation
// factor or a resource scale factor. The zero value is invalid; use ParseFactor
// or MustFactor.
type Factor struct{ r *big.Rat }

// ParseFactor parses a factor the way the kernel parses
// /proc/PID/timens_dilation: a decimal with at most 9 fractional digits
// ("10", "2.5", "0.001") or a ratio "N/D" of positive integers up to 10^9
// each. One trailing newline is accepted. what names the quantity in errors
// ("TDF", "scale").
func ParseFactor(what, s string) (Factor, error) {
	orig := s
	s = strings.TrimSuffix(s, "\n")
	bad := func(why string) (Factor, error) {
		return Factor{}, fmt.Errorf("invalid %s %q: %s", what, orig, why)
	}
	if s == "" {
		return bad("empty")
	}
	var r *big.Rat
	if n, d, ok := strings.Cut(s, "/"); ok {
		ni, err1 := parseUint(n)
		di, err2 := parseUint(d)
		if err1 != nil || err2 != nil {
			return bad("a ratio must be N/D with positive integers N and D")
		}
		if ni == 0 || di == 0 {
			return bad("N and D of a ratio must be positive")
		}
		if ni > maxRatioTerm || di > maxRatioTerm {
			return bad("N and D of a ratio must not exceed 10^9")
		}
		r = new(big.Rat).SetFrac64(int64(ni), int64(di))
	} else {
		ip, fp, hasDot := strings.Cut(s, ".")
		if ip == "" || !allDigits(ip) || (hasDot && (fp == "" || !allDigits(fp))) {
			return bad("expected a decimal such as 10 or 2.5, or a ratio such as 5/2")
		}
		if len(fp) > 9 {
			return bad("at most 9 fractional digits")
		}
		if len(ip) > 10 {
			return bad(fmt.Sprintf("must lie in [1/1000, 1000]"))
		}
		r, _ = new(big.Rat).SetString(s)
	}
	if r.Cmp(MinFactor) < 0 || r.Cmp(MaxFactor) > 0 {
		return bad("must lie in [1/1000, 1000]")
	}
	return Factor{r}, nil
}

// MustFactor is ParseFactor that panics; for tests and constants.
func MustFactor(s string) Factor {
	f, err := ParseFactor("factor", s)
	if err != nil {
		panic(err)
	}
	return f
}

// Valid reports whether f was produced by ParseFactor.
func (f Factor) Valid() bool { return f.r != nil }

// Rat returns a copy of the factor as a big.Rat.
func (f Factor) Rat() *big.Rat { return new(big.Rat).Set(f.r) }

// Float64 returns the nearest float64.
func (f Factor) Float64() float64 { v, _ := f.r.Float64(); return v }

// IsOne reports whether f == 1 (no dilation).
func (f Factor) IsOne() bool { return f.r.Cmp(big.NewRat(1, 1)) == 0 }

// Equal reports whether two factors are the same number.
func (f Factor) Equal(g Factor) bool { return f.r.Cmp(g.r) == 0 }

// String renders the factor as the kernel reads it back: a reduced fraction
// "5/2", or an integer "10".
func (f Factor) String() string {
	if f.r == nil {
		return "<invalid>"
	}
	if f.r.IsInt() {
		return f.r.Num().String()
	}
	return f.r.Num().String() + "/" + f.r.Denom().String()
}

// Decimal renders the factor as a decimal when that is exact with at most 9
// fractional digits, else as N/D. Both are accepted by the kernel.
func (f Factor) Decimal() string {
	for prec := 0; prec <= 9; prec++ {
		s := f.r.FloatString(prec)
		if r, ok := new(big.Rat).SetString(s); ok && r.Cmp(f.r) == 0 {
			return s
		}
	}
	return f.String()
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func parseUint(s string) (uint64, error) {
	if !allDigits(s) || len(s) > 19 {
		return 0, fmt.Errorf("not an unsigned integer")
	}
	var v uint64
	for _, c := range s {
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}
