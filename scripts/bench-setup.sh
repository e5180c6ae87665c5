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

pkey=$(printf '%s\n' "$ROOT_DIR" "$PEERS" "$(rustc --version)" | sha256sum | cut -c1-16)
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
		log "cargo install $p (from crates.io, inside the root; several minutes)"
		"$here/in-root" --bind "$peers" --bind "$CACHE_DIR/peers-target" \
			--bind "$cargo_home" --bind "$rustup_home" --bind "$cargo_bin" \
			--env CARGO_HOME="$cargo_home" --env RUSTUP_HOME="$rustup_home" \
			--env PATH="$cargo_bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			--env CARGO_TARGET_DIR="$CACHE_DIR/peers-target" \
			--env CC=gcc-14 --env CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=gcc-14 \
			--env BPF_CLANG=clang-19 --env LIBCLANG_PATH=/usr/lib/llvm-19/lib \
			--env CARGO_BUILD_JOBS="${BENCH_JOBS:-$(nproc)}" \
			-- cargo install --locked --root "$peers" "$p" \
			>>"$CACHE_DIR/peers-build.log" 2>&1 ||
			{ tail -30 "$CACHE_DIR/peers-build.log" >&2; exit 1; }
	done
	[ $# -gt 0 ] || touch "$peers/.complete"
fi
echo "$peers/bin"
