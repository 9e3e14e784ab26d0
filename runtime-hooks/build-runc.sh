#!/bin/bash
# runtime-hooks/build-runc.sh: build an upstream runc into build/bin/runc, from
# the Go module proxy (go install github.com/opencontainers/runc@VERSION).
#
# Why: time namespaces (linux.namespaces type "time", linux.timeOffsets) came
# with runc 1.2.0; Debian 12's runc 1.1.5 has none, so the OCI hook can only
# refuse under it. tests/vm/oci-runc-upstream.t runs the dilated checks with
# this runc; tests/vm/oci-runc.t keeps testing Debian's /usr/sbin/runc.
#
# Optional: when the proxy cannot be reached or the build fails it prints
# one line saying so and exits 0; the tests that need build/bin/runc SKIP.
# Nothing is done when build/bin/runc already is that version (with seccomp
# when libseccomp-dev is installed). About 25 s with a warm module cache.
#
# seccomp: with libseccomp-dev (pkg-config libseccomp) runc is built with the
# "seccomp" tag; without it, runc refuses configs that have a seccomp
# section ("config provided but seccomp not supported"), such as podman's
# default, but not the OCI tests' configs ("runc spec" has none).
#
# Environment: TDC_RUNC_VERSION (default below), GO (default go).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${TDC_RUNC_VERSION:-v1.3.6}
BIN=$ROOT/build/bin/runc
LOG=$ROOT/build/runc-build.log
GO=${GO:-go}
say() { echo "runtime-hooks/build-runc.sh: $*"; }
skip() {
	say "skipped, build/bin/runc not (re)built: $* (tests/vm/oci-runc-upstream.t SKIPs without it)"
	exit 0
}

tags=() seccomp=
if pkg-config --exists libseccomp 2>/dev/null; then tags=(-tags seccomp); seccomp=1; fi
if [ -x "$BIN" ]; then
	v=$("$BIN" --version 2>/dev/null || true)
	if grep -qx "runc version ${VERSION#v}" <<<"$v" && { [ -z "$seccomp" ] || grep -q '^libseccomp:' <<<"$v"; }; then
		exit 0
	fi
fi
command -v "$GO" >/dev/null || skip "$GO not found"
command -v gcc >/dev/null || skip "gcc not found (runc's nsenter needs cgo)"

mkdir -p "$ROOT/build/bin"
: >"$LOG"
tmp=$(mktemp -d "$ROOT/build/runc-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# download first, so that an unreachable proxy reads as such and not as a build error
if ! timeout 300 "$GO" mod download "github.com/opencontainers/runc@$VERSION" >>"$LOG" 2>&1; then
	skip "cannot download runc $VERSION (GOPROXY=$("$GO" env GOPROXY)): $(tail -1 "$LOG")"
fi
start=$(date +%s)
# go install pkg@version builds outside any module: go.mod of this checkout plays no part
if ! GOBIN=$tmp CGO_ENABLED=1 timeout 600 \
	"$GO" install -trimpath "${tags[@]}" "github.com/opencontainers/runc@$VERSION" >>"$LOG" 2>&1; then
	skip "go install runc@$VERSION failed: $(tail -1 "$LOG") (build/runc-build.log)"
fi
"$tmp/runc" features 2>/dev/null | grep -q '"time"' || skip "runc $VERSION lists no time namespace in \"runc features\""
mv "$tmp/runc" "$BIN"
say "build/bin/runc: runc ${VERSION#v}${seccomp:+ with seccomp}${seccomp:- without seccomp (no libseccomp-dev)}, $(($(date +%s) - start)) s"
