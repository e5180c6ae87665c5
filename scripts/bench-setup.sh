#!/usr/bin/env bash
# What `make bench` needs beyond `make test` (never needed by make test):
# - perf, hackbench and gnuplot, installed into the toolchain root as a layer
#   of their own (stamp keyed by the package list; the root's own key, and so
#   make test's cache, is unchanged);
# - the peer schedulers the overhead bench compares against, scx_cosmos,
#   scx_bpfland, scx_lavd and scx_p2dq, built from crates.io inside the root (their bindgen and BPF
#   code need the trixie clang, as ours does) into the cache, keyed by the
#   versions and the root. Idempotent; prints the peers' bin directory.
#   scripts/bench-setup.sh [PEER...]   (PEER: scx_bpfland...: only those built)
#   scripts/bench-setup.sh --layer     (the Debian packages only, no peer)
#   scripts/bench-setup.sh --watchdog-ms MS [PEER...]
#     the peers built with their struct_ops watchdog (`.timeout_ms`) set to
#     MS and nothing else changed, in a directory of their own: a bench at
#     64+ vCPUs on 2 host cores starves a 5 s watchdog's own work, and the
#     kernel then ejects the peer for the emulator's stall (bench/insn_cost
#     runs ours and the peers at the kernel's longest, 30 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"
log() { printf 'bench-setup: %s\n' "$*" >&2; }

# perf from the same kernel release as the guest (backports), hackbench from
# rt-tests, gnuplot for the plots (packaged, scriptable, PNG without X).
BENCH_PACKAGES="linux-perf rt-tests gnuplot-nox"
# The versions compared (the newest on crates.io when the bench was written).
PEERS="scx_cosmos@1.1.7 scx_bpfland@1.1.4 scx_lavd@1.1.4 scx_p2dq@1.1.4"

"$here/setup.sh" >&2
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.bench-setup.lock"
flock 9

key=$(printf '%s\n' "$ROOT_DIR" "$BENCH_PACKAGES" | sha256sum | cut -c1-16)
stamp=$ROOT_DIR/.bench-$key
if [ ! -f "$stamp" ]; then
	log "apt-get install into the root: $BENCH_PACKAGES"
	# shellcheck disable=SC2086
	"$here/in-root" -- sh -c "
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq &&
		apt-get install -y -q --no-install-recommends -t $SUITE-backports $BENCH_PACKAGES &&
		apt-get clean" >"$CACHE_DIR/bench-apt.log" 2>&1 ||
		{ tail -30 "$CACHE_DIR/bench-apt.log" >&2; exit 1; }
	touch "$stamp"
fi

[ "${1:-}" != --layer ] || exit 0
watchdog=
if [ "${1:-}" = --watchdog-ms ]; then
	watchdog=${2:?--watchdog-ms MS}
	case $watchdog in
	*[!0-9]* | '') log "--watchdog-ms takes milliseconds, got '$watchdog'"; exit 2 ;;
	esac
	shift 2
fi

# A peer's crate source with its struct_ops `.timeout_ms` set to MS
# (exactly one such line in src/bpf/main.bpf.c, or nothing is built); the
# crate comes from cargo's registry (the unpatched build unpacks it there).
patched_source() {
	local name=${1%@*} ver=${1#*@} ms=$2 reg dst
	reg=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$name-$ver" 2>/dev/null | head -n 1)
	[ -n "$reg" ] || { log "$name-$ver is not in cargo's registry: run scripts/bench-setup.sh $name first"; exit 1; }
	dst=$CACHE_DIR/peers-src-$ms/$name-$ver
	rm -rf "$dst" && mkdir -p "$(dirname "$dst")" && cp -a "$reg" "$dst"
	[ "$(grep -c '^[[:space:]]*\.timeout_ms[[:space:]]*=' "$dst/src/bpf/main.bpf.c")" = 1 ] ||
		{ log "$name-$ver: not one .timeout_ms in src/bpf/main.bpf.c"; exit 1; }
	sed -i "s/^\([[:space:]]*\.timeout_ms[[:space:]]*=[[:space:]]*\)[^,]*,/\1${ms}U,/" "$dst/src/bpf/main.bpf.c"
	grep -q "\.timeout_ms[[:space:]]*=[[:space:]]*${ms}U," "$dst/src/bpf/main.bpf.c" ||
		{ log "$name-$ver: .timeout_ms not set"; exit 1; }
	echo "$dst"
}
# cargo install's arguments for a crate name@version or a source directory.
install_what() {
	case $1 in
	/*) echo "--path $1" ;;
	*) echo "$1" ;;
	esac
}

pkey=$(printf '%s\n' "$ROOT_DIR" "$PEERS" "$(rustc --version)" ${watchdog:+"watchdog $watchdog"} | sha256sum | cut -c1-16)
peers=$CACHE_DIR/peers-$pkey
# Named peers only (a bench that compares against some of them): each one
# whose binary is there already is skipped.
want=$PEERS
if [ $# -gt 0 ]; then
	want=
	for name in "$@"; do
		p=$(printf '%s\n' $PEERS | grep "^$name@") || { log "unknown peer $name (have: $PEERS)"; exit 2; }
		[ -x "$peers/bin/$name" ] || want="$want $p"
	done
fi
if [ ! -f "$peers/.complete" ] && [ -n "$want" ]; then
	cargo_bin=$(dirname "$(command -v cargo)")
	cargo_home=${CARGO_HOME:-$HOME/.cargo}
	rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
	mkdir -p "$peers" "$CACHE_DIR/peers-target"
	for p in $want; do
		src=$p
		binds=()
		if [ -n "$watchdog" ]; then
			src=$(patched_source "$p" "$watchdog")
			binds=(--bind "$src")
			log "cargo install $p with a ${watchdog} ms watchdog (inside the root; several minutes)"
		else
			log "cargo install $p (from crates.io, inside the root; several minutes)"
		fi
		"$here/in-root" --bind "$peers" --bind "$CACHE_DIR/peers-target" \
			--bind "$cargo_home" --bind "$rustup_home" --bind "$cargo_bin" "${binds[@]}" \
			--env CARGO_HOME="$cargo_home" --env RUSTUP_HOME="$rustup_home" \
			--env PATH="$cargo_bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			--env CARGO_TARGET_DIR="$CACHE_DIR/peers-target" \
			--env CC=gcc-14 --env CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=gcc-14 \
			--env BPF_CLANG=clang-19 --env LIBCLANG_PATH=/usr/lib/llvm-19/lib \
			--env CARGO_BUILD_JOBS="${BENCH_JOBS:-$(nproc)}" \
			-- cargo install --locked --root "$peers" $(install_what "$src") \
			>>"$CACHE_DIR/peers-build.log" 2>&1 ||
			{ tail -30 "$CACHE_DIR/peers-build.log" >&2; exit 1; }
	done
	[ $# -gt 0 ] || touch "$peers/.complete"
fi
echo "$peers/bin"
