#!/usr/bin/env bash
# Fetch the extra kernels the smoke test boots (SMOKE_KVERS in config.sh):
# each one's image package, and the packages of the same version it splits its
# files into (linux-binary-*, linux-base-*), are downloaded from Debian with
# `apt-get download` inside the root and unpacked with `dpkg-deb -x`; only
# boot/vmlinuz-<kver> and boot/config-<kver> are kept, in
# $CACHE_DIR/kernels/<kver>/. Idempotent: a kernel whose completion stamp exists
# is left alone; a partial one is remade.
#
# The 7.0.x kernels' config lived in linux-base-<kver>, which the archive no
# longer carries (only their linux-image and linux-binary are left). For such
# a kernel the config written is a stub with no settings, and says so: libbpf
# then finds the file, a strong CONFIG_* extern fails to load loudly and a weak
# one reads 0. Our object declares none (LINUX_KERNEL_VERSION is taken from
# the running kernel, not from the file), so loading is not affected.
#
#   scripts/kernels.sh [KVER...]     (default: every SMOKE_KVERS kernel)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"

log() { printf 'kernels: %s\n' "$*" >&2; }

[ $# -gt 0 ] || set -- $SMOKE_KVERS
mkdir -p "$KERNELS_DIR"
exec 8>"$KERNELS_DIR/.lock"
flock 8

for kver in "$@"; do
	dir=$KERNELS_DIR/$kver
	[ "$kver" = "$KVER" ] && continue	# the primary one is in the root
	if [ -f "$dir/.complete" ] && [ -f "$dir/vmlinuz-$kver" ] && [ -f "$dir/config-$kver" ]; then
		continue
	fi
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp/debs" "$dir.tmp/x"
	log "downloading $kver (trixie-backports)"
	# The image package is either the whole kernel (6.x) or a meta package
	# whose files are in linux-binary-<kver> and linux-base-<kver> (7.x).
	"$here/in-root" --bind "$dir.tmp" --cwd "$dir.tmp/debs" -- sh -ec "
		apt-get download -q linux-image-$kver >/dev/null 2>&1 ||
			{ apt-get update -qq && apt-get download -q linux-image-$kver; }
		for pkg in \$(dpkg-deb -f linux-image-*.deb Depends | tr ',|' '\n\n' |
				sed -n 's/^ *\(linux-\(binary\|base\)-$kver\)\( .*\)\{0,1\}$/\1/p'); do
			# Some are only virtual (no candidate): their files are in the image.
			apt-get download -q \$pkg || echo \"no package \$pkg\"
		done
		for deb in *.deb; do dpkg-deb -x \$deb ../x; done" \
		>"$dir.tmp/download.log" 2>&1 ||
		{ tail -20 "$dir.tmp/download.log" >&2; rm -rf "$dir.tmp"; log "cannot fetch $kver"; exit 1; }
	for f in vmlinuz config; do
		for src in "$dir.tmp/x/boot/$f-$kver" "$dir.tmp/x/usr/lib/modules/$kver/$f"; do
			[ -f "$src" ] && mv "$src" "$dir.tmp/$f-$kver" && break
		done
	done
	[ -f "$dir.tmp/vmlinuz-$kver" ] ||
		{ log "$kver: no vmlinuz in $(ls "$dir.tmp/debs" | tr '\n' ' ')"; exit 1; }
	if [ ! -f "$dir.tmp/config-$kver" ]; then
		log "$kver: no config in the archive's packages; writing a stub (no settings)"
		printf '# %s: no config in the archive (linux-base-%s is gone).\n# Stub so that libbpf finds a file; it holds no settings.\n' \
			"$kver" "$kver" >"$dir.tmp/config-$kver"
	fi
	rm -rf "$dir.tmp/debs" "$dir.tmp/x"
	mv "$dir.tmp" "$dir"
	touch "$dir/.complete"
	log "$kver ready in $dir"
done
