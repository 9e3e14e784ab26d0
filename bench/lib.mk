# SPDX-License-Identifier: GPL-2.0
# The C compiler and flags of every benchmark, included by bench/Makefile and
# bench/*/Makefile: CC and CFLAGS as the caller gives them (the same variables
# as selftests), -Wall -Wextra always, -Werror with WERROR=1.
CC ?= gcc
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif
