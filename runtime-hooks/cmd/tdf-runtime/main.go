// Command tdf-runtime is an OCI runtime wrapper for Kubernetes runtime
// handlers (containerd's runc shim option BinaryName, CRI-O's runtime_path):
// it is called with runc's command line, and for "create" and "run" of a
// bundle whose config.json carries the annotation
// io.github.time-dilated-containers.tdf it adds a time namespace and the
// tdf-oci-hook createRuntime hook to config.json (and reads a CPU limit as
// perceived CPUs), then execs the real runtime with the same arguments.
// Everything else passes through untouched. See runtime-hooks/README.md.
//
// Configuration (first found wins): the environment (TDF_RUNTIME: the real
// runtime, TDF_OCI_HOOK: the hook), the file $TDF_RUNTIME_CONFIG or
// /etc/tdf-runtime/config ("runtime = /usr/bin/runc", "hook = ..."), the
// defaults: runc from PATH, tdf-oci-hook next to this executable.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tdf-oci-hook/tdfhook"
	"tdf-oci-hook/tdfruntime"
)

const defaultConfig = "/etc/tdf-runtime/config"

func main() {
	args := os.Args[1:]
	inv := tdfruntime.ParseArgs(args)
	rt, err := setup(inv)
	if err == nil {
		err = syscall.Exec(rt, append([]string{rt}, args...), os.Environ())
		err = fmt.Errorf("exec %s: %v", rt, err)
	}
	fail(inv, err)
}

// setup finds the real runtime and, for create and run, rewrites config.json.
func setup(inv tdfruntime.Invocation) (string, error) {
	cfg, err := config()
	if err != nil {
		return "", err
	}
	rt, err := exec.LookPath(cfg.Runtime)
	if err != nil {
		return "", fmt.Errorf("real runtime %q: %v (set runtime in %s or TDF_RUNTIME)", cfg.Runtime, err, configPath())
	}
	if self, err := os.Executable(); err == nil {
		a, _ := filepath.EvalSymlinks(self)
		b, _ := filepath.EvalSymlinks(rt)
		if a != "" && a == b {
			return "", fmt.Errorf("the real runtime %s is tdf-runtime itself", rt)
		}
	}
	if inv.Command != "create" && inv.Command != "run" {
		return rt, nil
	}
	path := filepath.Join(inv.Bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	online := tdfhook.OnlineCPUs(readString("/sys/devices/system/cpu/online"))
	out, res, err := tdfruntime.Rewrite(data, cfg.Hook, online)
	if err != nil {
		return "", err
	}
	if res.Changed {
		st, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		tmp := path + ".tdf-runtime"
		if err := os.WriteFile(tmp, out, st.Mode().Perm()); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return "", err
		}
	}
	for _, n := range res.Notes {
		logLine(inv, "info", n)
	}
	return rt, nil
}

func configPath() string {
	if p := os.Getenv("TDF_RUNTIME_CONFIG"); p != "" {
		return p
	}
	return defaultConfig
}

func config() (tdfruntime.Config, error) {
	var cfg tdfruntime.Config
	p := configPath()
	data, err := os.ReadFile(p)
	switch {
	case err == nil:
		if cfg, err = tdfruntime.ParseConfig(string(data)); err != nil {
			return cfg, fmt.Errorf("%s: %v", p, err)
		}
	case !os.IsNotExist(err) || os.Getenv("TDF_RUNTIME_CONFIG") != "":
		return cfg, err
	}
	if v := os.Getenv("TDF_RUNTIME"); v != "" {
		cfg.Runtime = v
	}
	if v := os.Getenv("TDF_OCI_HOOK"); v != "" {
		cfg.Hook = v
	}
	if cfg.Runtime == "" {
		cfg.Runtime = "runc"
	}
	if cfg.Hook == "" {
		self, err := os.Executable()
		if err != nil {
			return cfg, err
		}
		cfg.Hook = filepath.Join(filepath.Dir(self), "tdf-oci-hook")
	}
	if !filepath.IsAbs(cfg.Hook) {
		return cfg, fmt.Errorf("hook path %q is not absolute", cfg.Hook)
	}
	return cfg, nil
}

func readString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// logLine appends to the runtime's --log file in its format: containerd's
// shim shows the last error of that file as the reason of a failed create.
func logLine(inv tdfruntime.Invocation, level, msg string) {
	if inv.Log == "" {
		return
	}
	f, err := os.OpenFile(inv.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if inv.LogFormat == "json" {
		b, _ := json.Marshal(map[string]string{"level": level, "msg": "tdf-runtime: " + msg, "time": now})
		fmt.Fprintf(f, "%s\n", b)
	} else {
		fmt.Fprintf(f, "time=%q level=%s msg=%q\n", now, level, "tdf-runtime: "+msg)
	}
}

func fail(inv tdfruntime.Invocation, err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	logLine(inv, "error", msg)
	fmt.Fprintf(os.Stderr, "tdf-runtime: %s\n", msg)
	os.Exit(1)
}
