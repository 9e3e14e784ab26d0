package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// readTar returns the regular files and the directory names of a tar archive
// (in order, so that a test can see that parents come first).
func readTar(t *testing.T, r io.Reader) (map[string][]byte, map[string]int64, []string) {
	t.Helper()
	files, modes := map[string][]byte{}, map[string]int64{}
	var order []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, modes, order
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, h.Name)
		modes[h.Name] = h.Mode
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

func TestMkimageFiles(t *testing.T) {
	dir := t.TempDir()
	bb, gen := filepath.Join(dir, "busybox"), filepath.Join(dir, "gen")
	if err := os.WriteFile(bb, []byte("BB"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gen, []byte("GEN"), 0o750); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	files := []file{{gen, "/bin/tdf-fetch"}, {gen, "/opt/x/gen"}}
	if err := mkimage(out, "localhost/t:1", bb, files, []string{"/bin/sh"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch, _, _ := readTar(t, f)
	// index -> manifest -> the one layer
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(arch["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, arch["index.json"])
	}
	if got := index.Manifests[0].Annotations["io.containerd.image.name"]; got != "localhost/t:1" {
		t.Errorf("image name %q", got)
	}
	var man struct{ Layers []struct{ Digest string } }
	if err := json.Unmarshal(arch["blobs/sha256/"+index.Manifests[0].Digest[7:]], &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	layer, modes, order := readTar(t, bytes.NewReader(arch["blobs/sha256/"+man.Layers[0].Digest[7:]]))
	for name, want := range map[string]string{"bin/busybox": "BB", "bin/tdf-fetch": "GEN", "opt/x/gen": "GEN"} {
		if string(layer[name]) != want {
			t.Errorf("%s: %q, want %q", name, layer[name], want)
		}
	}
	if modes["opt/x/gen"] != 0o750 {
		t.Errorf("opt/x/gen mode %o, want 750 (the source's)", modes["opt/x/gen"])
	}
	seen := map[string]int{}
	for i, n := range order {
		seen[n]++
		if seen[n] > 1 {
			t.Errorf("%s twice in the layer", n)
		}
		if n == "opt/x/gen" && (seen["opt/"] != 1 || seen["opt/x/"] != 1 || i < 2) {
			t.Errorf("opt/x/gen before its parent directories: %v", order)
		}
	}
	if seen["bin/"] != 1 {
		t.Errorf("bin/ %d times", seen["bin/"])
	}
}

func TestParseFile(t *testing.T) {
	if f, err := parseFile("a/b:/bin/x"); err != nil || f.src != "a/b" || f.dst != "/bin/x" {
		t.Errorf("a/b:/bin/x: %+v %v", f, err)
	}
	for _, bad := range []string{"a", ":/x", "a:x", "a:/", "a:/x/../y", "a:/x/"} {
		if _, err := parseFile(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
