# Shared settings for every script. Sourced, never executed.
#
# The kernel version is set here and only here: the toolchain root installs its
# headers and image, the module builds against it and the VM boots it.
KVER=7.3.4+deb13-cloud-amd64

# Other stock kernels the smoke test also runs on (`tests/run`: smoke@<version>).
# Each is downloaded from trixie-backports by scripts/kernels.sh into
# $CACHE_DIR/kernels/<kver>/ (vmlinuz + config); they are not part of the root.
SMOKE_KVERS="6.16.12+deb13-cloud-amd64 6.18.15+deb13-cloud-amd64 7.0.13+deb13-cloud-amd64"

# Debian suite the toolchain root is made from; packages come from its backports.
SUITE=trixie
MIRROR=${SCX_CHAMELEON_MIRROR:-http://deb.debian.org/debian}

# Everything apt installs into the root. Changing this list (or KVER) changes the
# cache key, so a new root is made next time.
ROOT_PACKAGES="clang-19 lld-19 llvm-19 libclang1-19 libbpf-dev bpftool gcc-14 make
libelf-dev zlib1g-dev pkg-config linux-headers-$KVER linux-image-$KVER
qemu-system-x86 busybox stress-ng cpio kmod ca-certificates libc6-dev tmux ncurses-base"

# rustup's cargo, even from a shell that has not sourced ~/.cargo/env.
command -v cargo >/dev/null 2>&1 || PATH=${CARGO_HOME:-$HOME/.cargo}/bin:$PATH

CACHE_DIR=${SCX_CHAMELEON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scx_chameleon}

# Go (the NRI plugin, deploy/kubernetes's manifest check, crictl for the
# runtime test): the host's toolchain as it is (no toolchain download), its
# modules (writable, so the cache can be removed like the rest of it) and
# build cache kept here, go.sum as committed.
export GOMODCACHE=$CACHE_DIR/gomod GOCACHE=$CACHE_DIR/gocache GOTOOLCHAIN=local GOFLAGS="-mod=readonly -modcacherw"
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

# Bump when setup.sh changes how the root is made.
ROOT_RECIPE=1

root_key() {
	printf '%s\n' "$SUITE" "$KVER" "$ROOT_PACKAGES" "$ROOT_RECIPE" |
		sha256sum | cut -c1-16
}
ROOT_DIR=$CACHE_DIR/root-$(root_key)

# Where the image and config of kernel $1 are, as seen inside the root (the
# primary one is installed in the root; the others are bound in from the cache).
KERNELS_DIR=$CACHE_DIR/kernels
kernel_dir() {
	if [ "$1" = "$KVER" ]; then echo /boot; else echo "$KERNELS_DIR/$1"; fi
}
