#!/usr/bin/env bash
# Fetch the module-build headers of the other kernels the tests boot
# (SMOKE_KVERS in config.sh), so that chameleon_proxy is built for each
# (scripts/kmods.sh). The primary kernel's headers are in the root.
#
# For <abi>-<flavour> (e.g. 6.16.12+deb13-cloud-amd64) Debian splits them into
# linux-headers-<kver> (the flavour's config, Module.symvers, generated
# headers), linux-headers-<abi>-common (the source headers) and
# linux-kbuild-<abi> (the build tools), which are unpacked with `dpkg-deb -x`
# into $CACHE_DIR/kheaders/<kver>/ (usr/src/..., usr/lib/...). They are not
# root packages: adding them to ROOT_PACKAGES would remake the root.
#
# Where they come from: trixie-backports' index keeps the signed images of old
# versions but lists only the newest headers, while the archive's pool still
# holds the old headers. A package the index lists is fetched with
# `apt-get download` (checked against the signed index); one it no longer lists
# is fetched from the pool by its path, over https, and checked against the
# image of the same version (which the signed index lists): their configs
# must be one build's. The booted kernel checks the module too: its vermagic
# always, its symbols' CRCs where CONFIG_MODVERSIONS is set (6.16).
#
# The flavour directory's Makefile includes the common one by its absolute
# path (/usr/src/...); it is rewritten to the unpacked one.
#
# Idempotent: a kernel whose completion stamp exists is left alone; a partial
# one is remade.
#
#   scripts/kheaders.sh [KVER...]    (default: every SMOKE_KVERS kernel)
#   scripts/kheaders.sh --dir KVER   (print the directory to pass to make -C)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"

KHEADERS_DIR=$CACHE_DIR/kheaders
headers_dir() { echo "$KHEADERS_DIR/$1/usr/src/linux-headers-$1"; }
if [ "${1:-}" = --dir ]; then
	[ -n "${2:-}" ] || { echo "kheaders: --dir needs a kernel version" >&2; exit 2; }
	if [ "$2" = "$KVER" ]; then echo "/usr/src/linux-headers-$2"; else headers_dir "$2"; fi
	exit 0
fi

log() { printf 'kheaders: %s\n' "$*" >&2; }

[ $# -gt 0 ] || set -- $SMOKE_KVERS
mkdir -p "$KHEADERS_DIR"
exec 8>"$KHEADERS_DIR/.lock"
flock 8

for kver in "$@"; do
	[ "$kver" = "$KVER" ] && continue	# the primary one is in the root
	dir=$KHEADERS_DIR/$kver
	[ -f "$dir/.complete" ] && [ -f "$(headers_dir "$kver")/Module.symvers" ] && continue
	abi=${kver%%-*}		# 6.16.12+deb13
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp/debs"
	log "downloading the headers of $kver"
	# The package version (e.g. 6.16.12-1~bpo13+1) is the image's, which
	# the index still lists.
	version=$("$here/in-root" -- apt-cache show --no-all-versions "linux-image-$kver" 2>/dev/null |
		sed -n 's/^Version: //p' | head -n 1)
	[ -n "$version" ] || { log "$kver: no linux-image-$kver in the index"; rm -rf "$dir.tmp"; exit 1; }
	for pkg in "linux-headers-$kver" "linux-headers-$abi-common" "linux-kbuild-$abi"; do
		if "$here/in-root" --bind "$dir.tmp" --cwd "$dir.tmp/debs" -- \
			apt-get download -q "$pkg=$version" >>"$dir.tmp/download.log" 2>&1; then
			continue
		fi
		arch=amd64
		[ "$pkg" = "linux-headers-$abi-common" ] && arch=all
		url=${MIRROR/#http:/https:}/pool/main/l/linux/${pkg}_${version}_$arch.deb
		echo "not in the index: $pkg; from $url" >>"$dir.tmp/download.log"
		curl -fsS --retry 3 -o "$dir.tmp/debs/${pkg}_${version}_$arch.deb" "$url" \
			>>"$dir.tmp/download.log" 2>&1 ||
			{ tail -5 "$dir.tmp/download.log" >&2; rm -rf "$dir.tmp"; log "cannot fetch $pkg $version"; exit 1; }
	done
	# The flavour package names what it needs: check that it is these two.
	deps=$("$here/in-root" --bind "$dir.tmp" -- dpkg-deb -f "$dir.tmp/debs/linux-headers-${kver}_"*.deb Depends)
	for need in "linux-headers-$abi-common" "linux-kbuild-$abi"; do
		[[ $deps == *"$need"* ]] || { log "$kver: headers depend on '$deps', not on $need"; rm -rf "$dir.tmp"; exit 1; }
	done
	"$here/in-root" --bind "$dir.tmp" -- sh -ec \
		'for deb in "$1"/debs/*.deb; do dpkg-deb -x "$deb" "$1"; done' sh "$dir.tmp"
	rm -rf "$dir.tmp/debs"
	# A cross-check against the signed index: the image's config (fetched
	# by kernels.sh) and the headers' must be one build's, apart from the
	# lines the image package leaves out (build salt, signing key).
	# kernels.sh writes a stub for a kernel whose config is gone (7.0.x):
	# nothing to compare then.
	"$here/kernels.sh" "$kver"
	kconf=$KERNELS_DIR/$kver/config-$kver
	if grep -q '^CONFIG_' "$kconf"; then
		strip() { grep -v '^CONFIG_\(BUILD_SALT\|MODULE_SIG_ALL\|MODULE_SIG_KEY\|SYSTEM_TRUSTED_KEYS\)=' "$1"; }
		if ! diff <(strip "$kconf") <(strip "$dir.tmp/usr/src/linux-headers-$kver/.config") >"$dir.tmp/config.diff"; then
			log "$kver: the headers' config is not the image's: $(head -5 "$dir.tmp/config.diff")"
			rm -rf "$dir.tmp"
			exit 1
		fi
	fi
	mv "$dir.tmp" "$dir"
	mk=$(headers_dir "$kver")/Makefile
	grep -q "^include /usr/src/linux-headers-$abi-common/Makefile$" "$mk" ||
		{ log "$kver: unexpected $mk: $(cat "$mk")"; exit 1; }
	sed -i "s|/usr/src/linux-headers-|$dir/usr/src/linux-headers-|g" "$mk"
	touch "$dir/.complete"
	log "$kver headers ready in $(headers_dir "$kver")"
done
