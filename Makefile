# sbxtop — the one build entry.  See README.md.
#
#   make                  build build/sbxtop (thin), build/sbxtop-core, build/sbxtop-agent,
#                         build/sbxtop-launch, build/sbxtop-guestfwd and build/agent-bundle
#                         (what `create` needs)
#   make run              install missing build and run dependencies, build, start sbxtop
#   make test             the same plus the test tools, then every test ("N passed, N failed")
#   make bench            benchmarks, side by side with their peers
#   make SANITIZE=address,undefined test     the test suite under ASan/UBSan
#   make install PREFIX=/usr/local [DESTDIR=...]   (shell completion included;
#                         make install-completions for that alone)
#
# CC, CPPFLAGS, CFLAGS, LDFLAGS and LDLIBS are the packager's: they are added to
# what the build needs (-I., the warnings, each library's flags), never replace it.

PREFIX  ?= /usr/local
CC      ?= cc
PKG_CONFIG ?= pkg-config
# The pkg-config modules each binary links, and the Debian package that ships each
# module (named when one is missing).
AGENT_PKGS  = libcjson libarchive nettle
LAUNCH_PKGS = libcjson libseccomp
PKGS        = libmicrohttpd libcjson libcurl libseccomp libarchive openssl nettle ncursesw \
              libpcre2-8 libssh2
PKG_DEBS    = libmicrohttpd=libmicrohttpd-dev libcjson=libcjson-dev \
              libcurl=libcurl4-openssl-dev libseccomp=libseccomp-dev \
              libarchive=libarchive-dev openssl=libssl-dev nettle=nettle-dev \
              ncursesw=libncurses-dev libpcre2-8=libpcre2-dev libssh2=libssh2-1-dev

HTTP_PARSER_DEBS = libhttp-parser-dev

# make agent-bundle ARCH=aarch64: the agent alone, cross-built with Debian's
# gcc-aarch64-linux-gnu against the arm64 libraries (scripts/deps.sh --test
# installs them on Debian), bundled in build/aarch64/agent-bundle for `sbxtop setup aws`.
ifeq ($(ARCH),aarch64)
CC         = aarch64-linux-gnu-gcc
PKG_CONFIG = PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
PKGS       = $(AGENT_PKGS)
PKG_DEBS   = libcjson=libcjson-dev:arm64 libarchive=libarchive-dev:arm64 \
             nettle=nettle-dev:arm64
HTTP_PARSER_DEBS = libhttp-parser-dev libhttp-parser2.9:arm64
BUILD     ?= build/aarch64
endif

ifdef SANITIZE
BUILD   ?= build/san
SANFLAGS = -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD   ?= build
endif
# One name per object: an absolute BUILD inside the tree (the tests pass one)
# would write dependency files whose targets a relative BUILD never matches.
override BUILD := $(patsubst $(CURDIR)/%,%,$(BUILD))

WARN     = -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 -Wmissing-prototypes
CFLAGS  ?= -O2 -g
# pkg-config is asked once per make, after `deps` ran (run and test call make again).
pc_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pc_libs   = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)
PKG_CPPFLAGS := $(call pc_cflags,$(PKGS))
SBX_CPPFLAGS  = -I. -D_GNU_SOURCE $(PKG_CPPFLAGS)
SBX_CFLAGS    = -std=gnu11 $(WARN) $(SANFLAGS)
COMPILE       = $(CC) $(SBX_CPPFLAGS) $(CPPFLAGS) $(SBX_CFLAGS) $(CFLAGS)
LINK          = $(CC) $(SANFLAGS) $(CFLAGS) $(LDFLAGS)
CORE_LIBS   := $(call pc_libs,$(PKGS)) -lpthread -lutil -lm
# The agent links statically what it can, so that it starts with the loader
# mapping only libc and cJSON (Debian ships no archive of cJSON): each library
# less is about 0.07 ms of every sandbox's start.  libarchive is the big win:
# it reads and writes tar, gzip and zstd only (agent/archive.c), so zlib and
# libzstd are all the code it pulls in needs, while the shared library brings
# every format's libraries (libxml2 and ICU alone are 35 MB) into the bundle
# that every sandbox, remote host and VM image carries.  --gc-sections drops
# the other formats' code that libarchive's format tables reach.  Node's
# http-parser (libhttp-parser-dev) reads the agent's requests; it has no
# pkg-config module, and where only its runtime package is (the arm64 one:
# Debian's two -dev packages conflict over the header, which is the same) the
# agent links its shared object.
GC_SECTIONS  = -Wl,--gc-sections
MULTIARCH   := $(shell $(CC) -print-multiarch 2>/dev/null)
# The library's archive where its -dev package ships one, else -lNAME.
agent_static = $(or $(wildcard /usr/lib/$(MULTIARCH)/lib$(1).a),-l$(1))
ARCHIVE_A   := $(wildcard $(shell $(PKG_CONFIG) --variable=libdir libarchive 2>/dev/null)/libarchive.a)
HTTP_PARSER_A := $(wildcard /usr/lib/$(MULTIARCH)/libhttp_parser.a)
HTTP_PARSER_LIBS := $(or $(HTTP_PARSER_A),-l:libhttp_parser.so.2.9)
AGENT_LIBS  := $(call pc_libs,libcjson) $(HTTP_PARSER_LIBS) $(GC_SECTIONS) \
               $(or $(ARCHIVE_A),$(call pc_libs,libarchive)) $(call agent_static,zstd) \
               $(call agent_static,z) $(call agent_static,nettle) -lpthread -lutil -lm
LAUNCH_LIBS := $(call pc_libs,$(LAUNCH_PKGS)) -lpthread -lm
# The thin sbxtop links nothing but libc, statically: no dynamic loader runs
# before a command (about 1 ms of each here), and cli/cjson.c stands in for
# the cJSON that Debian ships only as a shared library.  It links libc
# dynamically under the sanitizers (their runtimes are shared libraries) and
# where libc has no archive (glibc-static is a package of its own on Fedora).
THIN_LIBS   := -lm
LIBC_A      := $(shell $(CC) -print-file-name=libc.a 2>/dev/null)
THIN_STATIC  = $(if $(SANITIZE),,$(if $(filter /%,$(LIBC_A)),-static-pie))

# Small utilities shared by sbxtop and the agent (DESIGN: agent/ shares only these).
UTIL_SRC  = $(wildcard lib/*.c)
AGENT_SRC = $(wildcard agent/*.c)
BACKEND_SRC = $(wildcard backends/*.c backends/*/*.c)
SBXTOP_SRC = $(wildcard core/*.c core/*/*.c) \
             $(BACKEND_SRC) \
             $(filter-out cli/thin.c cli/cjson.c cli/guestfwd.c,$(wildcard cli/*.c)) \
             $(wildcard mcp/*.c) $(wildcard server/*.c) $(wildcard tui/*.c)
# The thin sbxtop (cli/thin.c): the commands that are clients of the core server,
# linked without the core's libraries; it execs sbxtop-core for everything else.
THIN_CMDS = create ls exec shell cp logs status suspend resume destroy
THIN_SRC  = cli/thin.c cli/cjson.c cli/main.c cli/cmd.c $(patsubst %,cli/cmd-%.c,$(THIN_CMDS)) \
            core/client/client.c core/config.c core/create-opts.c core/paths.c core/sandbox.c core/sandbox-text.c \
            core/client/pty-term.c \
            backends/backend-options.c $(wildcard backends/*/*-options.c)
UNIT_SRC  = $(wildcard tests/unit/*.c)
# The ns launcher on its own (launch/), for remote hosts: the same backend code.
LAUNCH_SRC = launch/main.c $(wildcard backends/ns/*.c) core/paths.c core/paths-passwd.c core/sandbox.c

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

BINS = $(BUILD)/sbxtop $(BUILD)/sbxtop-core $(BUILD)/sbxtop-agent $(BUILD)/sbxtop-launch \
       $(BUILD)/sbxtop-guestfwd
all: $(BINS) agent-bundle

# Before the first compile: every library's pkg-config module is there, or the
# build stops naming the Debian package that ships it.
$(BUILD)/.pkgs-ok:
	@command -v $(lastword $(PKG_CONFIG)) >/dev/null 2>&1 || \
	    { echo "sbxtop: pkg-config is missing: install the Debian package pkg-config" \
	    "(or run scripts/deps.sh)" >&2; exit 1; }
	@missing=""; for m in $(PKGS); do $(PKG_CONFIG) --exists $$m || { \
	    for d in $(PKG_DEBS); do [ "$${d%%=*}" = "$$m" ] && missing="$$missing $${d#*=}"; done; \
	    echo "sbxtop: the library $$m is missing (pkg-config finds no $$m.pc)" >&2; }; done; \
	    { echo '#include <http_parser.h>' | $(CC) -E -x c - >/dev/null 2>&1 && \
	    ls $(or $(HTTP_PARSER_A),/usr/lib/$(MULTIARCH)/libhttp_parser.so.2.9) >/dev/null 2>&1; } || { \
	    echo "sbxtop: Node's http-parser is missing" >&2; missing="$$missing $(HTTP_PARSER_DEBS)"; }; \
	    [ -z "$$missing" ] || { echo "sbxtop: install the Debian packages:$$missing" \
	    "(scripts/deps.sh does)" >&2; exit 1; }
	@mkdir -p $(dir $@) && touch $@

$(BUILD)/obj/%.o: %.c | $(BUILD)/.pkgs-ok
	@mkdir -p $(dir $@)
	$(COMPILE) -MMD -MP -c -o $@ $<

# Each binary links only the libraries it uses: the agent bundle carries every
# library the agent and the launcher link, and a sanitizer build links them all
# whether used or not.
$(BUILD)/sbxtop-agent: $(AGENT_OBJ) $(UTIL_OBJ)
	$(LINK) -o $@ $^ $(AGENT_LIBS) $(LDLIBS)

$(BUILD)/sbxtop-core: $(SBXTOP_OBJ) $(UTIL_OBJ)
	$(LINK) -o $@ $^ $(CORE_LIBS) $(LDLIBS)

$(BUILD)/sbxtop-launch: $(LAUNCH_OBJ) $(UTIL_OBJ)
	$(LINK) -o $@ $^ $(LAUNCH_LIBS) $(LDLIBS)

$(BUILD)/sbxtop: $(THIN_OBJ) $(UTIL_OBJ)
	$(LINK) $(THIN_STATIC) -o $@ $^ $(THIN_LIBS) $(LDLIBS)

# QEMU runs it per connection of a qemu guest to its network proxy: libc only.
$(BUILD)/sbxtop-guestfwd: $(BUILD)/obj/cli/guestfwd.o
	$(LINK) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(AGENT_LIB) $(CORE_LIB) $(UTIL_OBJ) | $(BUILD)/.pkgs-ok
	@mkdir -p $(dir $@)
	$(COMPILE) $(LDFLAGS) -o $@ $^ $(CORE_LIBS) $(HTTP_PARSER_LIBS) $(LDLIBS)

# The thin sbxtop's cJSON beside the system's (tests/integration/thin-json.sh).
JSON_DRIVERS = $(BUILD)/tools/json-thin $(BUILD)/tools/json-cjson
$(BUILD)/tools/json-thin: tests/tools/json-driver.c $(BUILD)/obj/cli/cjson.o $(UTIL_OBJ) | $(BUILD)/.pkgs-ok
	@mkdir -p $(dir $@)
	$(COMPILE) $(LDFLAGS) -o $@ $^ -lm $(LDLIBS)
$(BUILD)/tools/json-cjson: tests/tools/json-driver.c | $(BUILD)/.pkgs-ok
	@mkdir -p $(dir $@)
	$(COMPILE) $(LDFLAGS) -o $@ $^ $(call pc_libs,libcjson) -lm $(LDLIBS)

unit: $(UNIT_BIN) $(JSON_DRIVERS)

# server/rest.c embeds the OpenAPI document (.incbin), which gcc's dependency
# files do not record.
$(BUILD)/obj/server/rest.o: docs/openapi.json

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The agent bundle: the binary plus the shared objects and loader it needs, so it
# runs in any rootfs (ns images, qemu guests, AWS MicroVM images).
# The ns launcher rides along, for remote hosts (backends/ssh/backend-ssh.c); the
# aarch64 bundle (setup aws) carries the agent alone.
BUNDLE_EXTRA = $(if $(filter aarch64,$(ARCH)),,$(BUILD)/sbxtop-launch)
agent-bundle: $(BUILD)/agent-bundle/sbxtop-agent
$(BUILD)/agent-bundle/sbxtop-agent: $(BUILD)/sbxtop-agent $(BUNDLE_EXTRA) scripts/agent-bundle.sh
	LIBDIRS="$(if $(filter aarch64,$(ARCH)),/usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu)" \
	    scripts/agent-bundle.sh $(BUILD)/sbxtop-agent $(BUILD)/agent-bundle $(BUNDLE_EXTRA)

# Fuzz targets (libFuzzer) for the parsers of untrusted input, built with clang
# straight from the sources (gcc objects cannot carry the fuzzer instrumentation).
FUZZ_CC    ?= clang
FUZZ_SRC    = $(wildcard tests/fuzz/*.c)
FUZZ_BIN    = $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_DEPS   = $(UTIL_SRC) agent/path.c agent/state.c mcp/jsonrpc.c mcp/schema.c mcp/budget.c \
              core/fwd/http.c core/copy/guard.c core/diff/order.c backends/lambda/aws-xml.c \
              core/image/layer.c core/image/ref.c core/image/meta.c core/net/hello.c core/net/scrub.c \
              core/keys/spec.c backends/ns/ns-tag.c core/sandbox.c \
              core/create-opts.c core/config.c core/paths.c core/paths-passwd.c backends/backend-options.c \
              $(wildcard backends/*/*-options.c)
FUZZ_CFLAGS = -g -O1 -std=gnu11 $(WARN) -D_GNU_SOURCE -I. \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              $(call pc_cflags,libcjson libarchive nettle)
# The agent's request reader, over Node's http-parser.
FUZZ_DEPS  += agent/http-parse.c

fuzz: $(FUZZ_BIN)

# The thin sbxtop's cJSON, alone: no system cJSON linked beside it.
build/fuzz/thin-json: tests/fuzz/thin-json.c cli/cjson.c $(UTIL_SRC) $(wildcard lib/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< cli/cjson.c $(UTIL_SRC) -lm -lpthread

build/fuzz/%: tests/fuzz/%.c $(FUZZ_DEPS) $(wildcard lib/*.h core/*.h core/*/*.h backends/*/*.h agent/*.h mcp/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_DEPS) \
	    $(call pc_libs,libcjson libarchive nettle) $(HTTP_PARSER_LIBS) -lm -lpthread

# Each of run, test and bench installs what it needs first, then builds in a
# second make: that one reads pkg-config after the packages are there, and no
# object is compiled before them, even under -j.
deps:
	@scripts/deps.sh --check >/dev/null 2>&1 || scripts/deps.sh

test-deps:
	@scripts/deps.sh --check --test >/dev/null 2>&1 || scripts/deps.sh --test

run: deps
	@$(MAKE) --no-print-directory all
	$(BUILD)/sbxtop

test: test-deps
	@$(MAKE) --no-print-directory all unit
	@BUILD=$(BUILD) TEST_SKIP="$(TEST_SKIP)" tests/run.sh

bench: test-deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/run.sh

# The aarch64 bundle that `sbxtop setup aws` ships goes along when it was built.
install: all agent-bundle
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/sbxtop \
	           $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
	           $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 $(BUILD)/sbxtop $(BUILD)/sbxtop-agent $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/sbxtop-core $(BUILD)/sbxtop-guestfwd $(DESTDIR)$(PREFIX)/lib/sbxtop/
	cp -a $(BUILD)/agent-bundle $(DESTDIR)$(PREFIX)/lib/sbxtop/
	if [ -d build/aarch64/agent-bundle ]; then rm -rf $(DESTDIR)$(PREFIX)/lib/sbxtop/agent-bundle-aarch64; \
		cp -a build/aarch64/agent-bundle $(DESTDIR)$(PREFIX)/lib/sbxtop/agent-bundle-aarch64; fi
	install -d $(DESTDIR)$(PREFIX)/share/sbxtop/themes
	install -m 0644 themes/*.theme $(DESTDIR)$(PREFIX)/share/sbxtop/themes/
	for m in man/*.[1-8]; do \
		install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/; done
	scripts/apparmor.sh sbxtop-core $(PREFIX)/lib/sbxtop/sbxtop-core \
	    $(DESTDIR)$(APPARMOR_DIR)/sbxtop $(if $(DESTDIR),--no-load)
	@$(MAKE) --no-print-directory install-completions

# Shell completion for bash, zsh and fish, where each looks, made from the
# command table by the binary built (`sbxtop completion SHELL`).
COMPLETION_DIRS = bash:share/bash-completion/completions/sbxtop \
                  zsh:share/zsh/site-functions/_sbxtop \
                  fish:share/fish/vendor_completions.d/sbxtop.fish
install-completions:
	@test -x $(BUILD)/sbxtop-core || { echo "sbxtop: no $(BUILD)/sbxtop-core: run make first" >&2; exit 1; }
	for c in $(COMPLETION_DIRS); do \
		f=$(DESTDIR)$(PREFIX)/$${c#*:}; install -d $$(dirname $$f) && \
		$(BUILD)/sbxtop-core completion $${c%%:*} > $$f.tmp && chmod 0644 $$f.tmp && \
		mv $$f.tmp $$f || exit 1; done

# The AppArmor profile for this build tree's sbxtop-core (sudo make apparmor),
# named after its path so that several trees and an installed sbxtop coexist.
APPARMOR_DIR = /etc/apparmor.d
APPARMOR_ID  = $(shell printf '%s' '$(abspath $(BUILD)/sbxtop-core)' | cksum | cut -d' ' -f1)
# Run as root, it builds nothing: build first, as yourself.
apparmor:
	@test -x $(BUILD)/sbxtop-core || { echo "sbxtop: no $(BUILD)/sbxtop-core: run make first" >&2; exit 1; }
	scripts/apparmor.sh sbxtop-core-$(APPARMOR_ID) $(abspath $(BUILD)/sbxtop-core) \
	    $(APPARMOR_DIR)/sbxtop-build-$(APPARMOR_ID)

clean:
	rm -rf build

.PHONY: all unit agent-bundle fuzz deps test-deps run test bench install install-completions \
	apparmor clean
