#!/usr/bin/env bash
# The container runtime for the VM's Kubernetes test (tests/vm/guest/nri.sh)
# as one initramfs archive that tests/vm/run --extra appends to the guest's:
# Debian's containerd (1.7, NRI built in) and runc, crictl (cri-tools, built
# from the Go module proxy at CRICTL_VERSION), containerd's config (NRI on,
# config.toml here), and two images written locally as OCI archives
# (deploy/kubernetes/oci_layout.sh): localhost/pause:test (pause.c, the pod
# sandbox) and localhost/spin:test (tests/vm/tools/spin.c, the workload),
# both static. No registry is reachable: the guest imports them.
#
# Made once and kept in $CACHE_DIR/k8s-runtime/<key>.cpio, keyed by this
# directory's files, the packages' versions and crictl's; prints its path.
#
#   runtime.sh --image OCI_ARCHIVE OUT: OUT is an archive of OCI_ARCHIVE alone,
#   at /opt/k8s/deploy/image.tar (the DaemonSet's image, which the test imports).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
. "$repo/scripts/config.sh"
if [ "${1:-}" = --image ]; then
	img=$(realpath "$2") out=$(realpath -m "$3")
	t=$(mktemp -d "$(dirname "$out")/.image.XXXXXX")
	trap 'rm -rf "$t"' EXIT
	mkdir -p "$t/opt/k8s/deploy"
	cp "$img" "$t/opt/k8s/deploy/image.tar"
	"$repo/scripts/in-root" --bind "$t" --bind "$(dirname "$out")" -- \
		sh -c 'cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet >"$2"' sh "$t" "$out"
	echo "$out"
	exit 0
fi
CRICTL_VERSION=v1.34.0
log() { printf 'k8s-runtime: %s\n' "$*" >&2; }

dir=$CACHE_DIR/k8s-runtime
mkdir -p "$dir"
exec 7>"$dir/.lock"
flock 7
versions=$("$repo/scripts/in-root" -- sh -c 'apt-cache policy containerd runc' 2>/dev/null |
	sed -n 's/^ *Candidate: //p' | tr '\n' ' ')
[ -n "$versions" ] || { log "cannot tell the containerd and runc versions (apt-cache in the root)"; exit 1; }
key=$({
	echo "$versions $CRICTL_VERSION $KVER"
	cat "$here"/* "$repo/tests/vm/tools/spin.c" "$repo/deploy/kubernetes/oci_layout.sh"
} | sha256sum | cut -c1-16)
out=$dir/$key.cpio
if [ -f "$out" ]; then
	touch "$out"
	echo "$out"
	exit 0
fi

work=$(mktemp -d "$dir/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
st=$work/tree
mkdir -p "$work/debs" "$work/x" "$st/usr/bin" "$st/etc/containerd" "$st/opt/k8s/images" \
	"$st/var/lib" "$st/etc/nri/conf.d" "$st/opt/nri/plugins"

log "containerd and runc ($versions) from Debian"
"$repo/scripts/in-root" --bind "$work" --cwd "$work/debs" -- sh -ec '
	apt-get download -q containerd runc >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get download -q containerd runc; }
	for deb in *.deb; do dpkg-deb -x "$deb" ../x; done' >"$work/apt.log" 2>&1 ||
	{ tail -20 "$work/apt.log" >&2; log "cannot fetch containerd and runc"; exit 1; }

log "crictl $CRICTL_VERSION (go install, the Go module proxy)"
GOBIN=$work/gobin CGO_ENABLED=0 go install -trimpath "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION" >"$work/go.log" 2>&1 ||
	{ tail -20 "$work/go.log" >&2; log "cannot build crictl $CRICTL_VERSION"; exit 1; }
cp "$work/gobin/crictl" "$st/usr/bin/"

log "binaries with their libraries, the images"
"$repo/scripts/in-root" --bind "$work" --bind "$repo" -- sh -ec '
	work=$1 here=$2 repo=$3 st=$1/tree
	with_libs() {
		cp -L "$1" "$2"
		{ ldd "$1" 2>/dev/null || true; } |
			sed -n "s/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p" |
			while read -r lib; do
				[ -e "$st$lib" ] && continue
				mkdir -p "$st$(dirname "$lib")"
				cp -L "$lib" "$st$lib"
			done
	}
	for b in containerd containerd-shim-runc-v2 ctr runc; do
		with_libs "$work/x/usr/bin/$b" "$st/usr/bin/$b"
	done
	mkdir -p "$work/pause/bin" "$work/spin/bin"
	gcc-14 -O2 -static -Wall -Werror -o "$work/pause/bin/pause" "$here/pause.c"
	gcc-14 -O2 -static -Wall -Werror -I"$repo/kmod_proxy" -I"$repo/include" \
		-o "$work/spin/bin/spin" "$repo/tests/vm/tools/spin.c"
	' sh "$work" "$here" "$repo" >"$work/build.log" 2>&1 ||
	{ tail -20 "$work/build.log" >&2; log "cannot assemble the runtime"; exit 1; }

. "$repo/deploy/kubernetes/oci_layout.sh"
epoch=$(git -C "$repo" log -1 --format=%ct -- "$here" 2>/dev/null || echo 0)
oci_archive "$work/pause" localhost/pause:test "${epoch:-0}" '{"Entrypoint":["/bin/pause"]}' "$st/opt/k8s/images/pause.tar"
oci_archive "$work/spin" localhost/spin:test "${epoch:-0}" '{"Entrypoint":["/bin/spin"]}' "$st/opt/k8s/images/spin.tar"

cp "$here/config.toml" "$st/etc/containerd/config.toml"
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\ntimeout: 30\n' >"$st/etc/crictl.yaml"
# Host-network pods get copies of these.
printf '127.0.0.1 localhost chameleon-vm\n' >"$st/etc/hosts"
: >"$st/etc/resolv.conf"
# NRI's socket is under /var/run, which is /run (a tmpfs in the guest).
ln -s ../run "$st/var/run"
"$repo/scripts/in-root" --bind "$work" --bind "$dir" -- \
	sh -c 'cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet >"$2"' sh "$st" "$out.$$"
mv -f "$out.$$" "$out"
# Older bundles of other keys go.
find "$dir" -maxdepth 1 -name '*.cpio' ! -name "$key.cpio" -mmin +60 -delete 2>/dev/null || true
log "$(du -h "$out" | cut -f1) in $out"
echo "$out"
