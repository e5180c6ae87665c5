#!/usr/bin/env bash
# Build everything that goes into the guest: the agent (with the BPF policy
# inside), the module, and the small test tools. Runs inside the toolchain root
# because the host's clang is too old for the scx headers and bindgen needs a
# libclang >= 18; the host's own rustup toolchain is bind-mounted in.
#
# Outputs (paths printed by `build.sh --print-paths`), all in this clone:
#   build/scx_chameleon
#   build/scx_chameleon-tools (top, trace, --monitor: scx_chameleon execs it)
#   build/scx_chameleon-nri (the container runtime's NRI plugin: nri/, Go)
#   kmod_proxy/chameleon_proxy.ko
#   build/tools/*
# Cargo's target directory is shared by every clone (outside it, so a fresh
# clone does not rebuild the dependencies), but each clone keeps its own
# binary: two clones building in turn no longer overwrite the agent a test or
# demo of the other is about to boot.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/config.sh"

target=$CACHE_DIR/target
out=$repo/build
tools=$out/tools
if [ "${1:-}" = --print-paths ]; then
	echo "AGENT=$out/scx_chameleon"
	echo "AGENT_TOOLS=$out/scx_chameleon-tools"
	echo "NRI_PLUGIN=$out/scx_chameleon-nri"
	echo "MODULE=$repo/kmod_proxy/chameleon_proxy.ko"
	echo "TOOLS=$tools"
	exit 0
fi

"$here/setup.sh"
# The other kernels of the smoke matrix (downloaded once, then a no-op).
"$here/kernels.sh"
mkdir -p "$tools"
# One build of this clone at a time: kbuild and the tools write into the
# tree, and two at once (a test run and a benchmark) would mix their objects.
exec 8>"$out/.build.lock"
flock 8
log() { printf 'build: %s\n' "$*" >&2; }

t0=$(date +%s)
log "agent + BPF policy (cargo, clang-19)"
mkdir -p "$CACHE_DIR"
# Build and copy under one lock: another clone's build in between would put
# its binary at the shared path.
(
	flock 9
	# The policy's host tests (tests/host, with their C shim) are for
	# `cargo test` only.
	CHAMELEON_TARGET_LOCKED=1 "$here/cargo-in-root" build --workspace --exclude chameleon_policy_tests \
		--release ${CARGO_QUIET:+-q}
	# The agent and, next to it, the tools it execs for top, trace and --monitor.
	for bin in scx_chameleon scx_chameleon-tools; do
		cp "$target/release/$bin" "$out/$bin.new"
		mv -f "$out/$bin.new" "$out/$bin"
	done
) 9>"$CACHE_DIR/target.lock"
t1=$(date +%s)

# The NRI plugin: the host's Go, on containerd/nri's plugin stub (go.sum
# pins it), static, so that it runs in the guest and in any image.
log "NRI plugin (go $(go env GOVERSION 2>/dev/null || echo missing))"
command -v go >/dev/null || { log "no Go toolchain (the NRI plugin needs one: https://go.dev/dl, or Debian's golang-go >= 1.24)"; exit 1; }
(cd "$repo/nri" && CGO_ENABLED=0 go build -trimpath -o "$out/scx_chameleon-nri.new" .)
mv -f "$out/scx_chameleon-nri.new" "$out/scx_chameleon-nri"

log "module (kbuild, gcc-14, $KVER)"
"$here/in-root" --bind "$repo" --cwd "$repo" -- \
	make -s -C "/usr/src/linux-headers-$KVER" M="$repo/kmod_proxy" CC=gcc-14 KCFLAGS=-Werror modules
log "module for the other kernels (kmods.sh)"
"$here/kmods.sh"
t2=$(date +%s)

log "test tools"
for src in "$repo"/tests/vm/tools/*.c; do
	[ -e "$src" ] || continue
	bin=$tools/$(basename "$src" .c)
	# kfunc_probe loads BPF programs through libbpf (mkinitramfs copies
	# libbpf.so with it); the others need only libc.
	case $(basename "$src") in
	kfunc_probe.c) libs=(-lbpf) ;;
	*) libs=() ;;
	esac
	"$here/in-root" --bind "$repo" -- \
		gcc-14 -O2 -Wall -Werror -I"$repo/kmod_proxy" -I"$repo/include" -o "$bin" "$src" "${libs[@]}"
done
log "done: agent $((t1 - t0)) s, module $((t2 - t1)) s"
