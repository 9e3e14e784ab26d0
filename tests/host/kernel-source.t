#!/bin/bash
# Host test: which linux-source-6.12 versions scripts/build-kernel and
# scripts/setup-host take. Any 6.12.y is taken (the series says whether it
# applies); any other line is refused with one clear line, before anything in
# build/linux is touched. setup-host installs KPKG_TESTED when apt's lists
# have it (kernel_source_available).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib.sh
. "$ROOT/scripts/lib.sh"
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
n=0
point() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }
echo "TAP version 13"
echo "1..14"

for v in 6.12.117-1~deb12u1:6.12.117 6.12.130-1~deb12u1:6.12.130 6.12.9-1:6.12.9 6.12.117+tdc1:6.12.117 6.12.9-1~bpo12+1:6.12.9; do
	got=$(kernel_source_version "${v%%:*}"); rc=$?
	[ $rc = 0 ] && [ "$got" = "${v#*:}" ]; point $? "kernel_source_version ${v%%:*} = ${v#*:}"
done
for v in 6.13.1-1 6.1.158-1 6.12-1 6.12.x-1 ""; do
	got=$(kernel_source_version "$v"); rc=$?
	[ $rc != 0 ] && [ -z "$got" ]; point $? "kernel_source_version refuses '${v}'"
done

# build-kernel with a linux-source-6.12 that claims to be 6.13: one line, and
# build/linux untouched (dpkg-query is shimmed; nothing else is)
mkdir -p "$d/bin"
printf '#!/bin/sh\necho 6.13.2-1\n' > "$d/bin/dpkg-query"; chmod +x "$d/bin/dpkg-query"
before=$(stat -c %Y "$KSRC/.tdc-source" 2>/dev/null || echo none)
PATH="$d/bin:$PATH" "$ROOT/scripts/build-kernel" > "$d/out" 2>&1; rc=$?
after=$(stat -c %Y "$KSRC/.tdc-source" 2>/dev/null || echo none)
[ $rc != 0 ] && [ "$(wc -l < "$d/out")" = 1 ] && grep -q "6.13.2-1, not a 6.12.y kernel" "$d/out" &&
	[ "$before" = "$after" ]
point $? "build-kernel refuses linux-source-6.12 6.13.2-1 in one line, build/linux untouched"
sed 's/^/# /' "$d/out"

# kernel_source_available reads apt-cache madison's version column exactly
# (apt-cache is shimmed with two versions of the package)
cat > "$d/bin/apt-cache" <<'SHIM'
#!/bin/sh
[ "$1 $2" = "madison linux-source-6.12" ] || exit 1
echo "linux-source-6.12 | 6.12.119-1~deb12u1 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages"
echo "linux-source-6.12 | 6.12.118-1~deb12u1 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages"
SHIM
chmod +x "$d/bin/apt-cache"
PATH="$d/bin:$PATH" kernel_source_available 6.12.118-1~deb12u1
point $? "kernel_source_available finds 6.12.118-1~deb12u1 among two versions"
! PATH="$d/bin:$PATH" kernel_source_available 6.12.118-1
point $? "kernel_source_available does not take 6.12.118-1 for 6.12.118-1~deb12u1"
# the pin is a 6.12.y version, and KVER_TESTED is its upstream version
[ "$(kernel_source_version "$KPKG_TESTED")" = "$KVER_TESTED" ]
point $? "KPKG_TESTED ($KPKG_TESTED) is KVER_TESTED ($KVER_TESTED)"
