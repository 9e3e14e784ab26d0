package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"
)

// applets linked to /bin/busybox in the image
var applets = []string{"sh", "cat", "echo", "sleep", "ls", "mkfifo", "true", "date"}

func digest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// mkimage writes an OCI image layout as a tar archive (what
// "ctr images import" reads): one layer with the static busybox and its
// applet links, a config with cmd, and an index naming the image ref (the
// annotation io.containerd.image.name), so no registry is needed.
func mkimage(out, ref, busybox string, cmd []string) error {
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
