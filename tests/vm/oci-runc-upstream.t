#!/bin/bash
# OCI: tdf-oci-hook (runtime-hooks/) as a createRuntime hook of an upstream
# runc >= 1.2.0 (the first with time namespaces), build/bin/runc from
# runtime-hooks/build-runc.sh (make build-tools): the annotation
# io.github.time-dilated-containers.tdf dilates the container's clocks (rate
# measured against the host), .tdf.cpus sets cpu.max; a bad TDF or a spec
# without a time namespace fails the start with one line and leaves no
# container. SKIPs when build/bin/runc was not built (no Go proxy), without
# busybox-static, jq or the built hook.
# tdc-timeout: 240
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
RT=$ROOT/build/bin/runc RT_HINT="build it: runtime-hooks/build-runc.sh; log in build/runc-build.log"
. "$ROOT/runtime-hooks/tests/oci-lib.sh"
