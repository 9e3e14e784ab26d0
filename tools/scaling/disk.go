package scaling

import (
	"fmt"
	"math/big"
	"strings"
)

// Disk is a block device AS PERCEIVED: throughput in bytes/s and IOPS per
// direction. Nil fields are unlimited.
type Disk struct {
	Dev   string   // "MAJ:MIN"
	RBps  *big.Rat // bytes/s
	WBps  *big.Rat
	RIOPS *big.Rat
	WIOPS *big.Rat
}

// IOMax is one physical cgroup v2 io.max line. Zero fields are "max".
type IOMax struct {
	Dev                      string
	RBps, WBps, RIOPS, WIOPS uint64
}

// Line renders "MAJ:MIN rbps=N wbps=N riops=N wiops=N" ("max" for unlimited),
// the form io.max reads back.
func (m IOMax) Line() string {
	f := func(v uint64) string {
		if v == 0 {
			return "max"
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%s rbps=%s wbps=%s riops=%s wiops=%s", m.Dev, f(m.RBps), f(m.WBps), f(m.RIOPS), f(m.WIOPS))
}

// ValidDev checks a "MAJ:MIN" device number.
func ValidDev(dev string) error {
	ma, mi, ok := strings.Cut(dev, ":")
	if !ok || !allDigits(ma) || !allDigits(mi) {
		return fmt.Errorf("invalid device %q: expected MAJ:MIN", dev)
	}
	return nil
}

// ScaleDisk divides every perceived figure by the TDF. A figure that would
// become 0 or lose more than 1% to rounding to an integer is an error.
func ScaleDisk(tdf Factor, d Disk) (IOMax, error) {
	if err := ValidDev(d.Dev); err != nil {
		return IOMax{}, err
	}
	out := IOMax{Dev: d.Dev}
	any := false
	for _, f := range []struct {
		name string
		v    *big.Rat
		dst  *uint64
	}{{"rbps", d.RBps, &out.RBps}, {"wbps", d.WBps, &out.WBps}, {"riops", d.RIOPS, &out.RIOPS}, {"wiops", d.WIOPS, &out.WIOPS}} {
		if f.v == nil {
			continue
		}
		any = true
		if f.v.Sign() <= 0 {
			return IOMax{}, fmt.Errorf("%s must be positive", f.name)
		}
		exact := new(big.Rat).Quo(f.v, tdf.Rat())
		r := roundRat(exact)
		if r.Sign() == 0 || relErr(exact, r) > 0.01 {
			return IOMax{}, fmt.Errorf("%s %s at TDF %s is %s physically, which io.max (whole numbers) cannot represent to 1%%",
				f.name, trimRat(f.v, 3), tdf, exact.FloatString(3))
		}
		if !r.IsUint64() {
			return IOMax{}, fmt.Errorf("%s too large", f.name)
		}
		*f.dst = r.Uint64()
	}
	if !any {
		return IOMax{}, fmt.Errorf("disk %s: give at least one of rbps, wbps, riops, wiops", d.Dev)
	}
	return out, nil
}
