// Package tdfruntime is the logic of tdf-runtime, an OCI runtime wrapper (in
// the manner of GPU and sandbox runtime wrappers) that a containerd or CRI-O
// runtime handler calls instead of runc or crun. For a bundle whose
// config.json carries the annotation io.github.time-dilated-containers.tdf it
// adds a time namespace and the tdf-oci-hook createRuntime hook to the spec
// (and scales a CPU limit the kubelet set), then the real runtime runs with
// the same arguments. Every other bundle, and every other command, passes
// through byte for byte. Kubernetes' CRI has no time namespace option, so
// this is where the pod gets one.
package tdfruntime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"tdf-oci-hook/tdfhook"
	"tdfctl/scaling"
)

// Container types of a pod sandbox (the pause container) in the annotations
// of containerd's CRI plugin and of CRI-O.
var sandboxTypes = map[string]string{
	"io.kubernetes.cri.container-type":  "sandbox",
	"io.kubernetes.cri-o.ContainerType": "sandbox",
}

// globalValueFlags are the global options of runc and crun that take a value
// (as a separate argument unless written --opt=value).
var globalValueFlags = map[string]bool{
	"--root": true, "--log": true, "--log-format": true, "--criu": true,
	"--rootless": true, "--cgroup-manager": true,
}

// Invocation is what the wrapper needs to know of a runtime command line.
type Invocation struct {
	Command   string // "create", "run", "state", ... ("" if none)
	Bundle    string // --bundle/-b of create and run ("" = current directory)
	Log       string // global --log
	LogFormat string // global --log-format ("text" or "json")
}

// ParseArgs reads a runc/crun command line (without argv[0]). Only create and
// run look at a bundle; their bundle is --bundle DIR, -b DIR, --bundle=DIR or
// the current directory.
func ParseArgs(args []string) Invocation {
	var inv Invocation
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, val, eq := strings.Cut(a, "=")
		name = "--" + strings.TrimLeft(name, "-")
		if globalValueFlags[name] && !eq && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch name {
		case "--log":
			inv.Log = val
		case "--log-format":
			inv.LogFormat = val
		}
	}
	if i == len(args) {
		return inv
	}
	inv.Command = args[i]
	if inv.Command != "create" && inv.Command != "run" {
		return inv
	}
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			break
		}
		switch {
		case a == "--bundle" || a == "-b" || a == "-bundle":
			if j+1 < len(args) {
				inv.Bundle = args[j+1]
			}
			j++
		case strings.HasPrefix(a, "--bundle="), strings.HasPrefix(a, "-b="), strings.HasPrefix(a, "-bundle="):
			_, inv.Bundle, _ = strings.Cut(a, "=")
		}
	}
	return inv
}

// Result says what Rewrite did.
type Result struct {
	Changed bool     // config differs from the input
	Notes   []string // what was added or scaled, for the log
}

// Rewrite returns the config.json a dilated container needs. Without the TDF
// annotation (and no other key of ours) it returns config itself, unchanged
// (byte for byte: the caller then does not write the file). For an annotated
// bundle it validates the annotations with tdfhook.Parse (the hook's rules:
// a bad value fails here, with the same line, before anything is created),
// and then, unless the bundle is a pod sandbox (the pause container, which
// only sleeps; validated, not dilated):
//   - adds {"type":"time"} to linux.namespaces unless a time namespace is
//     listed,
//   - appends the createRuntime hook hookPath (unless a hook with that path
//     is there already),
//   - CPU: with the .cpus annotation the hook writes cpu.max (and a CPU quota
//     in the spec is an error, as for the hook); without it a quota in
//     linux.resources.cpu (the kubelet's translation of the container's CPU
//     limit) is read as PERCEIVED CPUs and replaced by its scaled value
//     (scaling.ScaleCPU: quota/period perceived CPUs, divided by the TDF).
//
// online is the number of online CPUs (for the cpu.max checks).
func Rewrite(config []byte, hookPath string, online int) ([]byte, Result, error) {
	var res Result
	var top map[string]json.RawMessage
	if err := json.Unmarshal(config, &top); err != nil {
		return nil, res, fmt.Errorf("config.json: %v", err)
	}
	var ann map[string]string
	if raw, ok := top["annotations"]; ok {
		if err := json.Unmarshal(raw, &ann); err != nil {
			return nil, res, fmt.Errorf("config.json: annotations: %v", err)
		}
	}
	ours := false
	for k := range ann {
		if k == tdfhook.KeyTDF || strings.HasPrefix(k, tdfhook.KeyTDF+".") {
			ours = true
		}
	}
	if !ours {
		return config, res, nil
	}
	set, err := tdfhook.Parse(ann, online)
	if err != nil {
		return nil, res, err
	}
	for k, v := range sandboxTypes {
		if ann[k] == v {
			res.Notes = append(res.Notes, "pod sandbox: annotations valid, not dilated")
			return config, res, nil
		}
	}

	// generic decoding (json.Number keeps every number's text): fields this
	// package does not know survive
	var spec map[string]any
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	if err := dec.Decode(&spec); err != nil {
		return nil, res, fmt.Errorf("config.json: %v", err)
	}
	linux, err := object(spec, "linux")
	if err != nil {
		return nil, res, err
	}
	nss, _ := linux["namespaces"].([]any)
	if v, ok := linux["namespaces"]; ok && v != nil && nss == nil {
		return nil, res, fmt.Errorf("config.json: linux.namespaces is not an array")
	}
	found := false
	for _, n := range nss {
		if m, ok := n.(map[string]any); ok && m["type"] == "time" {
			found = true
		}
	}
	if !found {
		linux["namespaces"] = append(nss, map[string]any{"type": "time"})
		res.Notes = append(res.Notes, "added a time namespace")
	}

	hooks, err := object(spec, "hooks")
	if err != nil {
		return nil, res, err
	}
	cr, _ := hooks["createRuntime"].([]any)
	if v, ok := hooks["createRuntime"]; ok && v != nil && cr == nil {
		return nil, res, fmt.Errorf("config.json: hooks.createRuntime is not an array")
	}
	have := false
	for _, h := range cr {
		if m, ok := h.(map[string]any); ok && m["path"] == hookPath {
			have = true
		}
	}
	if !have {
		hooks["createRuntime"] = append(cr, map[string]any{
			"path": hookPath, "args": []any{"tdf-oci-hook"}, "timeout": json.Number("30"),
		})
		res.Notes = append(res.Notes, "added the createRuntime hook "+hookPath)
	}

	if err := scaleQuota(linux, set, online, &res); err != nil {
		return nil, res, err
	}

	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(spec); err != nil {
		return nil, res, fmt.Errorf("config.json: %v", err)
	}
	res.Changed = true
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), res, nil
}

// object returns m[key] as an object, creating it when missing or null.
func object(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		o := map[string]any{}
		m[key] = o
		return o, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("config.json: %s is not an object", key)
	}
	return o, nil
}

// scaleQuota applies the CPU rule to linux.resources.cpu (see Rewrite).
func scaleQuota(linux map[string]any, set tdfhook.Settings, online int, res *Result) error {
	r, _ := linux["resources"].(map[string]any)
	c, _ := r["cpu"].(map[string]any)
	if c == nil {
		return nil
	}
	q, _ := c["quota"].(json.Number)
	qi, err := q.Int64()
	if q == "" || err != nil || qi <= 0 {
		return nil // no limit (absent, 0 or -1)
	}
	if set.CPU != nil {
		return fmt.Errorf("annotation %s conflicts with the container's CPU limit (linux.resources.cpu.quota %d); set only one: the limit is read as perceived CPUs", tdfhook.KeyCPUs, qi)
	}
	period := int64(100000) // the kernel's and the kubelet's default
	if p, ok := c["period"].(json.Number); ok {
		if pi, err := p.Int64(); err == nil && pi > 0 {
			period = pi
		}
	}
	perceived := big.NewRat(qi, period)
	cpu, _, err := scaling.ScaleCPU(perceived, set.TDF, set.TDF, online, 0)
	if err != nil {
		return fmt.Errorf("CPU limit %s CPUs (quota %d period %d) read as perceived: %v", perceived.FloatString(3), qi, period, err)
	}
	c["quota"] = json.Number(fmt.Sprint(cpu.QuotaUS))
	c["period"] = json.Number(fmt.Sprint(cpu.PeriodUS))
	res.Notes = append(res.Notes, fmt.Sprintf("CPU limit %s perceived CPUs at TDF %s: cpu.max %s (was %d %d)",
		perceived.FloatString(3), set.TDF, cpu.Line(), qi, period))
	return nil
}

// Config is the wrapper's configuration.
type Config struct {
	Runtime string // the real runtime (path or name in PATH)
	Hook    string // absolute path of tdf-oci-hook
}

// ParseConfig reads "key = value" lines (runtime, hook); # starts a comment.
func ParseConfig(data string) (Config, error) {
	var c Config
	for i, l := range strings.Split(data, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
		if !ok || v == "" {
			return c, fmt.Errorf("line %d: expected key = value", i+1)
		}
		switch k {
		case "runtime":
			c.Runtime = v
		case "hook":
			c.Hook = v
		default:
			known := []string{"hook", "runtime"}
			sort.Strings(known)
			return c, fmt.Errorf("line %d: unknown key %q (known: %s)", i+1, k, strings.Join(known, ", "))
		}
	}
	return c, nil
}
