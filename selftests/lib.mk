# SPDX-License-Identifier: GPL-2.0
# Rules shared by the project's selftest directories. A directory's Makefile
# sets TEST_GEN_PROGS (and, if it needs them, HDRS and LDLIBS) and includes
# this file; `make [KSRC=<kernel source tree>] [KHDR_INCLUDES=-isystem <uapi
# headers>] [WERROR=1]` then builds every program from its .c file, with
# kselftest.h from $(KSRC)/tools/testing/selftests (default KSRC: build/linux
# of this checkout) and the helpers shared by all directories from
# include/ next to this file.
KSRC ?= $(abspath $(CURDIR)/../../build/linux)
KSFT_DIR := $(KSRC)/tools/testing/selftests
SELFTESTS_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
SHARED_HDRS := $(wildcard $(SELFTESTS_DIR)/include/*.h)

CC ?= gcc
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -pthread -I$(KSFT_DIR) -I$(SELFTESTS_DIR)/include $(KHDR_INCLUDES)
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif

all: $(TEST_GEN_PROGS)

$(KSFT_DIR)/kselftest.h:
	@echo "error: no kselftest.h under $(KSFT_DIR): pass KSRC=<kernel source tree>" >&2; exit 1

%: %.c $(HDRS) $(SHARED_HDRS) $(KSFT_DIR)/kselftest.h
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

clean:
	rm -f $(TEST_GEN_PROGS)

.PHONY: all clean
