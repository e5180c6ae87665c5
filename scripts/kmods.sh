#!/usr/bin/env bash
# Build chameleon_proxy for the other kernels the tests boot (SMOKE_KVERS in
# config.sh), against their headers (scripts/kheaders.sh). The primary
# kernel's module stays kmod_proxy/chameleon_proxy.ko (scripts/build.sh).
#
# kbuild writes its objects next to the sources, so each kernel builds from
# its own copy of kmod_proxy/ in build/modules/<kver>/src/ (sources copied
# with their times, so that kbuild rebuilds only what changed) and the module
# is put at build/modules/<kver>/chameleon_proxy.ko, where tests/vm/run takes
# it from for a guest booting that kernel.
#
#   scripts/kmods.sh [KVER...]       (default: every SMOKE_KVERS kernel)
#   scripts/kmods.sh --path KVER     (print where the module of KVER is)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/config.sh"

mod_path() {
	if [ "$1" = "$KVER" ]; then
		echo "$repo/kmod_proxy/chameleon_proxy.ko"
	else
		echo "$repo/build/modules/$1/chameleon_proxy.ko"
	fi
}
if [ "${1:-}" = --path ]; then
	[ -n "${2:-}" ] || { echo "kmods: --path needs a kernel version" >&2; exit 2; }
	mod_path "$2"
	exit 0
fi

log() { printf 'kmods: %s\n' "$*" >&2; }

[ $# -gt 0 ] || set -- $SMOKE_KVERS
"$here/kheaders.sh" "$@"
for kver in "$@"; do
	[ "$kver" = "$KVER" ] && continue	# build.sh builds that one
	hdir=$("$here/kheaders.sh" --dir "$kver")
	out=$repo/build/modules/$kver
	src=$out/src
	mkdir -p "$src"
	# The copy holds exactly the module's sources: one deleted from
	# kmod_proxy/ must not linger in it.
	for f in "$src"/*.c "$src"/*.h; do
		[ -e "$f" ] && [ ! -e "$repo/kmod_proxy/$(basename "$f")" ] && rm -f "$f" "${f%.*}.o"
	done
	for f in "$repo"/kmod_proxy/Kbuild "$repo"/kmod_proxy/*.c "$repo"/kmod_proxy/*.h; do
		cmp -s "$f" "$src/$(basename "$f")" || cp -p "$f" "$src/"
	done
	log "module (kbuild, gcc-14, $kver)"
	"$here/in-root" --bind "$repo" --bind "${hdir%/usr/src/*}" --cwd "$src" -- \
		make -s -C "$hdir" M="$src" CC=gcc-14 KCFLAGS=-Werror modules
	cp "$src/chameleon_proxy.ko" "$out/chameleon_proxy.ko.new"
	mv -f "$out/chameleon_proxy.ko.new" "$(mod_path "$kver")"
done
