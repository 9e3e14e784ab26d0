package node

import (
	"testing"
	"time"

	"tdfctl/scaling"
)

// The teardown's wait for closing connections: four host round trips of the
// node's link (delays and twice the jitter, both directions), 1 s to 20 s.
func TestLingerBound(t *testing.T) {
	for _, c := range []struct {
		prof, tdf string
		want      time.Duration
	}{
		{"", "10", time.Second}, // no link shaping
		{"wan-transcontinental-100m", "10", 3280 * time.Millisecond}, // 4 x (400 ms + 10 ms) x 2
		{"wan-transcontinental-100m", "1", time.Second},              // 328 ms, raised to 1 s
		{"wan-transcontinental-100m", "100", 20 * time.Second},       // 32.8 s, capped
	} {
		cfg := baseCfg(t, c.prof)
		cfg.TDF = scaling.MustFactor(c.tdf)
		p, err := MakePlan(cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := lingerBound(p); got != c.want {
			t.Errorf("%s at TDF %s: lingerBound %v, want %v", c.prof, c.tdf, got, c.want)
		}
	}
}
