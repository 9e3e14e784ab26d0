// Package profile reads netem-profiles files: TOML descriptions of network
// links AS PERCEIVED inside a time-dilated namespace. See
// netem-profiles/README.md for the format. Every error names the file and
// line: "PATH:LINE: message".
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"tdfctl/scaling"
)

// Profile is a parsed, validated link description.
type Profile struct {
	Name        string
	Path        string
	Description string
	// Down is the direction towards the node (shaped on the host end of the
	// veth), Up the direction from the node (shaped on the node's end).
	Down, Up scaling.Link
	lines    map[string]int // "link.rate" -> line
}

// Line returns the line that set field for direction dir ("up" or "down"),
// looking at [dir] first, then [link]; 0 if unknown.
func (p *Profile) Line(dir, field string) int {
	if l := p.lines[dir+"."+field]; l > 0 {
		return l
	}
	if l := p.lines["link."+field]; l > 0 {
		return l
	}
	if l := p.lines[dir]; l > 0 {
		return l
	}
	return p.lines["link"]
}

// Errorf formats an error about field of direction dir at its line.
func (p *Profile) Errorf(dir, field string, f string, a ...any) error {
	msg := fmt.Sprintf(f, a...)
	if l := p.Line(dir, field); l > 0 {
		return fmt.Errorf("%s:%d: [%s] %s", p.Path, l, dir, msg)
	}
	return fmt.Errorf("%s: [%s] %s", p.Path, dir, msg)
}

type rateV struct{ v scaling.Rate }
type durV struct{ v scaling.Duration }
type pctV struct{ v scaling.Percent }

func (r *rateV) UnmarshalText(b []byte) (err error) { r.v, err = scaling.ParseRate(string(b)); return }
func (d *durV) UnmarshalText(b []byte) (err error) {
	d.v, err = scaling.ParseDuration(string(b))
	return
}
func (p *pctV) UnmarshalText(b []byte) (err error) {
	p.v, err = scaling.ParsePercent(string(b))
	return
}

type dirSpec struct {
	Rate                 *rateV  `toml:"rate"`
	Delay                *durV   `toml:"delay"`
	Jitter               *durV   `toml:"jitter"`
	DelayCorrelation     *pctV   `toml:"delay_correlation"`
	Distribution         *string `toml:"distribution"`
	Loss                 *pctV   `toml:"loss"`
	LossCorrelation      *pctV   `toml:"loss_correlation"`
	Duplicate            *pctV   `toml:"duplicate"`
	DuplicateCorrelation *pctV   `toml:"duplicate_correlation"`
	Corrupt              *pctV   `toml:"corrupt"`
	CorruptCorrelation   *pctV   `toml:"corrupt_correlation"`
	Reorder              *pctV   `toml:"reorder"`
	ReorderCorrelation   *pctV   `toml:"reorder_correlation"`
	Limit                *int64  `toml:"limit"`
	Slot                 *durV   `toml:"slot"`
	SlotMax              *durV   `toml:"slot_max"`
	SlotPackets          *int64  `toml:"slot_packets"`
	SlotBytes            *int64  `toml:"slot_bytes"`
	PacketOverhead       *int64  `toml:"packet_overhead"`
	ECN                  *bool   `toml:"ecn"`
	Seed                 *int64  `toml:"seed"`
}

type fileSpec struct {
	Description *string  `toml:"description"`
	Link        *dirSpec `toml:"link"`
	Up          *dirSpec `toml:"up"`
	Down        *dirSpec `toml:"down"`
}

// expected describes each key's type for error messages.
var expected = map[string]string{
	"description": `a string`, "distribution": `a string such as "normal"`,
	"rate": `a string such as "100mbit"`, "delay": `a string such as "40ms"`, "jitter": `a string such as "1ms"`,
	"slot": `a string such as "2ms"`, "slot_max": `a string such as "4ms"`,
	"limit": `an integer (packets)`, "slot_packets": `an integer`, "slot_bytes": `an integer`,
	"packet_overhead": `an integer (bytes)`, "ecn": `true or false`, "seed": `an integer`,
	"link": `a table [link]`, "up": `a table [up]`, "down": `a table [down]`,
}

func expectedFor(key string) string {
	if e, ok := expected[key]; ok {
		return e
	}
	if strings.Contains(key, "loss") || strings.Contains(key, "correlation") || key == "duplicate" ||
		key == "corrupt" || key == "reorder" {
		return `a string such as "1%"`
	}
	return "another type"
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// IsName reports whether s is a profile name (looked up in the profile
// directories) rather than a path.
func IsName(s string) bool {
	return nameRE.MatchString(s) && !strings.HasSuffix(s, ".toml")
}

// SearchDirs returns where profiles given by name are looked for, in order:
// $DILATED_NODE_PROFILES (colon-separated), netem-profiles/ of the source
// tree the executable was built in (../../netem-profiles relative to
// tools/bin/), /usr/local/share/dilated-node/netem-profiles,
// /usr/share/dilated-node/netem-profiles.
func SearchDirs() []string {
	var dirs []string
	if env := os.Getenv("DILATED_NODE_PROFILES"); env != "" {
		dirs = append(dirs, filepath.SplitList(env)...)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dirs = append(dirs, filepath.Join(filepath.Dir(exe), "..", "..", "netem-profiles"))
		}
	}
	return append(dirs, "/usr/local/share/dilated-node/netem-profiles", "/usr/share/dilated-node/netem-profiles")
}

// Load reads a profile given by name (searched in dirs) or by path (anything
// containing a slash or ending in .toml).
func Load(nameOrPath string, dirs []string) (*Profile, error) {
	path := nameOrPath
	if IsName(nameOrPath) {
		path = ""
		for _, d := range dirs {
			p := filepath.Join(d, nameOrPath+".toml")
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return nil, fmt.Errorf("profile %q not found in %s (known: %s)", nameOrPath,
				strings.Join(dirs, ", "), strings.Join(List(dirs), ", "))
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %v", err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".toml")
	return Parse(name, path, data)
}

// List returns the names of the profiles found in dirs (first wins).
func List(dirs []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "*.toml"))
		for _, f := range m {
			n := strings.TrimSuffix(filepath.Base(f), ".toml")
			if !seen[n] && IsName(n) {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

var intKeys = map[string]bool{"limit": true, "slot_packets": true, "slot_bytes": true, "packet_overhead": true}

// keyLines maps every key ("link.rate") and table ("link") to its line, and
// reports the first value of the wrong TOML type (the decoder hands numbers to
// text unmarshalers without a position).
func keyLines(path string, data []byte) (map[string]int, error) {
	var typeErr error
	lines := map[string]int{}
	p := unstable.Parser{}
	p.Reset(data)
	var table []string
	lineOf := func(n *unstable.Node) int {
		return bytes.Count(data[:n.Raw.Offset], []byte("\n")) + 1
	}
	keyOf := func(n *unstable.Node) ([]string, int) {
		var parts []string
		line := 0
		it := n.Key()
		for it.Next() {
			k := it.Node()
			parts = append(parts, string(k.Data))
			if line == 0 {
				line = lineOf(k)
			}
		}
		return parts, line
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			k, l := keyOf(e)
			table = k
			lines[strings.Join(k, ".")] = l
		case unstable.KeyValue:
			k, l := keyOf(e)
			full := append(append([]string{}, table...), k...)
			lines[strings.Join(full, ".")] = l
			last := full[len(full)-1]
			kind := e.Value().Kind
			ok := true
			switch {
			case len(full) == 1 && last != "description":
				ok = true // unknown or table-valued: left to the decoder
			case intKeys[last]:
				ok = kind == unstable.Integer
			case last == "ecn":
				ok = kind == unstable.Bool
			case len(full) == 1 || strings.HasSuffix(expectedFor(last), `"`) || last == "description":
				ok = kind == unstable.String
			}
			if !ok && typeErr == nil {
				typeErr = fmt.Errorf("%s:%d: %s: wrong type, expected %s", path, l, strings.Join(full, "."), expectedFor(last))
			}
		}
	}
	return lines, typeErr
}

// Parse parses and validates a profile. path is used in error messages.
func Parse(name, path string, data []byte) (*Profile, error) {
	lines, typeErr := keyLines(path, data)
	var spec fileSpec
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		if typeErr != nil {
			return nil, typeErr
		}
		return nil, decodeError(path, err)
	}
	p := &Profile{Name: name, Path: path, lines: lines}
	at := func(key string) string {
		if l := lines[key]; l > 0 {
			return fmt.Sprintf("%s:%d", path, l)
		}
		return path + ":1"
	}
	if spec.Description == nil || strings.TrimSpace(*spec.Description) == "" {
		return nil, fmt.Errorf("%s: missing description = \"...\"", at("description"))
	}
	p.Description = *spec.Description
	if spec.Link == nil && (spec.Up == nil || spec.Down == nil) {
		return nil, fmt.Errorf("%s:1: a profile needs a [link] table (both directions), or both [up] and [down]", path)
	}
	for _, d := range []struct {
		name string
		spec *dirSpec
		dst  *scaling.Link
	}{{"down", spec.Down, &p.Down}, {"up", spec.Up, &p.Up}} {
		l, err := p.merge(d.name, spec.Link, d.spec)
		if err != nil {
			return nil, err
		}
		if err := l.Validate(); err != nil {
			var fe *scaling.FieldError
			if errors.As(err, &fe) {
				return nil, p.Errorf(d.name, fe.Field, "%s", fe.Msg)
			}
			return nil, fmt.Errorf("%s: [%s] %v", path, d.name, err)
		}
		*d.dst = l
	}
	return p, nil
}

func (p *Profile) merge(dir string, base, over *dirSpec) (scaling.Link, error) {
	var l scaling.Link
	var errOut error
	pick := func(field string, get func(*dirSpec) bool) string {
		// returns the table the field comes from ("" if unset)
		if over != nil && get(over) {
			return dir
		}
		if base != nil && get(base) {
			return "link"
		}
		return ""
	}
	src := func(s string) *dirSpec {
		if s == dir {
			return over
		}
		return base
	}
	intField := func(field string, get func(*dirSpec) *int64, min, max int64, set func(int64)) {
		t := pick(field, func(d *dirSpec) bool { return get(d) != nil })
		if t == "" || errOut != nil {
			return
		}
		v := *get(src(t))
		if v < min || v > max {
			line := p.lines[t+"."+field]
			errOut = fmt.Errorf("%s:%d: %s = %d out of range [%d, %d]", p.Path, line, field, v, min, max)
			return
		}
		set(v)
	}
	if t := pick("rate", func(d *dirSpec) bool { return d.Rate != nil }); t != "" {
		l.Rate = src(t).Rate.v
	}
	durs := []struct {
		f   string
		get func(*dirSpec) *durV
		dst *scaling.Duration
	}{
		{"delay", func(d *dirSpec) *durV { return d.Delay }, &l.Delay},
		{"jitter", func(d *dirSpec) *durV { return d.Jitter }, &l.Jitter},
		{"slot", func(d *dirSpec) *durV { return d.Slot }, &l.Slot},
		{"slot_max", func(d *dirSpec) *durV { return d.SlotMax }, &l.SlotMax},
	}
	for _, d := range durs {
		if t := pick(d.f, func(s *dirSpec) bool { return d.get(s) != nil }); t != "" {
			*d.dst = d.get(src(t)).v
		}
	}
	pcts := []struct {
		f   string
		get func(*dirSpec) *pctV
		dst *scaling.Percent
	}{
		{"delay_correlation", func(d *dirSpec) *pctV { return d.DelayCorrelation }, &l.DelayCorrelation},
		{"loss", func(d *dirSpec) *pctV { return d.Loss }, &l.Loss},
		{"loss_correlation", func(d *dirSpec) *pctV { return d.LossCorrelation }, &l.LossCorrelation},
		{"duplicate", func(d *dirSpec) *pctV { return d.Duplicate }, &l.Duplicate},
		{"duplicate_correlation", func(d *dirSpec) *pctV { return d.DuplicateCorrelation }, &l.DuplicateCorrelation},
		{"corrupt", func(d *dirSpec) *pctV { return d.Corrupt }, &l.Corrupt},
		{"corrupt_correlation", func(d *dirSpec) *pctV { return d.CorruptCorrelation }, &l.CorruptCorrelation},
		{"reorder", func(d *dirSpec) *pctV { return d.Reorder }, &l.Reorder},
		{"reorder_correlation", func(d *dirSpec) *pctV { return d.ReorderCorrelation }, &l.ReorderCorrelation},
	}
	for _, d := range pcts {
		if t := pick(d.f, func(s *dirSpec) bool { return d.get(s) != nil }); t != "" {
			*d.dst = d.get(src(t)).v
		}
	}
	intField("limit", func(d *dirSpec) *int64 { return d.Limit }, 1, 1<<31-1, func(v int64) { l.Limit = uint32(v) })
	intField("slot_packets", func(d *dirSpec) *int64 { return d.SlotPackets }, 1, 1<<31-1, func(v int64) { l.SlotPackets = uint32(v) })
	intField("slot_bytes", func(d *dirSpec) *int64 { return d.SlotBytes }, 1, 1<<31-1, func(v int64) { l.SlotBytes = uint32(v) })
	intField("packet_overhead", func(d *dirSpec) *int64 { return d.PacketOverhead }, -1<<15, 1<<15, func(v int64) { l.PacketOverhead = int32(v) })
	intField("seed", func(d *dirSpec) *int64 { return d.Seed }, 0, 1<<63-1, func(v int64) { s := uint64(v); l.Seed = &s })
	if t := pick("distribution", func(d *dirSpec) bool { return d.Distribution != nil }); t != "" {
		l.Distribution = *src(t).Distribution
	}
	if t := pick("ecn", func(d *dirSpec) bool { return d.ECN != nil }); t != "" {
		l.ECN = *src(t).ECN
	}
	return l, errOut
}

func decodeError(path string, err error) error {
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		e := se.Errors[0]
		row, _ := e.Position()
		return fmt.Errorf("%s:%d: unknown key %q", path, row, strings.Join(e.Key(), "."))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		key := de.Key()
		if strings.Contains(msg, "cannot decode TOML") || strings.Contains(msg, "cannot store") {
			last := ""
			if len(key) > 0 {
				last = key[len(key)-1]
			}
			msg = fmt.Sprintf("%s: wrong type, expected %s", strings.Join(key, "."), expectedFor(last))
		} else if len(key) > 0 && !strings.HasPrefix(msg, strings.Join(key, ".")) {
			msg = strings.Join(key, ".") + ": " + msg
		}
		return fmt.Errorf("%s:%d: %s", path, row, msg)
	}
	return fmt.Errorf("%s: %v", path, err)
}
