package node

import (
	"math/big"
	"strings"
	"testing"

	"tdfctl/scaling"
)

// FuzzParseDisk: any --disk argument. ParseDisk never panics; a rejected
// argument gives a one-line error starting with "--disk"; an accepted one
// names a MAJ:MIN device, sets each key at most once (a repeated key would
// silently drop a value), has no negative figure, and reads back unchanged
// when rendered as an argument again. Scaled at TDF 10 and 1/1000 it either
// becomes an io.max line within 1% of perceived/TDF or a one-line error.
func FuzzParseDisk(f *testing.F) {
	for _, s := range []string{
		"8:0,rbps=400MB,riops=20k", "8:0,wbps=1.5GiB/s,wiops=2.5k", "253:1,rbps=1", "8:0", "8:0,",
		"8:0,rbps", "8:0,rbps=NaN", "8:0,rbps=Inf", "8:0,rbps=0x10", "8:0,rbps=1e9", "8:0,rbps=-1",
		"8:0,riops=99999999999999999999999G", "8:0,rbps=0", "8:0,rbps=1,rbps=2", "8:0,foo=1",
		"/dev/null,rbps=1MB", "/nonexistent,rbps=1", "8:0,rbps=1MB\n,wbps=2", "x:y,rbps=1", ":,rbps=1",
		"8:0,riops=0.5", "8:0,rbps=1..5MB", "8:0,rbps=.5MB", "8:0,rbps=5.MB", "8:0,wiops=1 k",
	} {
		f.Add(s)
	}
	tdfs := []scaling.Factor{scaling.MustFactor("10"), scaling.MustFactor("1/1000")}
	f.Fuzz(func(t *testing.T, arg string) {
		ds, err := ParseDisk(arg)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "--disk ") {
				t.Fatalf("%q: error is not one line starting with --disk: %q", arg, msg)
			}
			return
		}
		if err := scaling.ValidDev(ds.Disk.Dev); err != nil {
			t.Fatalf("%q: accepted device %q: %v", arg, ds.Disk.Dev, err)
		}
		seen := map[string]bool{}
		for _, kv := range strings.Split(arg, ",")[1:] {
			k, _, _ := strings.Cut(kv, "=")
			if seen[k] {
				t.Fatalf("%q: key %s accepted twice", arg, k)
			}
			seen[k] = true
		}
		// render back as exact rationals (bytes/s and IOPS without units)
		parts := []string{ds.Disk.Dev}
		for _, c := range []struct {
			k string
			v *big.Rat
		}{{"rbps", ds.Disk.RBps}, {"wbps", ds.Disk.WBps}, {"riops", ds.Disk.RIOPS}, {"wiops", ds.Disk.WIOPS}} {
			if c.v == nil {
				continue
			}
			if c.v.Sign() < 0 {
				t.Fatalf("%q: negative %s %s", arg, c.k, c.v)
			}
			if !seen[c.k] {
				t.Fatalf("%q: %s set but not given", arg, c.k)
			}
			// the parser only produces decimals (denominator 2^a*5^b), and
			// one needs max(a, b) places: a fixed count would cut a longer
			// one short (rbps=0.<40 zeros>1 is valid input)
			places, ok := decimalPlaces(c.v)
			if !ok {
				t.Fatalf("%q: %s = %s is not a finite decimal", arg, c.k, c.v)
			}
			s := c.v.FloatString(places)
			if back, ok := new(big.Rat).SetString(s); !ok || back.Cmp(c.v) != 0 {
				t.Fatalf("%q: %s = %s renders as %s", arg, c.k, c.v, s)
			}
			parts = append(parts, c.k+"="+s)
		}
		again, err := ParseDisk(strings.Join(parts, ","))
		if err != nil {
			t.Fatalf("%q: rendered %q does not parse: %v", arg, strings.Join(parts, ","), err)
		}
		for _, p := range [][2]*big.Rat{{ds.Disk.RBps, again.Disk.RBps}, {ds.Disk.WBps, again.Disk.WBps},
			{ds.Disk.RIOPS, again.Disk.RIOPS}, {ds.Disk.WIOPS, again.Disk.WIOPS}} {
			if (p[0] == nil) != (p[1] == nil) || p[0] != nil && p[0].Cmp(p[1]) != 0 {
				t.Fatalf("%q: does not round-trip through %q", arg, strings.Join(parts, ","))
			}
		}
		for _, tdf := range tdfs {
			m, err := scaling.ScaleDisk(tdf, ds.Disk)
			if err != nil {
				if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("%q: ScaleDisk error not one line: %q", arg, msg)
				}
				continue
			}
			for _, c := range []struct {
				in  *big.Rat
				out uint64
			}{{ds.Disk.RBps, m.RBps}, {ds.Disk.WBps, m.WBps}, {ds.Disk.RIOPS, m.RIOPS}, {ds.Disk.WIOPS, m.WIOPS}} {
				if c.in == nil {
					if c.out != 0 {
						t.Fatalf("%q: unset figure became %d", arg, c.out)
					}
					continue
				}
				exact := new(big.Rat).Quo(c.in, tdf.Rat())
				if c.out == 0 {
					t.Fatalf("%q at TDF %s: 0 (= unlimited)", arg, tdf)
				}
				diff := new(big.Rat).Sub(new(big.Rat).SetUint64(c.out), exact)
				if diff.Abs(diff).Cmp(new(big.Rat).Mul(exact, big.NewRat(1, 100))) > 0 {
					t.Fatalf("%q at TDF %s: %d is more than 1%% off %s", arg, tdf, c.out, exact.FloatString(3))
				}
			}
			if l := m.Line(); !strings.HasPrefix(l, ds.Disk.Dev+" rbps=") || strings.ContainsAny(l, "\n\r") {
				t.Fatalf("%q: io.max line %q", arg, l)
			}
		}
	})
}

// decimalPlaces is the number of fractional digits that write r exactly,
// and false when r has no finite decimal expansion (a prime other than 2
// or 5 divides its denominator).
func decimalPlaces(r *big.Rat) (int, bool) {
	d := new(big.Int).Set(r.Denom())
	twos := d.TrailingZeroBits()
	d.Rsh(d, twos)
	fives := uint(0)
	five, q, m := big.NewInt(5), new(big.Int), new(big.Int)
	for {
		if q.QuoRem(d, five, m); m.Sign() != 0 {
			break
		}
		d.Set(q)
		fives++
	}
	return int(max(twos, fives)), d.Cmp(big.NewInt(1)) == 0
}
