#!/usr/bin/env bash
# Make the Debian trixie toolchain root (clang-19, bpftool, gcc-14, the stock
# sched_ext kernel and its headers, qemu). Idempotent: a complete root for the
# current package list is left alone; a partial one is removed and remade.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"

log() { printf 'setup: %s\n' "$*" >&2; }

# A root is complete only once this stamp exists; it is written last.
stamp=$ROOT_DIR/.scx_chameleon_complete

root_is_sane() {
	[ -f "$stamp" ] &&
		[ -x "$ROOT_DIR/usr/bin/clang-19" ] &&
		[ -x "$ROOT_DIR/usr/sbin/bpftool" ] &&
		[ -f "$ROOT_DIR/boot/vmlinuz-$KVER" ] &&
		[ -d "$ROOT_DIR/usr/src/linux-headers-$KVER" ] &&
		[ -x "$ROOT_DIR/usr/bin/qemu-system-x86_64" ]
}

# Remove a root safely. All our mounts live in private mount namespaces
# (scripts/in-root), so nothing should be mounted here; refuse if something is,
# rather than delete through a bind mount into the host.
remove_root() {
	local dir=$1
	if findmnt -rn -o TARGET | grep -q "^$dir"; then
		log "refusing to remove $dir: something is mounted below it"
		findmnt -rn -o TARGET | grep "^$dir" >&2
		exit 1
	fi
	rm -rf --one-file-system "$dir"
}

if root_is_sane; then
	log "toolchain root up to date: $ROOT_DIR"
	exit 0
fi

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.setup.lock"
flock 9
root_is_sane && exit 0

if [ -e "$ROOT_DIR" ]; then
	log "removing incomplete root $ROOT_DIR"
	remove_root "$ROOT_DIR"
fi
# Old roots (other keys) are dropped too: each is ~1.6 GB.
for old in "$CACHE_DIR"/root-*; do
	[ -e "$old" ] || continue
	[ "$old" = "$ROOT_DIR" ] && continue
	log "removing stale root $old"
	remove_root "$old"
done

if ! command -v debootstrap >/dev/null; then
	log "installing debootstrap on the host"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

t0=$(date +%s)
tmp=$ROOT_DIR.tmp
[ -e "$tmp" ] && remove_root "$tmp"
log "debootstrap $SUITE into $tmp"
debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$tmp" "$MIRROR" \
	>"$CACHE_DIR/debootstrap.log" 2>&1 ||
	{ tail -30 "$CACHE_DIR/debootstrap.log" >&2; exit 1; }

cat >"$tmp/etc/apt/sources.list" <<EOS
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $MIRROR $SUITE-backports main
EOS
cp /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null || true
# Kernel postinst hooks would try to build an initramfs we never use.
mkdir -p "$tmp/etc/initramfs-tools"
printf 'MODULES=list\n' >"$tmp/etc/initramfs-tools/initramfs.conf"
printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
chmod +x "$tmp/usr/sbin/policy-rc.d"

log "apt-get install (trixie-backports): $(echo $ROOT_PACKAGES | tr '\n' ' ')"
# shellcheck disable=SC2086
"$here/in-root" --root "$tmp" -- sh -c "
	export DEBIAN_FRONTEND=noninteractive INITRD=No
	apt-get update -qq &&
	apt-get install -y -q --no-install-recommends -t $SUITE-backports \
		-o Dpkg::Options::=--force-confdef $(echo $ROOT_PACKAGES) &&
	apt-get clean" >"$CACHE_DIR/apt.log" 2>&1 ||
	{ tail -40 "$CACHE_DIR/apt.log" >&2; exit 1; }

mv "$tmp" "$ROOT_DIR"
touch "$stamp"
root_is_sane || { log "root incomplete after install"; exit 1; }
log "toolchain root ready in $(( $(date +%s) - t0 )) s: $ROOT_DIR"
