package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("TDF_RUNTIME_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestPassthrough runs tdf-runtime (this test binary, through TestMain) in front of a fake runtime
// that records its arguments and the bundle's config.json: an unannotated
// bundle reaches the runtime byte for byte, with the same arguments and
// stdin; an annotated one gets the time namespace; a bad one never reaches it.
func TestPassthrough(t *testing.T) {
	dir := t.TempDir()
	bin, err := os.Executable() // TestMain runs main() when asked to
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake-runc")
	rec := filepath.Join(dir, "rec")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + rec + ".args\ncat > " + rec + ".stdin\n" +
		"b=.; while [ $# -gt 0 ]; do [ \"$1\" = --bundle ] && b=$2; shift; done\ncp \"$b/config.json\" " + rec + ".config\nexit 7\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle")
	os.Mkdir(bundle, 0o755)
	logf := filepath.Join(dir, "log.json")
	empty := filepath.Join(dir, "empty.conf")
	os.WriteFile(empty, nil, 0o600)
	cfgEnv := "TDF_RUNTIME_CONFIG=" + empty
	run := func(cfg string) (int, string) {
		os.WriteFile(filepath.Join(bundle, "config.json"), []byte(cfg), 0o600)
		os.Remove(rec + ".config")
		cmd := exec.Command(bin, "--root", dir+"/root", "--log", logf, "--log-format", "json",
			"create", "--bundle", bundle, "--pid-file", dir+"/pid", "id 1")
		cmd.Env = append(os.Environ(), "TDF_RUNTIME_TEST_MAIN=1", "TDF_RUNTIME="+fake, "TDF_OCI_HOOK=/opt/hook", cfgEnv)
		cmd.Stdin = strings.NewReader("stdin bytes")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	// TDF_RUNTIME_CONFIG naming a missing file is an error
	cfgEnv = "TDF_RUNTIME_CONFIG=/nonexistent/x"
	if rc, errs := run("{}"); rc != 1 || !strings.Contains(errs, "tdf-runtime: open /nonexistent/x") {
		t.Errorf("missing config file: rc %d %q", rc, errs)
	}
	cfgEnv = "TDF_RUNTIME_CONFIG=" + empty

	plain := "{\"ociVersion\": \"1.2.0\",\n \"annotations\": {\"a\": \"b\"}, \"process\": {\"args\": [\"sh\"]}}\n"
	if rc, errs := run(plain); rc != 7 {
		t.Fatalf("exit status of the real runtime not passed on: %d %s", rc, errs)
	}
	args, _ := os.ReadFile(rec + ".args")
	wantArgs := strings.Join([]string{"--root", dir + "/root", "--log", logf, "--log-format", "json",
		"create", "--bundle", bundle, "--pid-file", dir + "/pid", "id 1"}, "\n") + "\n"
	if string(args) != wantArgs {
		t.Errorf("args: %q, want %q", args, wantArgs)
	}
	if got, _ := os.ReadFile(rec + ".stdin"); string(got) != "stdin bytes" {
		t.Errorf("stdin: %q", got)
	}
	if got, _ := os.ReadFile(rec + ".config"); string(got) != plain {
		t.Errorf("config.json not passed byte for byte: %q", got)
	}

	rc, _ := run(`{"annotations":{"io.github.time-dilated-containers.tdf":"10"},"linux":{"namespaces":[{"type":"pid"}]}}`)
	got, _ := os.ReadFile(rec + ".config")
	if rc != 7 || !strings.Contains(string(got), `{"type":"time"}`) || !strings.Contains(string(got), `"path":"/opt/hook"`) {
		t.Errorf("annotated: rc %d config %s", rc, got)
	}

	rc, errs := run(`{"annotations":{"io.github.time-dilated-containers.tdf":"0"}}`)
	want := `tdf-runtime: annotation io.github.time-dilated-containers.tdf: invalid TDF "0": must lie in [1/1000, 1000]`
	if _, err := os.Stat(rec + ".config"); rc != 1 || err == nil || strings.TrimSpace(errs) != want {
		t.Errorf("bad TDF: rc %d, stderr %q, runtime ran: %v", rc, errs, err == nil)
	}
	logged, _ := os.ReadFile(logf)
	if !strings.Contains(string(logged), `"level":"error","msg":"tdf-runtime: annotation io.github.time-dilated-containers.tdf: invalid TDF`) {
		t.Errorf("error not in the runtime log: %s", logged)
	}
}
