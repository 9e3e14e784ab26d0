package tdfhook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

const ann = `"annotations":{"` + KeyTDF + `":"10"}`

func TestPrecreate(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string // want "" = unchanged
	}{
		{name: "no annotation",
			in: `{"ociVersion":"1.0.0","linux":{"namespaces":[{"type":"pid"}]}}`},
		{name: "other annotations only",
			in: `{"annotations":{"org.example":"1","` + KeyCPUs + `":"2"},"linux":{"namespaces":[]}}`},
		{name: "append",
			in:   `{` + ann + `,"linux":{"namespaces":[{"type":"pid"},{"type":"mount"}],"x":1}}`,
			want: `{` + ann + `,"linux":{"namespaces":[{"type":"pid"},{"type":"mount"},{"type":"time"}],"x":1}}`},
		{name: "pretty printed (runc spec style)",
			in:   "{\n\t" + ann + ",\n\t\"linux\": {\n\t\t\"namespaces\": [\n\t\t\t{\"type\": \"pid\"}\n\t\t]\n\t}\n}\n",
			want: "{\n\t" + ann + ",\n\t\"linux\": {\n\t\t\"namespaces\": [\n\t\t\t{\"type\": \"pid\"}\n\t\t,{\"type\":\"time\"}]\n\t}\n}\n"},
		{name: "empty list",
			in:   `{` + ann + `,"linux":{"namespaces":[ ]}}`,
			want: `{` + ann + `,"linux":{"namespaces":[ {"type":"time"}]}}`},
		{name: "null list",
			in:   `{` + ann + `,"linux":{"namespaces":null,"y":2}}`,
			want: `{` + ann + `,"linux":{"namespaces":[{"type":"time"}],"y":2}}`},
		{name: "no namespaces key",
			in:   `{` + ann + `,"linux":{"y":2}}`,
			want: `{` + ann + `,"linux":{"namespaces":[{"type":"time"}],"y":2}}`},
		{name: "empty linux",
			in:   `{` + ann + `,"linux":{}}`,
			want: `{` + ann + `,"linux":{"namespaces":[{"type":"time"}]}}`},
		{name: "null linux",
			in:   `{` + ann + `,"linux":null}`,
			want: `{` + ann + `,"linux":{"namespaces":[{"type":"time"}]}}`},
		{name: "no linux",
			in:   `{` + ann + `}`,
			want: `{"linux":{"namespaces":[{"type":"time"}]},` + ann + `}`},
		{name: "already there",
			in: `{` + ann + `,"linux":{"namespaces":[{"type":"time"},{"type":"pid"}]}}`},
		{name: "joined by path: left to createRuntime to refuse",
			in: `{` + ann + `,"linux":{"namespaces":[{"type":"time","path":"/proc/1/ns/time"}]}}`},
		{name: "keys named linux/namespaces elsewhere are not touched",
			in:   `{"process":{"linux":{"namespaces":[]}},"annotations":{"` + KeyTDF + `":"2","namespaces":"x"},"linux":{"sub":{"namespaces":[]},"namespaces":[{"type":"uts"}]}}`,
			want: `{"process":{"linux":{"namespaces":[]}},"annotations":{"` + KeyTDF + `":"2","namespaces":"x"},"linux":{"sub":{"namespaces":[]},"namespaces":[{"type":"uts"},{"type":"time"}]}}`},
		{name: "odd characters survive byte for byte",
			in:   `{` + ann + `,"process":{"env":["A=<&>\u00e9é\"x"]},"linux":{"namespaces":[{"type":"pid"}],"f":1.50e3}}`,
			want: `{` + ann + `,"process":{"env":["A=<&>\u00e9é\"x"]},"linux":{"namespaces":[{"type":"pid"},{"type":"time"}],"f":1.50e3}}`},
		{name: "invalid JSON", in: `{` + ann + `,"linux":{`, err: "not valid JSON"},
		{name: "a state instead of a config", in: `{"ociVersion":"1.0.2","id":"c","status":"creating","pid":4,"bundle":"/b"}`,
			err: "stdin holds an OCI state"},
		{name: "linux not an object", in: `{` + ann + `,"linux":[1]}`, err: "linux is not an object"},
		{name: "namespaces not a list", in: `{` + ann + `,"linux":{"namespaces":{}}}`, err: "linux.namespaces is not an array"},
	} {
		got, err := Precreate([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: output is not valid JSON: %s", tc.name, got)
		}
	}
}

// A config as podman marshals it: after the filter it decodes to the same
// spec plus the time namespace, and CheckSpec accepts it.
func TestPrecreateRoundTrip(t *testing.T) {
	q := int64(5000)
	in := specs.Spec{
		Version:     "1.0.2-dev",
		Process:     &specs.Process{Args: []string{"sh", "-c", "echo <&>"}, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:        &specs.Root{Path: "/var/lib/x/rootfs", Readonly: true},
		Hostname:    "c1",
		Mounts:      []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Annotations: map[string]string{KeyTDF: "10", "org.opencontainers.image.stopSignal": "15"},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace},
				{Type: specs.NetworkNamespace, Path: "/run/netns/x"}},
			Resources:   &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &q}},
			MaskedPaths: []string{"/proc/kcore"},
		},
	}
	raw, err := json.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Precreate(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out specs.Spec
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	want := in
	wl := *in.Linux
	wl.Namespaces = append(append([]specs.LinuxNamespace{}, in.Linux.Namespaces...), specs.LinuxNamespace{Type: specs.TimeNamespace})
	want.Linux = &wl
	if !reflect.DeepEqual(&out, &want) {
		t.Errorf("round trip:\n got %s\nwant spec plus the time namespace", got)
	}
	if err := CheckSpec(&out, Settings{Enabled: true}); err != nil {
		t.Errorf("CheckSpec after precreate: %v", err)
	}
	// idempotent: a second pass (two hooks.d files, a re-run) changes nothing
	again, err := Precreate(got)
	if err != nil || string(again) != string(got) {
		t.Errorf("second pass changed the config: %v\n%s", err, again)
	}
}
