#!/bin/bash
# OCI: tdf-oci-hook (runtime-hooks/) as a createRuntime hook of runc: the
# annotation io.github.time-dilated-containers.tdf dilates the container's
# clocks (rate measured against the host), .tdf.cpus sets cpu.max; a bad TDF
# or a spec without a time namespace fails the start with one line and leaves
# no container. SKIPs without runc, busybox-static, jq or the built hook.
# tdc-timeout: 240
RT=runc
. "${TDC_ROOT:-$(dirname "$0")/../..}/runtime-hooks/tests/oci-lib.sh"
