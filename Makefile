# sbxtop — the one build entry.  See README.md.
#
#   make                  build build/sbxtop (thin), build/sbxtop-core and build/sbxtop-agent
#   make run              install missing dependencies, build, start sbxtop
#   make test             the same, then every test (prints "N passed, N failed")
#   make bench            benchmarks, side by side with their peers
#   make SANITIZE=address,undefined test     the test suite under ASan/UBSan
#   make install PREFIX=/usr/local

PREFIX  ?= /usr/local
CC      ?= cc
PKGS     = libmicrohttpd libcjson libcurl libseccomp libarchive openssl nettle ncursesw libpcre2-8 \
           libssh2
PKG_CONFIG ?= pkg-config

# make agent-bundle ARCH=aarch64: the agent alone, cross-built with Debian's
# gcc-aarch64-linux-gnu against the arm64 libraries (scripts/deps.sh installs
# them), bundled in build/aarch64/agent-bundle for `sbxtop setup aws`.
ifeq ($(ARCH),aarch64)
CC         = aarch64-linux-gnu-gcc
PKG_CONFIG = PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
PKGS       = libmicrohttpd libcjson libarchive nettle
BUILD     ?= build/aarch64
endif

ifdef SANITIZE
BUILD   ?= build/san
SANFLAGS = -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD   ?= build
endif

WARN     = -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 -Wmissing-prototypes
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -D_GNU_SOURCE -I. $(SANFLAGS) \
           $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LDFLAGS += $(SANFLAGS)
LDLIBS  += $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lpthread -lutil

# Small utilities shared by sbxtop and the agent (DESIGN: agent/ shares only these).
UTIL_SRC  = $(wildcard lib/*.c)
AGENT_SRC = $(wildcard agent/*.c)
BACKEND_SRC = $(wildcard backends/*.c backends/*/*.c)
SBXTOP_SRC = $(wildcard core/*.c) $(BACKEND_SRC) \
             $(filter-out cli/thin.c,$(wildcard cli/*.c)) \
             $(wildcard mcp/*.c) $(wildcard server/*.c) $(wildcard tui/*.c)
# The thin sbxtop (cli/thin.c): the commands that are clients of the core server,
# linked without the core's libraries; it execs sbxtop-core for everything else.
THIN_CMDS = create ls exec cp logs status suspend resume destroy
THIN_SRC  = cli/thin.c cli/main.c cli/cmd.c $(patsubst %,cli/cmd-%.c,$(THIN_CMDS)) \
            core/client.c core/config.c core/paths.c core/sandbox.c \
            backends/backend-options.c $(wildcard backends/*/*-options.c)
THIN_LIBS = $(shell pkg-config --libs libcjson 2>/dev/null) -lpthread
UNIT_SRC  = $(wildcard tests/unit/*.c)
# The ns launcher on its own (launch/), for remote hosts: the same backend code.
LAUNCH_SRC = launch/main.c $(wildcard backends/ns/*.c) core/paths.c core/sandbox.c

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
UTIL_OBJ   = $(call obj,$(UTIL_SRC))
AGENT_OBJ  = $(call obj,$(AGENT_SRC))
SBXTOP_OBJ = $(call obj,$(SBXTOP_SRC))
LAUNCH_OBJ = $(call obj,$(LAUNCH_SRC))
THIN_OBJ   = $(call obj,$(THIN_SRC))
# Agent objects minus main(), for unit tests that exercise agent internals.
AGENT_LIB  = $(filter-out $(BUILD)/obj/agent/main.o,$(AGENT_OBJ))
CORE_LIB   = $(filter-out $(BUILD)/obj/cli/main-full.o,$(SBXTOP_OBJ))
UNIT_BIN   = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

all: $(BUILD)/sbxtop $(BUILD)/sbxtop-core $(BUILD)/sbxtop-agent $(BUILD)/sbxtop-launch

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/sbxtop-agent: $(AGENT_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sbxtop-core: $(SBXTOP_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Only the libraries it uses, since the bundle carries each one it links.
$(BUILD)/sbxtop-launch: $(LAUNCH_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libcjson libseccomp 2>/dev/null) -lpthread

$(BUILD)/sbxtop: $(THIN_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(THIN_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(AGENT_LIB) $(CORE_LIB) $(UTIL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

unit: $(UNIT_BIN)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The agent bundle: the binary plus the shared objects and loader it needs, so it
# runs in any rootfs (ns images, qemu guests, AWS MicroVM images).
# The ns launcher rides along, for remote hosts (backends/ssh/backend-ssh.c); the
# aarch64 bundle (setup aws) carries the agent alone.
BUNDLE_EXTRA = $(if $(filter aarch64,$(ARCH)),,$(BUILD)/sbxtop-launch)
agent-bundle: $(BUILD)/sbxtop-agent $(BUNDLE_EXTRA)
	LIBDIRS="$(if $(filter aarch64,$(ARCH)),/usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu)" \
	    scripts/agent-bundle.sh $(BUILD)/sbxtop-agent $(BUILD)/agent-bundle $(BUNDLE_EXTRA)

# Fuzz targets (libFuzzer) for the parsers of untrusted input, built with clang
# straight from the sources (gcc objects cannot carry the fuzzer instrumentation).
FUZZ_CC    ?= clang
FUZZ_SRC    = $(wildcard tests/fuzz/*.c)
FUZZ_BIN    = $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_DEPS   = $(UTIL_SRC) agent/path.c agent/state.c mcp/jsonrpc.c mcp/schema.c \
              backends/lambda/aws-xml.c
FUZZ_CFLAGS = -g -O1 -std=gnu11 $(WARN) -D_GNU_SOURCE -I. \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              $(shell pkg-config --cflags libcjson 2>/dev/null)

fuzz: $(FUZZ_BIN)

build/fuzz/%: tests/fuzz/%.c $(FUZZ_DEPS) $(wildcard lib/*.h core/*.h backends/*/*.h agent/*.h mcp/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_DEPS) \
	    $(shell pkg-config --libs libcjson 2>/dev/null) -lm -lpthread

deps:
	@scripts/deps.sh --check >/dev/null 2>&1 || scripts/deps.sh

run: deps all
	$(BUILD)/sbxtop

test: deps all unit agent-bundle
	@BUILD=$(BUILD) TEST_SKIP="$(TEST_SKIP)" tests/run.sh

bench: deps all agent-bundle
	@BUILD=$(BUILD) bench/run.sh

# The aarch64 bundle that `sbxtop setup aws` ships goes along when it was built.
install: all agent-bundle
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/sbxtop \
	           $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
	           $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 $(BUILD)/sbxtop $(BUILD)/sbxtop-agent $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/sbxtop-core $(DESTDIR)$(PREFIX)/lib/sbxtop/
	cp -a $(BUILD)/agent-bundle $(DESTDIR)$(PREFIX)/lib/sbxtop/
	if [ -d build/aarch64/agent-bundle ]; then rm -rf $(DESTDIR)$(PREFIX)/lib/sbxtop/agent-bundle-aarch64; \
		cp -a build/aarch64/agent-bundle $(DESTDIR)$(PREFIX)/lib/sbxtop/agent-bundle-aarch64; fi
	install -d $(DESTDIR)$(PREFIX)/share/sbxtop/themes
	install -m 0644 themes/*.theme $(DESTDIR)$(PREFIX)/share/sbxtop/themes/
	for m in man/*.[1-8]; do \
		install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/; done

clean:
	rm -rf build

.PHONY: all unit agent-bundle fuzz deps run test bench install clean
