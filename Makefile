# Front door. Everything slow (the trixie toolchain root, cargo's target dir)
# is cached under ${XDG_CACHE_HOME:-~/.cache}/scx_chameleon, keyed by its inputs.
.PHONY: all setup build test test-host test-vm demo clean

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

clean:
	scripts/in-root --bind "$(CURDIR)" -- make -s -C /usr/src/linux-headers-$$(. scripts/config.sh; echo $$KVER) M="$(CURDIR)/kmod_proxy" clean
