package tdfruntime

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args                  []string
		cmd, bundle, log, fmt string
	}{
		// containerd's runc shim (go-runc)
		{[]string{"--root", "/run/containerd/runc/k8s.io", "--log", "/run/x/log.json", "--log-format", "json",
			"create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "abc"}, "create", "/run/b", "/run/x/log.json", "json"},
		// CRI-O (conmon) style, -b and --systemd-cgroup
		{[]string{"--systemd-cgroup", "--root=/run/runc", "create", "-b", "/b2", "--pid-file", "/p", "id"}, "create", "/b2", "", ""},
		{[]string{"run", "--bundle=/b3", "id"}, "run", "/b3", "", ""},
		{[]string{"run", "id"}, "run", "", "", ""},
		{[]string{"--log", "/l", "state", "id"}, "state", "", "/l", ""},
		{[]string{"delete", "--force", "id"}, "delete", "", "", ""},
		{[]string{"--version"}, "", "", "", ""},
		{nil, "", "", "", ""},
	} {
		inv := ParseArgs(c.args)
		if inv.Command != c.cmd || inv.Bundle != c.bundle || inv.Log != c.log || inv.LogFormat != c.fmt {
			t.Errorf("%q: got %+v", c.args, inv)
		}
	}
}

const plain = `{
  "ociVersion": "1.0.2-dev",   "process": {"args": ["sh"], "env": ["A=<&>"]},
  "annotations": {"io.kubernetes.cri.container-type": "container", "other.tdf": "x"},
  "linux": {"namespaces": [{"type": "pid"}, {"type": "network", "path": "/var/run/netns/cni-1"}],
            "resources": {"cpu": {"shares": 2, "quota": 50000, "period": 100000}}},
  "x-unknown": 1.50
}`

func TestRewritePassthrough(t *testing.T) {
	for _, in := range []string{plain, `{}`, `{"annotations":null}`, "{\"annotations\":{}}\n\n"} {
		out, res, err := Rewrite([]byte(in), "/h", 2)
		if err != nil || res.Changed || string(out) != in {
			t.Errorf("%q: changed=%v err=%v out=%q", in, res.Changed, err, out)
		}
	}
	if _, _, err := Rewrite([]byte(`[1]`), "/h", 2); err == nil {
		t.Errorf("non-object config accepted")
	}
}

func annotate(cfg string, kv string) string {
	return strings.Replace(cfg, `"other.tdf": "x"`, `"other.tdf": "x", `+kv, 1)
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("output not JSON: %v\n%s", err, b)
	}
	return m
}

func TestRewriteDilated(t *testing.T) {
	in := annotate(plain, `"io.github.time-dilated-containers.tdf": "10"`)
	out, res, err := Rewrite([]byte(in), "/usr/local/bin/tdf-oci-hook", 2)
	if err != nil || !res.Changed {
		t.Fatalf("err=%v res=%+v", err, res)
	}
	m := decode(t, out)
	linux := m["linux"].(map[string]any)
	ns := linux["namespaces"].([]any)
	if len(ns) != 3 || ns[2].(map[string]any)["type"] != "time" || ns[1].(map[string]any)["path"] != "/var/run/netns/cni-1" {
		t.Errorf("namespaces: %v", ns)
	}
	h := m["hooks"].(map[string]any)["createRuntime"].([]any)
	if len(h) != 1 || h[0].(map[string]any)["path"] != "/usr/local/bin/tdf-oci-hook" {
		t.Errorf("hooks: %v", h)
	}
	// 0.5 perceived CPUs (quota 50000/100000) at TDF 10: 0.05 real CPUs,
	// period raised to 20ms for the 1ms minimum quota
	cpu := linux["resources"].(map[string]any)["cpu"].(map[string]any)
	if cpu["quota"].(float64) != 1000 || cpu["period"].(float64) != 20000 || cpu["shares"].(float64) != 2 {
		t.Errorf("cpu: %v", cpu)
	}
	if !strings.Contains(string(out), `"A=<&>"`) || !strings.Contains(string(out), `"x-unknown":1.50`) {
		t.Errorf("other fields altered: %s", out)
	}
	// idempotent: a second pass adds nothing twice (the quota is scaled
	// again, so runtimes call the wrapper once per create)
	out2, _, err := Rewrite(out, "/usr/local/bin/tdf-oci-hook", 2)
	if err != nil {
		t.Fatal(err)
	}
	m2 := decode(t, out2)
	if n := len(m2["linux"].(map[string]any)["namespaces"].([]any)); n != 3 {
		t.Errorf("second pass: %d namespaces", n)
	}
	if n := len(m2["hooks"].(map[string]any)["createRuntime"].([]any)); n != 1 {
		t.Errorf("second pass: %d hooks", n)
	}
}

func TestRewriteMinimal(t *testing.T) {
	out, _, err := Rewrite([]byte(`{"annotations":{"io.github.time-dilated-containers.tdf":"2.5"},"linux":null}`), "/h", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"annotations":{"io.github.time-dilated-containers.tdf":"2.5"},"hooks":{"createRuntime":[{"args":["tdf-oci-hook"],"path":"/h","timeout":30}]},"linux":{"namespaces":[{"type":"time"}]}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	// a time namespace and our hook already present: nothing added, hooks of others kept
	in := `{"annotations":{"io.github.time-dilated-containers.tdf":"2"},"hooks":{"createRuntime":[{"path":"/other"}]},"linux":{"namespaces":[{"type":"time"}]}}`
	out, _, err = Rewrite([]byte(in), "/other", 1)
	if err != nil || string(out) != `{"annotations":{"io.github.time-dilated-containers.tdf":"2"},"hooks":{"createRuntime":[{"path":"/other"}]},"linux":{"namespaces":[{"type":"time"}]}}` {
		t.Errorf("err=%v out=%s", err, out)
	}
}

func TestRewriteErrors(t *testing.T) {
	for _, c := range []struct{ ann, want string }{
		{`"io.github.time-dilated-containers.tdf": "0"`, `annotation io.github.time-dilated-containers.tdf: invalid TDF "0": must lie in [1/1000, 1000]`},
		{`"io.github.time-dilated-containers.tdf.cpu": "2"`, `unknown annotation "io.github.time-dilated-containers.tdf.cpu"`},
		{`"io.github.time-dilated-containers.tdf.cpus": "2"`, `needs io.github.time-dilated-containers.tdf`},
		// the kubelet's CPU limit and the annotation: one only
		{`"io.github.time-dilated-containers.tdf": "10", "io.github.time-dilated-containers.tdf.cpus": "2"`, `conflicts with the container's CPU limit`},
	} {
		_, _, err := Rewrite([]byte(annotate(plain, c.ann)), "/h", 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.ann, err, c.want)
		}
	}
	// a limit that cannot be scaled: 30 perceived CPUs at TDF 10 on 2 CPUs
	in := strings.Replace(annotate(plain, `"io.github.time-dilated-containers.tdf": "10"`), `"quota": 50000`, `"quota": 3000000`, 1)
	if _, _, err := Rewrite([]byte(in), "/h", 2); err == nil || !strings.Contains(err.Error(), "read as perceived") {
		t.Errorf("30 CPUs: %v", err)
	}
}

func TestRewriteSandbox(t *testing.T) {
	in := strings.Replace(annotate(plain, `"io.github.time-dilated-containers.tdf": "10"`), `container-type": "container"`, `container-type": "sandbox"`, 1)
	out, res, err := Rewrite([]byte(in), "/h", 2)
	if err != nil || res.Changed || string(out) != in {
		t.Errorf("sandbox rewritten: err=%v %s", err, out)
	}
	// but its annotations are checked: a bad pod fails at RunPodSandbox
	bad := strings.Replace(in, `tdf": "10"`, `tdf": "ten"`, 1)
	if _, _, err := Rewrite([]byte(bad), "/h", 2); err == nil {
		t.Errorf("bad sandbox annotation accepted")
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("# comment\nruntime = /usr/bin/crun\n hook=\"/opt/tdf/tdf-oci-hook\"\n")
	if err != nil || c.Runtime != "/usr/bin/crun" || c.Hook != "/opt/tdf/tdf-oci-hook" {
		t.Errorf("%+v %v", c, err)
	}
	if _, err := ParseConfig("runtim = runc"); err == nil || !strings.Contains(err.Error(), `line 1: unknown key "runtim"`) {
		t.Errorf("typo: %v", err)
	}
}
