#!/bin/bash
# A Java program in a dilated time namespace (TDF 10), run by
# tests/programs/bin/tdfrun: Thread.sleep, Object.wait(timeout) and
# LockSupport.parkNanos of 200 ms, measured with System.nanoTime (in
# [200, 400) ms; currentTimeMillis must agree), each phase 2 s of host time
# (tdfrun: in [1.999, 3.0] s).  Source: tests/programs/java/SleepProg.java,
# compiled on the host by make -C tests/programs build.  Skipped without
# root, the dilation interface, a JDK at build time or java in the VM.
# tdc-timeout: 180
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/programs/run.sh"
programs_init
if [ ! -f "$PBIN/java/SleepProg.class" ]; then
	skip_program java "SleepProg.class not built (no javac at build time, or make -C tests/programs build not run)"
elif ! command -v java >/dev/null; then
	skip_program java "no java"
else
	# a small, quick JVM: QEMU TCG makes startup slow (outside the timed phases)
	run_program java 10 120 java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
		-cp "$PBIN/java" SleepProg
fi
programs_finish
