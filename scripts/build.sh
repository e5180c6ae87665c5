#!/usr/bin/env bash
# Build everything that goes into the guest: the agent (with the BPF policy
# inside), the module, and the small test tools. Runs inside the toolchain root
# because the host's clang is too old for the scx headers and bindgen needs a
# libclang >= 18; the host's own rustup toolchain is bind-mounted in.
#
# Outputs (paths printed by `build.sh --print-paths`):
#   $CACHE_DIR/target/release/scx_chameleon
#   kmod_proxy/chameleon_proxy.ko
#   $CACHE_DIR/tools/*
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/config.sh"

target=$CACHE_DIR/target
tools=$CACHE_DIR/tools
if [ "${1:-}" = --print-paths ]; then
	echo "AGENT=$target/release/scx_chameleon"
	echo "MODULE=$repo/kmod_proxy/chameleon_proxy.ko"
	echo "TOOLS=$tools"
	exit 0
fi

"$here/setup.sh"
# The other kernels of the smoke matrix (downloaded once, then a no-op).
"$here/kernels.sh"
mkdir -p "$tools"
log() { printf 'build: %s\n' "$*" >&2; }

t0=$(date +%s)
log "agent + BPF policy (cargo, clang-19)"
"$here/cargo-in-root" build --workspace --release ${CARGO_QUIET:+-q}
t1=$(date +%s)

log "module (kbuild, gcc-14, $KVER)"
"$here/in-root" --bind "$repo" --cwd "$repo" -- \
	make -s -C "/usr/src/linux-headers-$KVER" M="$repo/kmod_proxy" CC=gcc-14 modules
t2=$(date +%s)

log "test tools"
for src in "$repo"/tests/vm/tools/*.c; do
	[ -e "$src" ] || continue
	out=$tools/$(basename "$src" .c)
	"$here/in-root" --bind "$repo" --bind "$tools" -- \
		gcc-14 -O2 -Wall -Werror -I"$repo/kmod_proxy" -o "$out" "$src"
done
log "done: agent $((t1 - t0)) s, module $((t2 - t1)) s"
