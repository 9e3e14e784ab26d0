package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DistDirs are where iproute2 installs its netem distribution tables.
var DistDirs = []string{"/usr/lib/tc", "/usr/lib/x86_64-linux-gnu/tc", "/usr/lib/aarch64-linux-gnu/tc", "/usr/lib64/tc", "/usr/share/tc", "/lib/tc"}

// LoadDistribution reads iproute2's NAME.dist table (as tc does).
func LoadDistribution(name string) ([]int16, error) {
	for _, d := range DistDirs {
		b, err := os.ReadFile(filepath.Join(d, name+".dist"))
		if err != nil {
			continue
		}
		var t []int16
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			for _, f := range strings.Fields(line) {
				v, err := strconv.ParseInt(f, 10, 16)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", filepath.Join(d, name+".dist"), err)
				}
				t = append(t, int16(v))
			}
		}
		if len(t) == 0 || len(t) > 16*1024 {
			return nil, fmt.Errorf("%s: bad table size %d", filepath.Join(d, name+".dist"), len(t))
		}
		return t, nil
	}
	return nil, fmt.Errorf("netem distribution table %s.dist not found in %s (install iproute2)", name, strings.Join(DistDirs, ", "))
}
