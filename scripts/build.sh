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
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
mkdir -p "$target" "$tools"

# Registries are reached from the host (its CA bundle, its network setup); the
# build inside the root is then offline.
log() { printf 'build: %s\n' "$*" >&2; }
log "fetching crates"
(cd "$repo" && cargo fetch --locked -q)

t0=$(date +%s)
log "agent + BPF policy (cargo, clang-19)"
"$here/in-root" --bind "$repo" --bind "$target" --bind "$cargo_home" --bind "$rustup_home" \
	--env CARGO_HOME="$cargo_home" --env RUSTUP_HOME="$rustup_home" \
	--env PATH="$cargo_home/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
	--env CARGO_TARGET_DIR="$target" \
	--env CC=gcc-14 --env CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=gcc-14 \
	--env BPF_CLANG=clang-19 --env LIBCLANG_PATH=/usr/lib/llvm-19/lib \
	--cwd "$repo" -- cargo build --workspace --release --offline --locked ${CARGO_QUIET:+-q}
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
