package tdfhook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tdfctl/scaling"
)

func oneLine(t *testing.T, what string, err error) {
	t.Helper()
	if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("%s: error is not one line: %q", what, msg)
	}
}

// FuzzParse: the annotations as they come from a config.json. Parse never
// panics; a rejected set gives one line naming an annotation; an accepted
// one with the TDF key is enabled with a factor in [1/1000, 1000] that is
// the annotation's value (what the hook writes, Decimal(), reads back as the
// same factor), and its cpu.max, if any, has a quota of at least 1 ms within
// a period of [1 ms, 1 s] and no more CPUs than online. Without our keys it
// is disabled and error-free: the hook then touches nothing.
func FuzzParse(f *testing.F) {
	for _, c := range [][4]string{
		{"10", "", "", "2"}, {"2.5", "0.5", "", "2"}, {"5/2", "2", "", "4"}, {" 10 ", " 1 ", "", "1"},
		{"0", "", "", "2"}, {"NaN", "", "", "2"}, {"Inf", "1", "", "2"}, {"0x10", "", "", "2"}, {"1e3", "1e3", "", "2"},
		{"10", "NaN", "", "2"}, {"10", "Inf", "", "2"}, {"10", "0x1p4", "", "2"}, {"10", "1/2", "", "2"},
		{"10", "-1", "", "2"}, {"10", "99999999999999999999999999", "", "2"}, {"10", "0.0000001", "", "2"},
		{"10", "", ".cpu", "2"}, {"10", "", ".tdf", "2"}, {"-", "1", "", "2"}, {"-", "", "", "2"},
		{"10\n", "", "", "2"}, {"1000/1", "", "", "0"}, {"10", "1", "", "0"}, {"10", "\n", "", "2"},
	} {
		f.Add(c[0], c[1], c[2], c[3])
	}
	f.Fuzz(func(t *testing.T, tdf, cpus, extra, online string) {
		ann := map[string]string{"other": "x"}
		if tdf != "-" {
			ann[KeyTDF] = tdf
		}
		if cpus != "" {
			ann[KeyCPUs] = cpus
		}
		if extra != "" {
			ann[KeyTDF+extra] = "1"
		}
		n := len(online) % 8 // 0..7 online CPUs
		s, err := Parse(ann, n)
		if err != nil {
			oneLine(t, tdf+" "+cpus, err)
			if !strings.Contains(err.Error(), KeyTDF) {
				t.Fatalf("error names no annotation: %v", err)
			}
			return
		}
		_, hasTDF := ann[KeyTDF]
		_, hasCPUs := ann[KeyCPUs]
		for k := range ann {
			if strings.HasPrefix(k, KeyTDF+".") && k != KeyCPUs {
				t.Fatalf("unknown key %q accepted", k)
			}
		}
		if s.Enabled != hasTDF {
			t.Fatalf("enabled %v with annotation %v", s.Enabled, hasTDF)
		}
		if !hasTDF {
			if hasCPUs || s.CPU != nil {
				t.Fatalf("cpus without a TDF accepted")
			}
			return
		}
		r := s.TDF.Rat()
		if r.Cmp(scaling.MinFactor) < 0 || r.Cmp(scaling.MaxFactor) > 0 {
			t.Fatalf("TDF %s out of range", s.TDF)
		}
		back, err := scaling.ParseFactor("TDF", s.TDF.Decimal())
		if err != nil || !back.Equal(s.TDF) {
			t.Fatalf("TDF %q: written as %q, reads back %v %v", tdf, s.TDF.Decimal(), back, err)
		}
		if want, err := scaling.ParseFactor("TDF", strings.TrimSpace(tdf)); err != nil || !want.Equal(s.TDF) {
			t.Fatalf("TDF %q parsed as %s", tdf, s.TDF)
		}
		if hasCPUs != (s.CPU != nil) {
			t.Fatalf("cpus %q: cpu.max %v", cpus, s.CPU)
		}
		if c := strings.TrimSpace(cpus); s.CPU != nil && strings.Trim(strings.Replace(c, ".", "", 1), "0123456789") != "" {
			t.Fatalf("cpus %q accepted: not a plain decimal", cpus)
		}
		if c := s.CPU; c != nil {
			if c.QuotaUS < scaling.MinQuotaUS || c.PeriodUS < scaling.MinPeriodUS || c.PeriodUS > scaling.MaxPeriodUS ||
				c.QuotaUS > uint64(n)*c.PeriodUS {
				t.Fatalf("cpus %q at TDF %s on %d CPUs: cpu.max %q", cpus, s.TDF, n, c.Line())
			}
		}
		for _, w := range s.Warn {
			if strings.ContainsAny(w, "\n\r") {
				t.Fatalf("warning not one line: %q", w)
			}
		}
	})
}

// FuzzPrecreate: any bytes as the proposed config.json. Precreate never
// panics; an error is one line and the engine gets nothing; an accepted
// config without the annotation comes back byte for byte; with it, the
// result is valid JSON holding exactly one new-namespace {"type":"time"}
// more than before (or the same if one was listed), every other field
// unchanged, and a second pass changes nothing.
func FuzzPrecreate(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"annotations":{"io.github.time-dilated-containers.tdf":"10"}}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":null}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{"namespaces":null}}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{"namespaces":[{"type":"pid"}]}}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{"namespaces":[{"type":"time"}]}}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{},"linux":{"namespaces":[]}}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{"namespaces":[]},"x":1e999}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":3}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{"namespaces":{}}}`,
		`{"annotations":{"io.github.time-dilated-containers.tdf":"10"}} {}`,
		`{"ociVersion":"1.0.2","id":"x","status":"creating","pid":1,"bundle":"/b"}`,
		``, `null`, `[]`, `"x"`, `{"annotations":null}`, `{"annotations":{"io.github.time-dilated-containers.tdf":1}}`,
	} {
		f.Add([]byte(s))
	}
	count := func(t *testing.T, b []byte) (int, map[string]json.RawMessage) {
		var v struct {
			Linux *struct {
				Namespaces []specs.LinuxNamespace `json:"namespaces"`
			} `json:"linux"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("output is not valid JSON: %v: %q", err, b)
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(b, &all)
		n := 0
		if v.Linux != nil {
			for _, ns := range v.Linux.Namespaces {
				if ns.Type == specs.TimeNamespace {
					n++
				}
			}
		}
		return n, all
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Precreate(in)
		if err != nil {
			oneLine(t, "precreate", err)
			if out != nil {
				t.Fatalf("error %v with output %q", err, out)
			}
			return
		}
		var cfg struct {
			Annotations map[string]string `json:"annotations"`
		}
		_ = json.Unmarshal(in, &cfg)
		if _, ok := cfg.Annotations[KeyTDF]; !ok {
			if !bytes.Equal(in, out) {
				t.Fatalf("config without the annotation changed: %q -> %q", in, out)
			}
			return
		}
		nIn, before := count(t, in)
		nOut, after := count(t, out)
		if want := max(nIn, 1); nOut != want && !(nIn == 0 && nOut == 1) {
			t.Fatalf("time namespaces %d -> %d: %q -> %q", nIn, nOut, in, out)
		}
		if nOut == 0 {
			t.Fatalf("no time namespace after precreate: %q", out)
		}
		for k, v := range before {
			if k == "linux" {
				continue
			}
			if !bytes.Equal(after[k], v) {
				t.Fatalf("field %q changed: %s -> %s", k, v, after[k])
			}
		}
		again, err := Precreate(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("second pass: %v, %q -> %q", err, out, again)
		}
	})
}
