#!/usr/bin/env bash
# Build the image the DaemonSet runs, localhost/scx_chameleon:VERSION (VERSION:
# the workspace version in Cargo.toml), as an OCI archive: a tar of an OCI
# image layout whose index.json names the image (io.containerd.image.name and
# org.opencontainers.image.ref.name), which
#   ctr -n k8s.io images import FILE      (containerd, each node)
#   podman load -i FILE
#   skopeo copy oci-archive:FILE docker://REGISTRY/scx_chameleon:VERSION
# take as it is. Prints the archive's path.
#
#   deploy/kubernetes/build-image.sh [--no-nri] [--no-module] [--out FILE]
#
# From scripts/build.sh's binaries: build/scx_chameleon and
# build/scx_chameleon-tools (both required), build/scx_chameleon-nri (the NRI
# plugin: required unless --no-nri), and the chameleon_proxy module of each
# kernel built (kmod_proxy/chameleon_proxy.ko for KVER, build/modules/*/ for
# the others; left out with --no-module, or when there is none).
#
# One layer, from scratch (no base image: no registry is needed): the
# binaries in /usr/bin, each with the shared libraries ldd lists for it, taken
# from the toolchain root the binaries were linked in (trixie's glibc);
# busybox (a shell for the init container and `kubectl exec`) and kmod
# (insmod, modprobe) the same way; /opt/chameleon/load-module (the init
# container) and the modules in /opt/chameleon/modules/<kernel>/.
#
# The layout is written with tar, gzip and sha256sum (oci_layout.sh, which
# also writes the runtime test's images), not umoci or skopeo:
# neither is in the toolchain root, and adding a package to ROOT_PACKAGES
# changes the root's key, so setup.sh would debootstrap a new root (~1.6 GB)
# and remove the one every clone shares. The archive is reproducible: file
# times and the creation date are the last commit's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

# --- inside the toolchain root: stage the root filesystem, write the layout ---
if [ "${1:-}" = --inside ]; then
	# --inside WORK NAME VERSION EPOCH REVISION AGENT TOOLS NRI|-
	work=$2 name=$3 version=$4 epoch=$5 revision=$6 agent=$7 tools=$8 nri=$9
	trap 'echo "build-image: failed in the toolchain root at line $LINENO: $BASH_COMMAND" >&2' ERR
	st=$work/rootfs
	# with_libs BIN DEST: BIN at DEST in the image, with the libraries ldd
	# lists for it (tests/vm/mkinitramfs copies its binaries the same way).
	with_libs() {
		mkdir -p "$st$(dirname "$2")"
		cp -L "$1" "$st$2"
		# (a static binary: ldd fails, and lists nothing)
		{ ldd "$1" 2>/dev/null || true; } | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
			while read -r lib; do
				[ -e "$st$lib" ] && continue
				mkdir -p "$st$(dirname "$lib")"
				cp -L "$lib" "$st$lib"
			done
	}
	with_libs "$agent" /usr/bin/scx_chameleon
	# Beside the agent: `scx_chameleon top`, `trace` and --monitor exec it.
	with_libs "$tools" /usr/bin/scx_chameleon-tools
	[ "$nri" = - ] || with_libs "$nri" /usr/bin/scx_chameleon-nri
	# Without their DWARF line tables (as mkinitramfs: nothing here reads
	# them; the tools binary goes from ~120 MB to a fraction).
	for b in scx_chameleon scx_chameleon-tools; do
		strip --strip-debug "$st/usr/bin/$b"
	done
	with_libs /usr/bin/kmod /usr/sbin/kmod
	for t in insmod rmmod lsmod modprobe modinfo depmod; do
		ln -s kmod "$st/usr/sbin/$t"
	done
	with_libs /usr/bin/busybox /bin/busybox
	for applet in $("$st/bin/busybox" --list); do
		[ -e "$st/bin/$applet" ] || [ -e "$st/usr/sbin/$applet" ] || ln -s busybox "$st/bin/$applet"
	done
	mkdir -p "$st/etc" "$st/proc" "$st/sys" "$st/dev" "$st/run" "$st/var" "$st/root" "$st/tmp"
	chmod 1777 "$st/tmp"
	ln -s ../run "$st/var/run"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$st/etc/passwd"
	echo 'root:x:0:' >"$st/etc/group"

	config='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],'\
'"Cmd":["/usr/bin/scx_chameleon"],"WorkingDir":"/",'\
'"Labels":{"org.opencontainers.image.title":"scx_chameleon","org.opencontainers.image.version":"'"$version"'",'\
'"org.opencontainers.image.revision":"'"$revision"'"}}'
	. "$here/oci_layout.sh"
	oci_archive "$st" "$name" "$epoch" "$config" "$work/image.tar"
	exit 0
fi

# --- on the host ---
. "$repo/scripts/config.sh"
nri=1 module=1 out=
while [ $# -gt 0 ]; do
	case $1 in
	--no-nri) nri=0; shift ;;
	--no-module) module=0; shift ;;
	--out) out=$2; shift 2 ;;
	--out=*) out=${1#--out=}; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "build-image.sh: unknown option $1 (--no-nri, --no-module, --out FILE)" >&2; exit 2 ;;
	esac
done
log() { printf 'build-image: %s\n' "$*" >&2; }

version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' "$repo/Cargo.toml")
[ -n "$version" ] || { log "no version in $repo/Cargo.toml's [workspace.package]"; exit 2; }
name=localhost/scx_chameleon:$version
out=${out:-$repo/build/image/scx_chameleon-$version.oci.tar}

agent=$repo/build/scx_chameleon
tools=$repo/build/scx_chameleon-tools
nri_bin=$repo/build/scx_chameleon-nri
for b in "$agent" "$tools"; do
	[ -x "$b" ] || { log "no $b: build it first (scripts/build.sh, or make build)"; exit 1; }
done
if (( nri )); then
	[ -x "$nri_bin" ] || {
		log "no $nri_bin (the NRI plugin): build it first, or pass --no-nri for an image without it"
		log "(then the DaemonSet's nri container cannot start: remove it from scx-chameleon.yaml, or tag with scx_chameleon tag / rules only)"
		exit 1
	}
else
	log "--no-nri: no NRI plugin in the image"
	nri_bin=-
fi

mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
work=$(mktemp -d "$repo/build/.image.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/rootfs/opt/chameleon"
cp "$here/image/load-module" "$work/rootfs/opt/chameleon/load-module"
chmod 0755 "$work/rootfs/opt/chameleon/load-module"
mods=()
if (( module )); then
	# The primary kernel's module is kmod_proxy's (scripts/build.sh), the
	# others' build/modules/<kver>/ (scripts/kmods.sh).
	for kver in $KVER $SMOKE_KVERS; do
		ko=$("$repo/scripts/kmods.sh" --path "$kver")
		[ -f "$ko" ] || continue
		mkdir -p "$work/rootfs/opt/chameleon/modules/$kver"
		cp "$ko" "$work/rootfs/opt/chameleon/modules/$kver/"
		mods+=("$kver")
	done
	[ ${#mods[@]} -gt 0 ] || log "no chameleon_proxy.ko built (scripts/build.sh builds it): the image has no module"
else
	log "--no-module: no chameleon_proxy module in the image"
fi

# The last commit's time and id: the image's dates and revision label.
epoch=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || revision=$revision-dirty

log "$name: agent, tools$([ "$nri_bin" = - ] || echo ", NRI plugin"); modules for: ${mods[*]:-none}"
"$repo/scripts/in-root" --bind "$repo" -- \
	bash "$here/build-image.sh" --inside "$work" "$name" "$version" "$epoch" "$revision" "$agent" "$tools" "$nri_bin"
mv -f "$work/image.tar" "$out"
log "$(du -h "$out" | cut -f1) OCI archive of $name; import on each node: ctr -n k8s.io images import $out"
echo "$out"
