#!/bin/bash
# util-linux/build.sh: build util-linux's unshare(1) with our patches
# (util-linux/patches/*.patch, --time-dilation) and install it at
# build/bin/unshare. The system's /usr/bin/unshare is not touched.
#
# Idempotent; each step is skipped when its result is already there:
#   1. source: Debian bookworm's util-linux 2.38.1 (apt-get source; a deb-src
#      entry mirroring the deb one is added when apt has none), unpacked
#      with the Debian patches applied into build/util-linux-src/ and
#      committed there as a git repository (tag "pristine");
#   2. patches: git am util-linux/patches/*.patch onto "pristine" (branch
#      tdc-build), redone whenever the patch files change (local edits
#      in build/util-linux-src/ are discarded then);
#   3. build: out of tree in build/util-linux-obj/ with
#      ./configure --disable-all-programs --enable-unshare, make unshare;
#   4. install: build/bin/unshare.
# The log is build/util-linux-build.log; on failure its tail is shown.
#
# Needs: root (only to add the deb-src entry and apt-get update), dpkg-dev,
# gcc, make. No autotools: the configure script from the release tarball
# is used (the Debian patches touch configure.ac only for programs we
# do not build).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
PATCHES=$ROOT/util-linux/patches
SRCTOP=$BUILD/util-linux-src
VERSION=2.38.1
SRC=$SRCTOP/util-linux-$VERSION
OBJ=$BUILD/util-linux-obj
BIN=$BUILD/bin/unshare
LOG=$BUILD/util-linux-build.log
CONFIGURE_ARGS=(--disable-all-programs --enable-unshare --disable-nls
	--disable-shared --disable-bash-completion --disable-asciidoc
	--disable-poman --without-python --without-systemd --without-udev
	--without-selinux --without-audit --without-readline --without-ncursesw
	--without-ncurses --without-tinfo --without-cap-ng --without-btrfs
	--without-libz --without-libmagic --without-econf)

STEP=start
fail() {
	echo "util-linux/build.sh: FAILED ($STEP): $*" >&2
	if [ -s "$LOG" ]; then
		echo "--- last lines of $LOG:" >&2
		tail -n 25 "$LOG" >&2
	fi
	exit 1
}
trap 'fail "command failed (line $LINENO)"' ERR
say() { echo "util-linux/build.sh: $*"; }
log() { "$@" >>"$LOG" 2>&1; }
# git with a fallback identity when none is configured (commits stay local)
g() {
	git -C "$SRC" -c user.name="$(git config user.name || echo tdc-build)" \
		-c user.email="$(git config user.email || echo tdc-build@localhost)" \
		-c advice.detachedHead=false "$@"
}

start=$(date +%s.%N)
mkdir -p "$BUILD/bin"
: >"$LOG"
for t in gcc make git dpkg-source apt-get; do
	command -v $t >/dev/null || fail "$t not found (apt-get install build-essential git dpkg-dev)"
done
[ -d "$PATCHES" ] && ls "$PATCHES"/*.patch >/dev/null 2>&1 || fail "no patches in $PATCHES"

# --- 1. source -------------------------------------------------------------
have_deb_src() {
	grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list ||
		grep -Eqs '^Types:.*\bdeb-src\b' /etc/apt/sources.list.d/*.sources
}
add_deb_src() {
	local f=/etc/apt/sources.list.d/tdc-deb-src
	[ "$(id -u)" = 0 ] || fail "apt has no deb-src entry; as root, run this script once (it adds $f.sources)"
	if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
		# deb822: copy the stanzas whose Types include deb, as deb-src
		cat /etc/apt/sources.list.d/*.sources |
			awk 'BEGIN { RS = ""; ORS = "\n\n" }
				/(^|\n)Types:[^\n]*deb/ && /(^|\n)URIs:[^\n]*debian/ {
					sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print
				}' >"$f.sources"
	else
		sed -n '/debian/s/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$f.list"
	fi
	say "added a deb-src entry ($f.*), running apt-get update"
	log apt-get update || fail "apt-get update failed"
}

if ! git -C "$SRC" rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
	STEP=source
	mkdir -p "$SRCTOP"
	dsc=$(ls "$SRCTOP"/util-linux_"$VERSION"-*.dsc 2>/dev/null | tail -1 || true)
	if [ -z "$dsc" ]; then
		have_deb_src || add_deb_src
		say "fetching the util-linux source package (apt-get source)"
		(cd "$SRCTOP" && log apt-get source --download-only util-linux) ||
			fail "apt-get source util-linux failed (network? deb-src entry?)"
		dsc=$(ls "$SRCTOP"/util-linux_"$VERSION"-*.dsc 2>/dev/null | tail -1 || true)
		[ -n "$dsc" ] || fail "apt-get source did not fetch util-linux $VERSION (got: $(cd "$SRCTOP" && ls util-linux_*.dsc 2>/dev/null))"
	fi
	rm -rf "$SRC"
	(cd "$SRCTOP" && log dpkg-source -x "$dsc" "$SRC") || fail "dpkg-source -x $dsc failed"
	git -C "$SRC" init -q
	echo /.pc/ >>"$SRC/.git/info/exclude"
	g add -A
	g commit -q -m "util-linux $(basename "$dsc" .dsc | sed 's/^util-linux_//') (Debian source, debian/patches applied)"
	g tag pristine
	rm -rf "$OBJ"
fi

# --- 2. patches ------------------------------------------------------------
STEP=patches
stamp=$(cat "$PATCHES"/*.patch | sha256sum | cut -d' ' -f1)
if [ "$(cat "$SRC/.git/tdc-patches" 2>/dev/null)" != "$stamp" ] ||
	[ "$(g symbolic-ref -q --short HEAD)" != tdc-build ] ||
	[ -n "$(g status --porcelain --untracked-files=no)" ]; then
	g am --abort >/dev/null 2>&1 || true
	g checkout -q -f -B tdc-build pristine
	for p in "$PATCHES"/*.patch; do
		if ! log g am -q --whitespace=nowarn "$p"; then
			g am --abort >/dev/null 2>&1 || true
			fail "$(basename "$p") does not apply to util-linux $VERSION"
		fi
	done
	echo "$stamp" >"$SRC/.git/tdc-patches"
	say "applied $(ls "$PATCHES"/*.patch | wc -l) patch(es) onto util-linux $VERSION"
fi

# --- 3. build --------------------------------------------------------------
# We build with the configure script and Makefile.in files of the release
# tarball and have no autotools. The Debian patches modify configure.ac
# (for a program we do not build), and unpacking or git may leave inputs
# newer than the generated files: make them older again, so that make never
# wants to rerun aclocal/autoconf/automake. Our own patches must not need
# the autotools.
STEP=autotools
if g diff --name-only pristine HEAD | grep -Eq '(^|/)(configure\.ac|[^/]*\.am|[^/]*\.m4)$'; then
	fail "the patches modify the build system (configure.ac, *.am or *.m4), which needs autoreconf; not supported"
fi
if [ -n "$(cd "$SRC" && find . -path ./.git -prune -o \( -name configure.ac -o -name '*.am' -o -name '*.m4' \) \
	-newer aclocal.m4 -print -quit)" ]; then
	(cd "$SRC" && touch aclocal.m4 && touch configure config.h.in &&
		find . -path ./.git -prune -o -name Makefile.in -exec touch {} +)
fi

STEP=configure
mkdir -p "$OBJ"
if [ ! -f "$OBJ/Makefile" ] || [ "$(cat "$OBJ/tdc-configure-args" 2>/dev/null)" != "${CONFIGURE_ARGS[*]}" ]; then
	(cd "$OBJ" && log "$SRC/configure" "${CONFIGURE_ARGS[@]}") || fail "configure failed"
	echo "${CONFIGURE_ARGS[*]}" >"$OBJ/tdc-configure-args"
fi
STEP="make"
log make -C "$OBJ" -j"$(nproc)" unshare || fail "make unshare failed"

# --- 4. install ------------------------------------------------------------
STEP=install
"$OBJ/unshare" --help 2>/dev/null | grep -q -- --time-dilation ||
	fail "the built unshare has no --time-dilation option"
install -m 0755 "$OBJ/unshare" "$BIN.tmp"
mv -f "$BIN.tmp" "$BIN"

say "built ${BIN#"$ROOT"/} ($("$BIN" --version)) in $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s"
