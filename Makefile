# Front door. Everything slow (the trixie toolchain root, cargo's target dir)
# is cached under ${XDG_CACHE_HOME:-~/.cache}/scx_chameleon, keyed by its inputs.
.PHONY: all setup build test test-all test-host test-vm demo soak bench clean install uninstall

all: build

setup:
	scripts/setup.sh

build:
	scripts/build.sh

# Every test; ends with "N passed, M failed".
test:
	tests/run

# make test and the tests at size (72, 32, 128 and 256 vCPUs: ~13 more minutes of a VM slot).
test-all:
	tests/run --all

test-host:
	tests/run --host-only

test-vm:
	tests/run --vm-only

demo:
	scripts/demo.sh

# Stress and soak in the VM for SOAK_S seconds on SOAK_CPUS CPUs over
# SOAK_SOCKETS sockets (each its own LLC, so nodes and steals across caches).
# make test runs 40 s of it on 4 CPUs over 2 sockets (objects of level 1);
# 8 over 2 leave room for level 2 too.
SOAK_S ?= 600
SOAK_CPUS ?= 8
SOAK_SOCKETS ?= 2
soak:
	scripts/build.sh
	tests/vm/run --no-build --cpus $(SOAK_CPUS) --sockets $(SOAK_SOCKETS) --timeout $$(( $(SOAK_S) + 600 )) -- env SOAK_S=$(SOAK_S) soak.sh

# bench/REPORT.md: Chameleon's figures in the VM and the overhead against
# EEVDF and the scx peers (needs crates.io and Debian once; ~25 min).
bench:
	bench/run

clean:
	scripts/in-root --bind "$(CURDIR)" -- make -s -C /usr/src/linux-headers-$$(. scripts/config.sh; echo $$KVER) M="$(CURDIR)/kmod_proxy" clean
	rm -rf build/modules

# Install the agent with the tools it runs for `top`, `trace` and `--monitor`
# (scx_chameleon-tools, beside it), the systemd unit and its flags file (kept
# if present), and the progress header for `tax=auto` applications. BIN is the
# agent to install: `make build`'s (built in the trixie root, for trixie-era
# systems), or your own `cargo build --release` on the target machine:
#   sudo make install BIN=target/release/scx_chameleon
# TOOLS_BIN is the tools binary (default: the one next to BIN).
# then `systemctl daemon-reload && systemctl enable --now scx_chameleon`.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
BIN ?= build/scx_chameleon
TOOLS_BIN ?= $(dir $(BIN))scx_chameleon-tools
install:
	@test -x "$(BIN)" || { echo "install: no agent at $(BIN) (make build, or BIN=target/release/scx_chameleon)" >&2; exit 1; }
	@test -x "$(TOOLS_BIN)" || { echo "install: no tools at $(TOOLS_BIN) (make build, or TOOLS_BIN=target/release/scx_chameleon-tools)" >&2; exit 1; }
	install -D -m 0755 "$(BIN)" "$(DESTDIR)$(BINDIR)/scx_chameleon"
	install -D -m 0755 "$(TOOLS_BIN)" "$(DESTDIR)$(BINDIR)/scx_chameleon-tools"
	install -d "$(DESTDIR)$(UNITDIR)"
	sed 's|@BINDIR@|$(BINDIR)|g' dist/scx_chameleon.service >"$(DESTDIR)$(UNITDIR)/scx_chameleon.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/scx_chameleon.service"
	test -e "$(DESTDIR)$(SYSCONFDIR)/default/scx_chameleon" || \
		install -D -m 0644 dist/scx_chameleon.default "$(DESTDIR)$(SYSCONFDIR)/default/scx_chameleon"
	install -D -m 0644 include/chameleon_progress.h "$(DESTDIR)$(PREFIX)/include/chameleon_progress.h"

# Leaves $(SYSCONFDIR)/default/scx_chameleon (your flags) in place.
uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/scx_chameleon" "$(DESTDIR)$(BINDIR)/scx_chameleon-tools" \
		"$(DESTDIR)$(UNITDIR)/scx_chameleon.service" \
		"$(DESTDIR)$(PREFIX)/include/chameleon_progress.h"
