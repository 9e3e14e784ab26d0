#!/bin/bash
# Host test: which linux-source-6.12 versions scripts/build-kernel and
# scripts/setup-host take. Any 6.12.y is taken (the series says whether it
# applies); any other line is refused with one clear line, before anything in
# build/linux is touched.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib.sh
. "$ROOT/scripts/lib.sh"
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
n=0
point() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }
echo "TAP version 13"
echo "1..11"

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
