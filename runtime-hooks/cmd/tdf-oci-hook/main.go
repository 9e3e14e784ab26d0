// Command tdf-oci-hook is an OCI runtime hook (stage createRuntime) that
// dilates a container's time namespace when its config.json carries the
// annotation io.github.time-dilated-containers.tdf, and scales its cpu.max
// when io.github.time-dilated-containers.tdf.cpus is set too. See README.md.
//
// "tdf-oci-hook precreate" is podman's precreate stage instead (a runtime
// config filter): it reads the proposed config.json on stdin and prints it
// with {"type":"time"} added to linux.namespaces when the annotation is
// there, unchanged otherwise (podman 4.3 has no option for a time namespace).
//
// It reads the OCI state (ociVersion, id, pid, bundle, annotations) on stdin,
// loads BUNDLE/config.json, and writes the factor to /proc/PID/timens_dilation
// (PID's time namespace for children is the container's new time namespace;
// the kernel allows writes after tasks entered it). Without the annotation it
// exits 0 at once and touches nothing. Any error: one line on stderr, exit 1,
// and the runtime fails the container's creation.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tdf-oci-hook/tdfhook"
)

const usage = `usage: tdf-oci-hook < OCI-STATE                     (OCI createRuntime hook)
       tdf-oci-hook precreate < CONFIG > NEW-CONFIG  (podman precreate hook)
see runtime-hooks/README.md`

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help"):
		fmt.Println(usage)
		return
	case len(os.Args) == 2 && os.Args[1] == "precreate":
		err = precreate(os.Stdin, os.Stdout)
	case len(os.Args) > 1:
		// a hooks.d file with a wrong args list must not silently run
		// the other stage's code
		err = fmt.Errorf("unknown arguments %q (expected none, or precreate)", os.Args[1:])
	default:
		if err = checkFaultEnv(); err == nil {
			err = run(os.Stdin)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tdf-oci-hook: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
}

// precreate filters the config: nothing is written to stdout on error, so
// the engine fails the creation instead of using a truncated config.
func precreate(stdin io.Reader, stdout io.Writer) error {
	raw, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("reading the config on stdin: %v", err)
	}
	out, err := tdfhook.Precreate(raw)
	if err != nil {
		return err
	}
	if _, err := stdout.Write(out); err != nil {
		return fmt.Errorf("writing the config to stdout: %v", err)
	}
	return nil
}

func run(stdin io.Reader) error {
	raw, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("reading the OCI state on stdin: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("stdin is empty: expected the OCI state (run as a createRuntime hook; see --help)")
	}
	var st specs.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("the OCI state on stdin is not valid JSON: %v", err)
	}
	if st.Bundle == "" {
		if bytes.Contains(raw, []byte(`"process"`)) || bytes.Contains(raw, []byte(`"root"`)) {
			return fmt.Errorf("stdin holds a config.json, not an OCI state: for the precreate stage, run \"tdf-oci-hook precreate\"")
		}
		return fmt.Errorf("the OCI state on stdin has no bundle")
	}
	cfg, err := os.ReadFile(filepath.Join(st.Bundle, "config.json"))
	if err != nil {
		return fmt.Errorf("reading config.json: %v", err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(cfg, &spec); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(st.Bundle, "config.json"), err)
	}
	ann := tdfhook.Annotations(&spec, &st)
	if _, ok := ann[tdfhook.KeyTDF]; !ok {
		if _, ok := ann[tdfhook.KeyCPUs]; !ok {
			return nil // not ours: touch nothing
		}
	}
	online, _ := os.ReadFile("/sys/devices/system/cpu/online")
	s, err := tdfhook.Parse(ann, tdfhook.OnlineCPUs(string(online)))
	if err != nil || !s.Enabled {
		return err
	}
	if err := tdfhook.CheckSpec(&spec, s); err != nil {
		return err
	}
	if st.Pid <= 0 {
		return fmt.Errorf("the OCI state has no container pid (is the hook configured for createRuntime?)")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", st.Pid)); err != nil {
		return fmt.Errorf("the container's pid %d in the OCI state is not running", st.Pid)
	}
	for _, w := range s.Warn {
		fmt.Fprintf(os.Stderr, "tdf-oci-hook: warning: %s\n", w)
	}
	if err := faultAfter("state"); err != nil {
		return err
	}
	if s.CPU != nil {
		if err := setCPUMax(st.Pid, s.CPU.Line()); err != nil {
			return err
		}
		if err := faultAfter("cpu.max"); err != nil {
			return err
		}
	}
	if err := setTDF(st.Pid, s.TDF.Decimal(), s.TDF.String()); err != nil {
		return err
	}
	return faultAfter("tdf")
}

// faultEnv is for tests only (tests/vm/oci-faults.t): TDC_FAULT_AFTER=STEP
// makes the hook fail right after STEP (state: the OCI state and config.json
// read and checked; cpu.max: written; tdf: the factor written), STEP:kill
// makes it SIGKILL itself there. Either way the runtime must fail the
// container's creation and leave nothing behind. An unknown STEP is an error.
const faultEnv = "TDC_FAULT_AFTER"

var faultSteps = []string{"state", "cpu.max", "tdf"}

func checkFaultEnv() error {
	v := os.Getenv(faultEnv)
	if v == "" {
		return nil
	}
	step, mode, _ := strings.Cut(v, ":")
	if mode == "" || mode == "kill" {
		for _, s := range faultSteps {
			if s == step {
				return nil
			}
		}
	}
	return fmt.Errorf("%s=%s: unknown step (%s, optionally :kill; for tests only)", faultEnv, v, strings.Join(faultSteps, ", "))
}

func faultAfter(step string) error {
	s, mode, _ := strings.Cut(os.Getenv(faultEnv), ":")
	if s != step {
		return nil
	}
	if mode == "kill" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return fmt.Errorf("fault injected after step %s (%s, for tests)", step, faultEnv)
}

func setTDF(pid int, value, want string) error {
	p := fmt.Sprintf("/proc/%d/timens_dilation", pid)
	if _, err := os.Stat("/proc/self/timens_dilation"); err != nil {
		return fmt.Errorf("this kernel has no time dilation (/proc/self/timens_dilation missing; CONFIG_TIME_NS_DILATION)")
	}
	if err := os.WriteFile(p, []byte(value+"\n"), 0); err != nil {
		return fmt.Errorf("writing TDF %s to %s: %v", value, p, err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("reading back %s: %v", p, err)
	}
	if g := strings.TrimSpace(string(got)); g != want {
		return fmt.Errorf("%s reads %s after writing %s", p, g, value)
	}
	return nil
}

func setCPUMax(pid int, line string) error {
	pc, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return fmt.Errorf("reading the container's cgroup: %v", err)
	}
	cg, err := tdfhook.CgroupPath(string(pc))
	if err != nil {
		return err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("reading /proc/self/mountinfo: %v", err)
	}
	mnt, err := tdfhook.Cgroup2Mount(string(mi))
	if err != nil {
		return err
	}
	dir := filepath.Join(mnt, cg)
	if dir == mnt {
		return fmt.Errorf("the container is in the root cgroup; cannot set cpu.max there")
	}
	f := filepath.Join(dir, "cpu.max")
	if _, err := os.Stat(f); err != nil {
		return fmt.Errorf("%s missing: the cpu controller is not enabled for the container's cgroup", f)
	}
	if err := os.WriteFile(f, []byte(line+"\n"), 0); err != nil {
		return fmt.Errorf("writing %q to %s: %v", line, f, err)
	}
	return nil
}
