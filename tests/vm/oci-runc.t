#!/bin/bash
# OCI: tdf-oci-hook (runtime-hooks/) as a createRuntime hook of Debian's runc
# (/usr/sbin/runc, 1.1.5: no time namespaces, so the dilated checks SKIP and
# only the refusals run: a bad TDF or a spec without a time namespace fails
# the start with one line and leaves no container). The path is explicit:
# build/bin, first in the VM's PATH, may hold an upstream runc, which
# oci-runc-upstream.t tests. SKIPs without runc, busybox-static, jq or the
# built hook.
# tdc-timeout: 240
RT=/usr/sbin/runc RT_HINT="apt-get install runc"
. "${TDC_ROOT:-$(dirname "$0")/../..}/runtime-hooks/tests/oci-lib.sh"
