# SPDX-License-Identifier: GPL-2.0
# Rules shared by the project's selftest directories. A directory's Makefile
# sets TEST_GEN_PROGS (and, if it needs them, HDRS and LDLIBS) and includes
# this file; `make [KSRC=<kernel source tree>] [KHDR_INCLUDES=-isystem <uapi
# headers>] [WERROR=1]` then builds every program from its .c file, with
# kselftest.h from $(KSRC)/tools/testing/selftests (default KSRC: build/linux
# of this checkout).
KSRC ?= $(abspath $(CURDIR)/../../build/linux)
KSFT_DIR := $(KSRC)/tools/testing/selftests

CC ?= gcc
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -pthread -I$(KSFT_DIR) $(KHDR_INCLUDES)
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif

all: $(TEST_GEN_PROGS)

$(KSFT_DIR)/kselftest.h:
	@echo "error: no kselftest.h under $(KSFT_DIR): pass KSRC=<kernel source tree>" >&2; exit 1

%: %.c $(HDRS) $(KSFT_DIR)/kselftest.h
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

clean:
	rm -f $(TEST_GEN_PROGS)

.PHONY: all clean
