# Front door. Everything slow (the trixie toolchain root, cargo's target dir)
# is cached under ${XDG_CACHE_HOME:-~/.cache}/scx_chameleon, keyed by its inputs.
.PHONY: all setup build test test-host test-vm demo soak bench clean

all: build

setup:
	scripts/setup.sh

build:
	scripts/build.sh

# Every test; ends with "N passed, M failed".
test:
	tests/run

test-host:
	tests/run --host-only

test-vm:
	tests/run --vm-only

demo:
	scripts/demo.sh

# Stress and soak in the VM for SOAK_S seconds on SOAK_CPUS CPUs over
# SOAK_SOCKETS sockets (each its own LLC, so nodes and steals across caches).
# make test runs 60 s of it on 4 CPUs over 2 sockets (objects of level 1);
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
