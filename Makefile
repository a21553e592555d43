# sbx - build, test, benchmark, install.  Plain GNU make.
#
#   make                 build everything into $(BUILD)
#   make check           unit tests (TAP) + bats suite; ends "N passed, N failed, N skipped"
#                        (SBX_TEST_BACKEND=docker|podman: against that backend)
#   make check SANITIZE=1  the same under ASan+UBSan (separate build dir)
#   make check-valgrind  the unit tests under valgrind's memcheck (errors and
#                        definite leaks fail)
#   make check-vm        the limits, lifecycle and isolation suites inside a
#                        stock Debian 12 guest (cgroup v2 only; qemu, cached
#                        image in build/vm; docs/design.md)
#   make check-scale     sbx on a real Redis Cluster (3+3 nodes; 3+6 for failover) and Sentinel set,
#                        started on loopback by the tests (tests/scale/run)
#   make bench           benchmarks, side by side with baselines, as ratios
#   make demo            the main job: skill install -> snapshot -> sessions -> reap
#   make fuzz            every libFuzzer target in tests/fuzz (clang, FUZZ_SECONDS each)
#   make deb             build/deb/sbx_<version>_amd64.deb (dpkg-buildpackage,
#                        debian/; lintian clean); DEB_VERSION=V rebuilds it
#                        under another version
#   make check-deb       install, use, upgrade and purge that package on a
#                        clean Debian 12 guest (docs/design.md)
#   make install PREFIX=/usr/local DESTDIR=

CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
VERSION  := 0.1.0

ifeq ($(SANITIZE),1)
BUILD    ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD    ?= build
SANFLAGS :=
endif

CFLAGS   ?= -O2 -g
# The library is a folder per concern (docs/design.md, "Folder order", which
# tools/arch-check enforces); #include lines name bare headers, found by
# one -I per folder, so every header's name is unique in the tree.
COMMON_DIRS := $(patsubst %/,%,$(wildcard common/*/))
BACKEND_DIRS := $(patsubst %/,%,$(wildcard backends/*/))
COMMON_INC := $(addprefix -I,$(COMMON_DIRS))
XCFLAGS  := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
            -DSBX_VERSION='"$(VERSION)"' -Wno-format-truncation $(COMMON_INC) -MMD -MP $(SANFLAGS)
LDLIBS   := -lhiredis -ljson-c -lseccomp -lpthread
XLDFLAGS := $(SANFLAGS)

# sbx-serve's part of the library (common/serve/) is an archive of its
# own, linked into sbx-serve only: no other program loads libmicrohttpd.
SERVE_SRC := $(wildcard common/serve/*.c)
SERVE_OBJ := $(SERVE_SRC:%.c=$(BUILD)/obj/%.o)
SERVE_LIB := $(BUILD)/libsbx-serve.a
# The sandbox init, the detached process's supervisor and the egress broker
# live beside the local backend (backends/local/) but are programs of their own.
# The broker's process side (its connections, their record's queue and
# spool writer, the L7 side: TLS interception, its CA) is an archive of
# its own too, linked into sbx-egress only: no other program loads libssl.
EGRESS_SRC := backends/local/local-brokerd.c backends/local/local-ca.c backends/local/local-l7.c \
	backends/local/local-audit.c
EGRESS_OBJ := $(EGRESS_SRC:%.c=$(BUILD)/obj/%.o)
EGRESS_LIB := $(BUILD)/libsbx-egress.a
LIBEXEC_SRC := backends/local/sbx-init.c backends/local/sbx-procd.c backends/local/sbx-forkd.c \
	backends/local/sbx-egress.c
LIB_SRC  := $(filter-out $(SERVE_SRC) $(EGRESS_SRC) $(LIBEXEC_SRC),$(wildcard common/*/*.c) $(wildcard backends/*/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CMD_SRC  := $(wildcard cmd/*.c)
PROGS    := $(CMD_SRC:cmd/%.c=$(BUILD)/bin/%)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_SRC := $(wildcard tests/unit/test-*.c)
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# The sandbox init (local backend): a libexec program, not for users.
INIT     := $(BUILD)/libexec/sbx/sbx-init
# The supervisor of a detached process (local backend), libc only too.
PROCD    := $(BUILD)/libexec/sbx/sbx-procd
# The fork server inside each local sandbox, libc only too.
FORKD    := $(BUILD)/libexec/sbx/sbx-forkd
# The egress broker of a sandbox with a network policy (local backend):
# a host-side program, linked with the library (the policy, the guard).
EGRESS   := $(BUILD)/libexec/sbx/sbx-egress
MAN_SRC  := $(wildcard man/*.scd)
MANS     := $(MAN_SRC:man/%.scd=$(BUILD)/man/%)
LIB      := $(BUILD)/libsbx.a
# Backends register themselves through weak symbols, so the archive is
# linked whole: nothing in it is dropped for lack of a strong reference.
LINKLIB  := -Wl,--whole-archive $(LIB) -Wl,--no-whole-archive

.PHONY: deps all progs check check-valgrind check-scale check-vm bench demo fuzz install clean man unit completions deb check-deb
all: $(PROGS) $(CMD_OBJ) $(INIT) $(PROCD) $(FORKD) $(EGRESS) $(UNITS) man
# What is installed (make install, the package): no unit tests.
progs: $(PROGS) $(INIT) $(PROCD) $(FORKD) $(EGRESS) man

# The backend boundary, enforced by the compiler: only a backend sees its
# own folder on the include path (and the unit tests of the internals see
# every backend's), so a common/ or cmd/ file that includes a backend
# header does not build, nor a backend that includes another's.
# tests/arch.bats (tools/arch-check) checks the compiler's dependency lists
# and the objects' symbols as well.
$(foreach b,$(BACKEND_DIRS),$(eval $(BUILD)/obj/$(b)/%.o: XCFLAGS += -I$(b)))
$(BUILD)/obj/tests/unit/%.o: XCFLAGS += $(addprefix -I,$(BACKEND_DIRS))

# Objects are kept (not removed as intermediates): tests/arch.bats reads
# every object's symbols, the programs' too.
.SECONDARY:

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/obj/cmd/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $< $(LINKLIB) $(LDLIBS)

$(SERVE_LIB): $(SERVE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/sbx-serve: $(BUILD)/obj/cmd/sbx-serve.o $(SERVE_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $< $(SERVE_LIB) $(LINKLIB) $(LDLIBS) -lmicrohttpd -lz

# libc only, and no sanitizer: it is a sandbox's PID 1, which pivots away
# from the host's files and lives in the sandbox's memory cgroup.  Linked
# statically: it is exec'd on every create, and without the dynamic loader
# a create is ~4 ms (10%) faster (tests/bench/boundary.sh).
$(INIT): backends/local/sbx-init.c backends/local/local-idle.h backends/local/local-init.h backends/local/local-shared.h backends/local/local-kfile.h
	@mkdir -p $(dir $@) $(BUILD)/obj/libexec
	$(CC) $(CFLAGS) $(filter-out $(SANFLAGS),$(XCFLAGS)) -Ibackends/local -MF $(BUILD)/obj/libexec/sbx-init.d \
	  -static -o $@ backends/local/sbx-init.c

$(PROCD): backends/local/sbx-procd.c backends/local/local-procd.h backends/local/local-kfile.h common/base/fdpass.h \
	  backends/local/local-forkd-proto.h \
	  common/base/spool.c common/base/spool.h
	@mkdir -p $(dir $@) $(BUILD)/obj/libexec
	$(CC) $(CFLAGS) $(filter-out $(SANFLAGS),$(XCFLAGS)) -Ibackends/local -Icommon/base -MF $(BUILD)/obj/libexec/sbx-procd.d \
	  -static -o $@ backends/local/sbx-procd.c common/base/spool.c

$(FORKD): backends/local/sbx-forkd.c backends/local/local-forkd-proto.h backends/local/local-kfile.h common/base/fdpass.h
	@mkdir -p $(dir $@) $(BUILD)/obj/libexec
	$(CC) $(CFLAGS) $(filter-out $(SANFLAGS),$(XCFLAGS)) -Ibackends/local -Icommon/base -MF $(BUILD)/obj/libexec/sbx-forkd.d \
	  -static -o $@ backends/local/sbx-forkd.c

$(EGRESS_LIB): $(EGRESS_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(EGRESS): $(BUILD)/obj/backends/local/sbx-egress.o $(EGRESS_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $< $(EGRESS_LIB) $(LINKLIB) $(LDLIBS) -lssl -lcrypto

# Benchmark helpers in C (tests/bench/*.c), built by `make bench`.
BENCH_SRC := $(wildcard tests/bench/*.c)
BENCHES   := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)
$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $< $(LINKLIB) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $< $(LINKLIB) $(LDLIBS)

man: $(MANS)
# Through a temporary: a page scdoc refuses leaves no target behind that
# a later make would take for up to date.
$(BUILD)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	scdoc < $< > $@.tmp && mv $@.tmp $@

completions: all
	tools/gen-completions $(BUILD)/bin completions

deps:
	@tools/deps

check: deps
	$(MAKE) all
	BUILD=$(abspath $(BUILD)) SANITIZE=$(SANITIZE) tests/run

check-scale: deps
	$(MAKE) all
	BUILD=$(abspath $(BUILD)) tests/scale/run

check-vm: deps
	$(MAKE) all
	tools/vm/run

unit: $(UNITS)
	BUILD=$(abspath $(BUILD)) tests/run --unit

check-valgrind: $(UNITS)
	SBX_VALGRIND=1 BUILD=$(abspath $(BUILD)) tests/run --unit

bench: all $(BENCHES)
	BUILD=$(abspath $(BUILD)) tests/bench/run

demo: deps
	$(MAKE) all
	BUILD=$(abspath $(BUILD)) examples/demo.sh

FUZZ_SECONDS ?= 30
# Every libFuzzer target tests/fuzz/fuzz-*.c, each FUZZ_SECONDS (tests/fuzz/run
# reads what each links from its own "// fuzz-sources:" line).
fuzz:
	BUILD=$(abspath $(BUILD)) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run

install: progs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/sbx \
	  $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man7 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(INIT) $(PROCD) $(FORKD) $(EGRESS) $(DESTDIR)$(PREFIX)/libexec/sbx/
	for m in $(MANS); do case $$m in *.7) d=man7;; *) d=man1;; esac; \
	  install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/$$d/; done
	for f in completions/bash/*; do install -m 644 $$f $(DESTDIR)$(PREFIX)/share/bash-completion/completions/; done
	install -m 644 completions/zsh/_sbx $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_sbx
	install -m 644 completions/fish/*.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/

clean:
	rm -rf build build-san

# The Debian package (docs/design.md).  Built from the tree by
# debian/rules in a folder of its own (debian/build), never from $(BUILD).
DEB_VERSION ?= $(VERSION)
DEB_OUT     ?= $(BUILD)/deb
deb: deps
	tools/deb/build $(DEB_VERSION) $(DEB_OUT)

check-deb: deps
	tools/deb/check

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
