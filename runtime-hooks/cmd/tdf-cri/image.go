package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
	"time"
)

// applets linked to /bin/busybox in the image
var applets = []string{"sh", "cat", "echo", "sleep", "ls", "mkfifo", "true", "date"}

func digest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// file is an extra file of the image: a host file SRC copied to DST (a path
// in the image), e.g. a static load generator (tests/vm/cri-diecast.t).
type file struct{ src, dst string }

// parseFile reads "SRC:DST" (DST absolute, no "..": it names a path in the
// layer).
func parseFile(s string) (file, error) {
	src, dst, ok := strings.Cut(s, ":")
	clean := path.Clean(dst)
	if !ok || src == "" || !strings.HasPrefix(dst, "/") || clean == "/" || clean != dst {
		return file{}, fmt.Errorf("-f %q: want SRC:/DST (DST an absolute, clean path in the image)", s)
	}
	return file{src, dst}, nil
}

// mkimage writes an OCI image layout as a tar archive (what
// "ctr images import" reads): one layer with the static busybox, its applet
// links and the extra files, a config with cmd, and an index naming the
// image ref (the annotation io.containerd.image.name), so no registry is
// needed.
func mkimage(out, ref, busybox string, files []file, cmd []string) error {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	mtime := time.Unix(0, 0)
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	for _, d := range []string{"bin/", "proc/", "dev/", "sys/", "tmp/", "etc/", "ctl/"} {
		lw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime})
	}
	lw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb)), ModTime: mtime})
	lw.Write(bb)
	for _, a := range applets {
		lw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: mtime})
	}
	// the layer is applied in order: parent directories first, and only
	// those not in it yet (a second header would replace the first)
	dirs := map[string]bool{"bin": true, "proc": true, "dev": true, "sys": true, "tmp": true, "etc": true, "ctl": true}
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		st, err := os.Stat(f.src)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(f.dst, "/")
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if !dirs[d] {
				dirs[d] = true
				lw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime})
			}
		}
		lw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(st.Mode().Perm()), Size: int64(len(b)), ModTime: mtime})
		lw.Write(b)
	}
	if err := lw.Close(); err != nil {
		return err
	}
	lb := layer.Bytes()
	cfg, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config":  map[string]any{"Cmd": cmd, "Env": []string{"PATH=/bin"}},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digest(lb)}},
		"history": []any{map[string]any{"created_by": "tdf-cri mkimage"}},
		"created": mtime.UTC().Format(time.RFC3339),
	})
	desc := func(mt string, b []byte) map[string]any {
		return map[string]any{"mediaType": mt, "digest": digest(b), "size": len(b)}
	}
	man, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc("application/vnd.oci.image.config.v1+json", cfg),
		"layers": []any{desc("application/vnd.oci.image.layer.v1.tar", lb)},
	})
	md := desc("application/vnd.oci.image.manifest.v1+json", man)
	md["platform"] = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
	md["annotations"] = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []any{md}})

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	add := func(name string, b []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime})
		tw.Write(b)
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "blobs/", Mode: 0o755, ModTime: mtime})
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "blobs/sha256/", Mode: 0o755, ModTime: mtime})
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, b := range [][]byte{lb, cfg, man} {
		add("blobs/sha256/"+digest(b)[7:], b)
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
