# shellcheck shell=bash
# Common helpers for scripts/*. Source it: . "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
KSRC=$BUILD/linux
VENV=$BUILD/venv
# A Go toolchain that scripts/setup-host fetched (the one on PATH was too old)
[ -x "$BUILD/go/bin/go" ] && export PATH="$BUILD/go/bin:$PATH"

# Versions. The series is for the 6.12 stable line as Debian 12 ships it.
# KPKG_TESTED is the linux-source-6.12 package the series was last tested on
# (the README's figures): scripts/setup-host installs that version while the
# archive serves it, so that a new Debian stable update does not change what
# a clean clone builds (on 2026-12-02 6.12.118 replaced 6.12.117, and patch 7
# no longer applied). Another 6.12.y, installed by hand or once the archive
# has dropped KPKG_TESTED, is used when the series applies to it, with a
# warning naming both.
KLINE=6.12
KPKG_TESTED=6.12.118-1~deb12u1
KVER_TESTED=6.12.118
KPKG=linux-source-6.12
KTARBALL=/usr/src/linux-source-6.12.tar.xz
VNG_VERSION=1.42

# kernel_source_version DEBIAN_VERSION: the upstream version (6.12.y) of a
# linux-source-6.12 package version such as 6.12.118-1~deb12u1; fails (prints
# nothing) for a version outside the KLINE stable line.
kernel_source_version() {
	local line=${KLINE//./\\.}

	[[ $1 =~ ^($line\.[0-9]+)([^0-9.]|$) ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

# kernel_source_available DEBIAN_VERSION: apt's package lists have
# linux-source-6.12 at that version (as of the last apt-get update).
kernel_source_available() {
	apt-cache madison "$KPKG" 2>/dev/null |
		awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | grep -qxF -- "$1"
}

die()  { echo "$(basename "$0"): error: $*" >&2; exit 1; }
warn() { echo "$(basename "$0"): warning: $*" >&2; }
info() { [ -n "${QUIET:-}" ] || echo "$(basename "$0"): $*" >&2; }

# Patches of the series, in order (nothing if kernel/patches is empty).
# TDC_PATCHES=DIR uses another directory (for testing the scripts).
series() {
	local p
	for p in "${TDC_PATCHES:-$ROOT/kernel/patches}"/*.patch; do
		[ -e "$p" ] && echo "$p"
	done
	return 0
}

# The identity of the series as applied to the source package: what
# scripts/build-kernel keeps in build/linux/.tdc-series to skip re-applying.
source_stamp() {
	echo "$KPKG $(dpkg-query -W -f='${Version}' "$KPKG" 2>/dev/null) $(stat -c '%s %Y' "$KTARBALL")"
}
series_stamp() {
	local p
	{ source_stamp; series | while IFS= read -r p; do sha256sum < "$p"; done; } |
		sha256sum | cut -c1-16
}

vng_bin() {
	if [ -x "$VENV/bin/vng" ]; then echo "$VENV/bin/vng"
	elif command -v vng >/dev/null; then command -v vng
	else die "virtme-ng not found: run scripts/setup-host (creates build/venv with virtme-ng==$VNG_VERSION)"
	fi
}

# config_survived CONFIG FRAGMENT: every line of the Kconfig fragment is in
# the .config (a "# CONFIG_X is not set" line: X is not =y/=m/=value);
# prints the lost lines
config_survived() {
	local cfg=$1 frag=$2 line sym val got bad=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) sym=${line%%=*}; val=${line#*=} ;;
		"# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}; val=n ;;
		*) continue ;;
		esac
		if [ "$val" = n ]; then
			got=$(grep -E "^$sym=" "$cfg" || true)
			[ -z "$got" ] && continue
		else
			grep -qxF "$sym=$val" "$cfg" && continue
			got=$(grep -E "^$sym=|^# $sym is not set" "$cfg" || echo "absent")
		fi
		echo "config: wanted '$line', got '$got'" >&2
		bad=1
	done < "$frag"
	return $bad
}
