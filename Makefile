# Time-dilated containers: top-level entry points.
#
#   make demo           set up the host, build, boot, show a TDF-10 time namespace
#   make test           build everything, run all tests (host + one VM boot)
#   make build          kernel (build/linux) + helpers + selftests
#   make test-slow      the kernel's latency selftests again at TDF 3 (selftests/slow.list)
#   make test-debug     the series as a KASAN/lockdep/UBSAN kernel: every timens selftest
#   make bench          the benchmarks: the vDSO natively, then bench/ in the VM
#   make fidelity       the fidelity experiments, full runs, in the VM; report in
#                       build/vm-out/fidelity/report.md (FIDELITY_ARGS='--short disk')
#   make check-patches  checkpatch --strict + new W=1 warnings of kernel/patches
#   make setup          scripts/setup-host (apt packages, build/venv with vng)
#   make vm CMD='...'   run a command in the VM (empty CMD: interactive shell)
#   make clean          remove build outputs (keeps the extracted tree, venv, ccache)
#   make distclean      remove build/ entirely
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(ROOT)/build
KSRC := $(BUILD)/linux
HDRS := -isystem $(BUILD)/headers/include
# A Go toolchain that scripts/setup-host fetched (the one on PATH was too old)
export PATH := $(if $(wildcard $(BUILD)/go/bin/go),$(BUILD)/go/bin:)$(PATH)

.PHONY: all build setup kernel build-tools selftests test test-slow test-debug demo bench fidelity check-patches vm clean distclean

all: build

setup:
	@$(ROOT)/scripts/setup-host

kernel:
	@$(ROOT)/scripts/build-kernel

# Everything besides the kernel that the tests run: the dilate helper, the Go
# tool (tools/), the OCI hook (runtime-hooks/), unshare with --time-dilation
# (util-linux/), the whole-program test binaries (tests/programs/) and the
# in-VM benchmarks' programs (built here: compiling in the TCG guest is slow).
build-tools: $(BUILD)/bin/dilate
	$(MAKE) -s -C $(ROOT)/tools build
	$(MAKE) -s -C $(ROOT)/runtime-hooks build
	$(ROOT)/util-linux/build.sh
	$(MAKE) -s -C $(ROOT)/tests/programs build
	$(MAKE) -s -C $(ROOT)/fidelity build
	$(MAKE) -s -C $(ROOT)/bench/scale
	$(MAKE) -s -C $(ROOT)/bench/faketime

$(BUILD)/bin/dilate: $(ROOT)/scripts/dilate.c
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Wextra -o $@ $<

selftests: kernel
	@if [ -f $(ROOT)/selftests/Makefile ]; then \
		$(MAKE) -C $(ROOT)/selftests KSRC=$(KSRC) TDC_ROOT=$(ROOT) KHDR_INCLUDES="$(HDRS)"; fi

build: kernel build-tools selftests

test:
	@$(ROOT)/scripts/run-tests

demo: setup build
	@$(ROOT)/scripts/vm --timeout 300 -- $(ROOT)/scripts/demo

# The benchmarks, one run: the vDSO natively on this CPU (bench/vdso-native:
# the patched and the pristine vdso64.so on synthetic vvar pages), then in
# the VM the vDSO against libfaketime, N dilated namespaces and N dilated-node
# nodes (bench/run*, bench/scale/run, bench/scale/nodes: about 50 min in TCG),
# then TCP of the root namespace on the unpatched and the patched kernel
# (bench/tcp-undilated/run: builds the unpatched variant, boots each 3 times).
bench: build
	$(ROOT)/bench/vdso-native/run
	$(MAKE) -C $(ROOT)/bench KSRC=$(KSRC) TDC_ROOT=$(ROOT) KHDR_INCLUDES="$(HDRS)"
	@$(ROOT)/scripts/vm --timeout $${TDC_BENCH_TIMEOUT:-4200} -- $(MAKE) -C $(ROOT)/bench run TDC_ROOT=$(ROOT)
	$(ROOT)/bench/tcp-undilated/run

# Checks too slow for `make test` (and so for CI's 90 minutes): the kernel's
# latency selftests again at TDF 3 (selftests/slow.list), and the debug kernel
# (KASAN, lockdep, UBSAN: tests/debug/debug-kernel.t; its first build takes
# 20-40 min). Both print TAP and end with the usual summary line.
test-slow: build
	@rm -rf $(BUILD)/vm-out-slow
	@TDC_VM_OUT=$(BUILD)/vm-out-slow $(ROOT)/scripts/vm --timeout 3000 -- env \
		TDC_SELFTEST_LIST=$(ROOT)/selftests/slow.list TDC_FILTER='^selftest-' $(ROOT)/tests/guest/run-all
	@python3 $(ROOT)/tests/lib/tap.py summary $(BUILD)/vm-out-slow/results/*.tap

test-debug: build
	@mkdir -p $(BUILD)/test-debug
	@{ $(ROOT)/tests/debug/debug-kernel.t; echo $$? > $(BUILD)/test-debug/rc; } | tee $(BUILD)/test-debug/debug-kernel.log; \
	python3 $(ROOT)/tests/lib/tap.py normalize debug-kernel $$(cat $(BUILD)/test-debug/rc) $(BUILD)/test-debug/debug-kernel.log \
		> $(BUILD)/test-debug/debug-kernel.tap; \
	python3 $(ROOT)/tests/lib/tap.py summary $(BUILD)/test-debug/debug-kernel.tap

# Full runs take about 17 min under QEMU TCG for six experiments, and
# congestion-control about 105 min more, plus 5.6 h for its 10 Gbit/s pair
# at TDF 1000 (host time on any machine; FIDELITY_CC='fast=1000' leaves it
# out): hence the 9 h timeout. The test suite runs the short variants
# (tests/vm/fidelity.t).
FIDELITY_ARGS ?=
fidelity: build
	@rc=0; $(ROOT)/scripts/vm --timeout $${TDC_FIDELITY_TIMEOUT:-32400} -- \
		$(ROOT)/fidelity/run --out $(BUILD)/vm-out/fidelity $(FIDELITY_ARGS) || rc=$$?; \
	$(ROOT)/fidelity/run --report $(BUILD)/vm-out/fidelity && exit $$rc

check-patches: kernel
	@$(ROOT)/scripts/check-patches

vm:
	@$(ROOT)/scripts/vm -- $(CMD)

clean:
	rm -rf $(BUILD)/test-results $(BUILD)/vm-out $(BUILD)/bin $(BUILD)/headers $(BUILD)/check-patches
	@if [ -f $(KSRC)/Makefile ]; then $(MAKE) -s -C $(KSRC) clean; rm -f $(KSRC)/.tdc-config; fi
	@if [ -f $(ROOT)/selftests/Makefile ]; then $(MAKE) -C $(ROOT)/selftests clean || true; fi

distclean:
	rm -rf $(BUILD)
