package scaling

import (
	"math/big"
	"strings"
	"testing"
)

// oneLine fails the test unless err's message is one non-empty line: every
// error of the tools ends up as the single line a user sees.
func oneLine(t *testing.T, in string, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("input %q: error is not one line: %q", in, msg)
	}
}

// FuzzParseFactor: ParseFactor never panics; an accepted factor lies in
// [1/1000, 1000] and reads back as itself through Decimal() (what the tools
// write to /proc/PID/timens_dilation) and through String() (what the kernel
// reads back) whenever that form is writable (N and D at most 10^9); a
// rejected one gives a one-line error naming the quantity.
func FuzzParseFactor(f *testing.F) {
	for _, s := range []string{"10", "2.5", "5/2", "0.001", "1000", "1/1000", "1000/1", "1\n",
		"", "0", "1001", "0.0009", "1e3", "0x10", "NaN", "Inf", "-1", "+1", " 1", "1 ", "1/0", "0/1",
		"1000000000/1000000", "1000000001/1", "1.0000000001", "10/", "/10", "1//2", "1.2.3",
		"999.999999999", "0.001000001", "18446744073709551617/1", "00000000010", "٣", "1\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseFactor("TDF", s)
		if err != nil {
			oneLine(t, s, err)
			if !strings.Contains(err.Error(), "TDF") {
				t.Fatalf("%q: error does not name the quantity: %v", s, err)
			}
			if v.Valid() {
				t.Fatalf("%q: error %v but a valid factor %s", s, err, v)
			}
			return
		}
		if !v.Valid() {
			t.Fatalf("%q: accepted but invalid", s)
		}
		r := v.Rat()
		if r.Cmp(MinFactor) < 0 || r.Cmp(MaxFactor) > 0 {
			t.Fatalf("%q: accepted %s outside [1/1000, 1000]", s, v)
		}
		// the expected value, computed independently: big.Rat's own
		// SetString reads "010/1" as octal 8/1, the kernel as 10
		want, ok := decimalRat(strings.TrimSuffix(s, "\n"))
		if !ok || want.Cmp(r) != 0 {
			t.Fatalf("%q: parsed as %s", s, v)
		}
		d := v.Decimal()
		back, err := ParseFactor("TDF", d)
		if err != nil || !back.Equal(v) {
			t.Fatalf("%q: Decimal() %q does not read back: %v %s", s, d, err, back)
		}
		if v.Float64() <= 0 {
			t.Fatalf("%q: Float64 %v", s, v.Float64())
		}
		if r.Num().IsInt64() && r.Num().Int64() <= maxRatioTerm && r.Denom().Int64() <= maxRatioTerm {
			back, err := ParseFactor("TDF", v.String())
			if err != nil || !back.Equal(v) {
				t.Fatalf("%q: String() %q does not read back: %v", s, v.String(), err)
			}
		}
	})
}

// decimalRat reads "N/D" or "I[.F]" with base-10 digits only.
func decimalRat(s string) (*big.Rat, bool) {
	if n, d, ok := strings.Cut(s, "/"); ok {
		ni, ok1 := new(big.Int).SetString(n, 10)
		di, ok2 := new(big.Int).SetString(d, 10)
		if !ok1 || !ok2 || di.Sign() == 0 || strings.ContainsAny(s, "+-_") {
			return nil, false
		}
		return new(big.Rat).SetFrac(ni, di), true
	}
	ip, fp, _ := strings.Cut(s, ".")
	num, ok := new(big.Int).SetString(ip+fp, 10)
	if !ok || strings.ContainsAny(s, "+-_") {
		return nil, false
	}
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fp))), nil)
	return new(big.Rat).SetFrac(num, den), true
}
