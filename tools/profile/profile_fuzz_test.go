package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tdfctl/scaling"
)

// FuzzParse: any bytes as a profile file. Parse never panics; a rejected
// file gives one line starting with the file's path (and its line where
// known); an accepted one has a description, passes Link.Validate in both
// directions, and scales at TDF 1, 10 and 1/1000 either to a netem whose
// description renders or to a one-line error.
func FuzzParse(f *testing.F) {
	shipped, _ := filepath.Glob("../../netem-profiles/*.toml")
	for _, p := range shipped {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "description = \"x\"\n", "description = \"x\"\n[link]\nrate = \"1mbit\"\n",
		"description = \"x\"\n[link]\nrate = \"1mbit\"\n[down]\nlatency = \"1ms\"\n",
		"description = \"x\"\n[link]\nloss = 1\n",
		"description = \"x\"\n[link]\ndelay = \"1ms\"\njitter = \"5ms\"\n",
		"description = \"x\"\n[link]\nrate = \"NaN\"\n",
		"description = \"x\"\n[link]\nrate = \"1e9bit\"\nlimit = 0\n",
		"description = \"x\"\n[link]\nrate = \"0x10mbit\"\n",
		"description = \"x\"\n[link]\ndelay = \"Inf\"\n",
		"description = \"x\"\n[link]\nlimit = 99999999999999999999\n",
		"description = \"x\"\n[up]\nrate = \"1mbit\"\n[down]\nrate = \"2mbit\"\nslot = \"1ms\"\nslot_max = \"2ms\"\n",
		"description = \"multi\nline\"\n[link]\nrate = \"1mbit\"\n",
		"description = \"x\"\n[link]\n\"rate\nx\" = \"1mbit\"\n",
		"description = \"x\"\n[link]\nrate = \"1 mbit\"\ndistribution = \"pareto\"\ndelay = \"10ms\"\njitter = \"1ms\"\n",
		"description = \"x\"\n[link]\nrate = \"1mbit\"\npacket_overhead = -32768\n",
		"[[link]]\n", "description = 1\n", "x = [1, \"a\"]\n", "description = \"x\"\nlink = 3\n",
	} {
		f.Add([]byte(s))
	}
	tdfs := []scaling.Factor{scaling.MustFactor("1"), scaling.MustFactor("10"), scaling.MustFactor("1/1000")}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/p/fz.toml"
		p, err := Parse("fz", path, data)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, path+":") {
				t.Fatalf("error is not one line starting with the path: %q", msg)
			}
			return
		}
		if strings.TrimSpace(p.Description) == "" {
			t.Fatalf("accepted without a description")
		}
		for _, l := range []scaling.Link{p.Down, p.Up} {
			if err := l.Validate(); err != nil {
				t.Fatalf("accepted an invalid link: %v", err)
			}
			for _, tdf := range tdfs {
				n, warn, err := scaling.ScaleLink(tdf, l, scaling.DefaultLimits)
				if err != nil {
					if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
						t.Fatalf("ScaleLink error is not one line: %q", msg)
					}
					continue
				}
				for _, w := range warn {
					if strings.ContainsAny(w, "\n\r") {
						t.Fatalf("warning is not one line: %q", w)
					}
				}
				if n.DelayNS < 0 || n.JitterNS < 0 || n.JitterNS > n.DelayNS || n.DelayNS > scaling.DefaultLimits.MaxDelayNS {
					t.Fatalf("TDF %s: delay %d jitter %d out of range", tdf, n.DelayNS, n.JitterNS)
				}
				if s := n.String(); strings.ContainsAny(s, "\n\r") {
					t.Fatalf("netem description not one line: %q", s)
				}
			}
		}
	})
}
