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
PKGS     = libmicrohttpd libcjson libcurl libseccomp libarchive openssl nettle ncursesw libpcre2-8

ifdef SANITIZE
BUILD   ?= build/san
SANFLAGS = -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD   ?= build
endif

WARN     = -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 -Wmissing-prototypes
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -D_GNU_SOURCE -I. $(SANFLAGS) \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDFLAGS += $(SANFLAGS)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lutil

# Small utilities shared by sbxtop and the agent (DESIGN: agent/ shares only these).
UTIL_SRC  = core/util.c core/log.c core/buf.c core/b64.c core/utf8.c core/jspec.c
AGENT_SRC = $(wildcard agent/*.c)
SBXTOP_SRC = $(filter-out $(UTIL_SRC),$(wildcard core/*.c)) \
             $(filter-out cli/thin.c,$(wildcard cli/*.c)) \
             $(wildcard mcp/*.c) $(wildcard server/*.c) $(wildcard tui/*.c)
# The thin sbxtop (cli/thin.c): the commands that are clients of the core server,
# linked without the core's libraries; it execs sbxtop-core for everything else.
THIN_CMDS = create ls exec cp logs status suspend resume destroy
THIN_SRC  = cli/thin.c cli/main.c cli/cmd.c $(patsubst %,cli/cmd-%.c,$(THIN_CMDS)) \
            core/client.c core/config.c core/paths.c core/err.c core/sandbox.c
THIN_LIBS = $(shell pkg-config --libs libcjson 2>/dev/null) -lpthread
UNIT_SRC  = $(wildcard tests/unit/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
UTIL_OBJ   = $(call obj,$(UTIL_SRC))
AGENT_OBJ  = $(call obj,$(AGENT_SRC))
SBXTOP_OBJ = $(call obj,$(SBXTOP_SRC))
THIN_OBJ   = $(call obj,$(THIN_SRC))
# Agent objects minus main(), for unit tests that exercise agent internals.
AGENT_LIB  = $(filter-out $(BUILD)/obj/agent/main.o,$(AGENT_OBJ))
CORE_LIB   = $(filter-out $(BUILD)/obj/cli/main-full.o,$(SBXTOP_OBJ))
UNIT_BIN   = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

all: $(BUILD)/sbxtop $(BUILD)/sbxtop-core $(BUILD)/sbxtop-agent

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/sbxtop-agent: $(AGENT_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sbxtop-core: $(SBXTOP_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sbxtop: $(THIN_OBJ) $(UTIL_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(THIN_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(AGENT_LIB) $(CORE_LIB) $(UTIL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

unit: $(UNIT_BIN)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The agent bundle: the binary plus the shared objects and loader it needs, so it
# runs in any rootfs (ns images, qemu guests, AWS MicroVM images).
agent-bundle: $(BUILD)/sbxtop-agent
	scripts/agent-bundle.sh $(BUILD)/sbxtop-agent $(BUILD)/agent-bundle

# Fuzz targets (libFuzzer) for the parsers of untrusted input, built with clang
# straight from the sources (gcc objects cannot carry the fuzzer instrumentation).
FUZZ_CC    ?= clang
FUZZ_SRC    = $(wildcard tests/fuzz/*.c)
FUZZ_BIN    = $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_DEPS   = $(UTIL_SRC) agent/path.c agent/state.c mcp/jsonrpc.c mcp/schema.c
FUZZ_CFLAGS = -g -O1 -std=gnu11 $(WARN) -D_GNU_SOURCE -I. \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              $(shell pkg-config --cflags libcjson 2>/dev/null)

fuzz: $(FUZZ_BIN)

build/fuzz/%: tests/fuzz/%.c $(FUZZ_DEPS) $(wildcard core/*.h agent/*.h mcp/*.h)
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

install: all agent-bundle
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/sbxtop \
	           $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
	           $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 $(BUILD)/sbxtop $(BUILD)/sbxtop-agent $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/sbxtop-core $(DESTDIR)$(PREFIX)/lib/sbxtop/
	cp -a $(BUILD)/agent-bundle $(DESTDIR)$(PREFIX)/lib/sbxtop/
	install -d $(DESTDIR)$(PREFIX)/share/sbxtop/themes
	install -m 0644 themes/*.theme $(DESTDIR)$(PREFIX)/share/sbxtop/themes/
	for m in man/*.[1-8]; do \
		install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/; done

clean:
	rm -rf build

.PHONY: all unit agent-bundle fuzz deps run test bench install clean
