#!/usr/bin/env bash
# Debian's protoc (protobuf-compiler): the decoder, independent of our Rust
# code, that checks the traces `scx_chameleon trace` writes against
# Perfetto's published trace proto (the .proto files the perfetto_protos
# crate ships, read from cargo's registry; never copied into the repo).
#
# protoc is not in the toolchain root, and must not be: the root's package
# list is its cache key (config.sh), a change remakes 1.6 GB. Its packages
# are fetched once with `apt-get download` inside the root (trixie's apt
# sources) and unpacked into $CACHE_DIR/protoc-<Debian version>/; a directory
# without its completion stamp is remade. It runs inside the root (trixie's
# libc) with LD_LIBRARY_PATH pointing at its own libraries.
#
#   scripts/protoc.sh decode FILE      FILE (a perfetto.protos.Trace) as text
#   scripts/protoc.sh guest-decoder    the path of `perfetto-decode`: one
#       self-contained file for the VM (tests/vm/run --with PATH); in the
#       guest, `perfetto-decode FILE` prints the same text
#   scripts/protoc.sh version          protoc's version and the proto's origin
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/config.sh"

log() { printf 'protoc: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { sed -n '14,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
cmd=$1; shift
case $cmd in
decode) [ $# = 1 ] || usage; [ -f "$1" ] || die "decode: $1: no such file" ;;
guest-decoder|version) [ $# = 0 ] || usage ;;
*) usage ;;
esac

out=$("$here/setup.sh" 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
mkdir -p "$CACHE_DIR"
exec 8>"$CACHE_DIR/.protoc.lock"
flock 8

# --- Perfetto's proto, from the perfetto_protos crate our Cargo.lock pins.
pver=$(awk '$0 == "name = \"perfetto_protos\"" { getline; gsub(/"/, "", $3); print $3; exit }' "$repo/Cargo.lock")
[ -n "$pver" ] || die "no perfetto_protos in Cargo.lock"
cargo_home=${CARGO_HOME:-$HOME/.cargo}
crate=$(ls -d "$cargo_home"/registry/src/*/"perfetto_protos-$pver" 2>/dev/null | head -n 1 || true)
if [ -z "$crate" ]; then
	(cd "$repo" && cargo fetch --locked -q) || die "cargo fetch failed"
	crate=$(ls -d "$cargo_home"/registry/src/*/"perfetto_protos-$pver" 2>/dev/null | head -n 1 || true)
fi
[ -n "$crate" ] || die "perfetto_protos-$pver is not in $cargo_home/registry/src"
# The merged proto (every trace message in one file, as Perfetto publishes it).
proto=$(cd "$crate" && find . -name perfetto_trace.proto | sed 's|^\./||' | head -n 1)
[ -n "$proto" ] || die "no perfetto_trace.proto in $crate"
proto_dir=$crate/$(dirname "$proto")
proto_file=$(basename "$proto")

# --- Debian's protoc, keyed by the version the root's apt would install.
candidate() {
	"$here/in-root" -- sh -c 'apt-cache show --no-all-versions protobuf-compiler 2>/dev/null | sed -n "s/^Version: //p"'
}
ver=$(candidate)
if [ -z "$ver" ]; then
	"$here/in-root" -- apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed in the root"
	ver=$(candidate)
fi
[ -n "$ver" ] || die "no protobuf-compiler in the root's apt sources"
dir=$CACHE_DIR/protoc-$ver
libdir=$dir/usr/lib/x86_64-linux-gnu
if [ ! -f "$dir/.complete" ]; then
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp/debs" "$dir.tmp/x"
	log "downloading protobuf-compiler $ver and its protobuf libraries"
	# Only its own libraries: libc, libstdc++, libgcc and zlib are in the root.
	"$here/in-root" --bind "$dir.tmp" --cwd "$dir.tmp/debs" -- sh -ec "
		apt-get download -q protobuf-compiler=$ver
		deps() { dpkg-deb -f \$1 Depends | tr ',' '\n' | sed -n 's/^ *\(libproto[a-z0-9]*\).*/\1/p'; }
		for d in \$(deps protobuf-compiler_*.deb); do
			apt-get download -q \$d
			for dd in \$(deps \${d}_*.deb); do apt-get download -q \$dd; done
		done
		for deb in *.deb; do dpkg-deb -x \$deb ../x; done" \
		>"$dir.tmp/download.log" 2>&1 ||
		{ tail -20 "$dir.tmp/download.log" >&2; rm -rf "$dir.tmp"; die "cannot fetch protobuf-compiler $ver"; }
	mv "$dir.tmp/x/usr" "$dir.tmp/usr"
	rm -rf "$dir.tmp/x" "$dir.tmp/debs"
	mv "$dir.tmp" "$dir"
	"$here/in-root" --bind "$dir" --env LD_LIBRARY_PATH="$libdir" -- "$dir/usr/bin/protoc" --version >/dev/null ||
		{ rm -rf "$dir"; die "the downloaded protoc does not run"; }
	touch "$dir/.complete"
	log "protoc $ver ready in $dir"
fi

protoc() { # protoc ARGS... (inside the root; the proto's directory bound in)
	"$here/in-root" --bind "$dir" --bind "$proto_dir" "${pbind[@]}" --env LD_LIBRARY_PATH="$libdir" -- \
		"$dir/usr/bin/protoc" --proto_path="$proto_dir" "$@"
}
pbind=()

case $cmd in
version)
	echo "$(protoc --version) (Debian protobuf-compiler $ver); proto: perfetto_protos-$pver/$proto"
	;;
decode)
	file=$(realpath "$1")
	pbind=(--bind "$(dirname "$file")")
	protoc --decode=perfetto.protos.Trace "$proto_dir/$proto_file" <"$file"
	;;
guest-decoder)
	# Named perfetto-decode in the guest (--with keeps the file's name).
	mkdir -p "$dir/guest-$pver"
	out=$dir/guest-$pver/perfetto-decode
	if [ ! -f "$out" ]; then
		st=$dir/guest.tmp
		rm -rf "$st" && mkdir -p "$st/bin" "$st/lib" "$st/proto"
		cp "$dir/usr/bin/protoc" "$st/bin/"
		cp "$proto_dir/$proto_file" "$st/proto/"
		# Every library protoc loads but the C library and its loader (the
		# guest has those, from the same root).
		"$here/in-root" --bind "$dir" --env LD_LIBRARY_PATH="$libdir" -- sh -ec "
			ldd $dir/usr/bin/protoc | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p' |
			grep -v -e '/libc\.so' -e '/ld-linux' | while read -r lib; do cp -L \"\$lib\" $st/lib/; done"
		[ -n "$(ls "$st/lib")" ] || die "found no libraries for protoc"
		cat >"$out.tmp" <<-EOF
		#!/bin/sh
		# perfetto-decode FILE: FILE, a Perfetto trace, as text: Debian's protoc
		# $ver (protobuf-compiler) decoding it as perfetto.protos.Trace against
		# Perfetto's trace proto (from the perfetto_protos-$pver crate). Made by
		# scripts/protoc.sh guest-decoder; protoc, its libraries and the proto
		# follow this script as a gzipped tar, unpacked once under \${TMPDIR:-/tmp}.
		set -e
		[ \$# = 1 ] || { echo "usage: perfetto-decode FILE" >&2; exit 2; }
		[ -f "\$1" ] || { echo "perfetto-decode: \$1: no such file" >&2; exit 2; }
		d=\${TMPDIR:-/tmp}/perfetto-decode-$pver
		if [ ! -f "\$d/.complete" ]; then
			rm -rf "\$d" && mkdir -p "\$d"
			n=\$(awk '/^__PAYLOAD__\$/ { print NR + 1; exit }' "\$0")
			tail -n +"\$n" "\$0" | gzip -dc | tar -xf - -C "\$d"
			touch "\$d/.complete"
		fi
		LD_LIBRARY_PATH=\$d/lib exec "\$d/bin/protoc" --proto_path="\$d/proto" \\
			--decode=perfetto.protos.Trace "\$d/proto/$proto_file" <"\$1"
		exit 1
		__PAYLOAD__
		EOF
		tar -C "$st" -czf - bin lib proto >>"$out.tmp"
		chmod +x "$out.tmp"
		mv "$out.tmp" "$out"
		rm -rf "$st"
	fi
	echo "$out"
	;;
esac
