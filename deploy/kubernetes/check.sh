#!/usr/bin/env bash
# The offline check of the manifests: each YAML document decoded strictly, as
# the API server decodes it, into its k8s.io/api type (an unknown or
# misspelled field, a duplicate key, a wrong type is an error), then checked
# for what the agent and the NRI plugin need (check/main.go: privileged,
# hostPID, each host path mounted where it is used, the image tag = the
# workspace version in Cargo.toml, the status probe, the module off by
# default) and, in the examples, chameleon.scx/* annotations the agent
# accepts. No cluster is needed.
#
#   deploy/kubernetes/check.sh [FILE...]
#       (default: deploy/kubernetes/*.yaml and deploy/kubernetes/examples/*.yaml)
#
# Prints "FAIL <file>: <what>" per problem and exits 1, or one "ok" line.
# Builds check/ with the host's Go (go in PATH, else /usr/local/go/bin/go);
# its modules come from the Go module proxy once, into the cache outside the
# clone ($CACHE_DIR/gomod, scripts/config.sh), verified against check/go.sum.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/scripts/config.sh"

version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' "$repo/Cargo.toml")
[ -n "$version" ] || { echo "check.sh: no version in $repo/Cargo.toml's [workspace.package]" >&2; exit 2; }

go=$(command -v go || echo /usr/local/go/bin/go)
[ -x "$go" ] || { echo "check.sh: no Go toolchain (go in PATH or /usr/local/go/bin/go)" >&2; exit 2; }
# In this clone's build/ (two clones checking at once build their own), again
# only when something in check/ is newer than it.
bin=$repo/build/k8s-check
if [ ! -x "$bin" ] || [ -n "$(find "$here/check" -newer "$bin" -print -quit)" ]; then
	mkdir -p "$repo/build"
	(cd "$here/check" && "$go" build -o "$bin.$$" . && mv -f "$bin.$$" "$bin")
fi

[ $# -gt 0 ] || set -- "$here"/*.yaml "$here"/examples/*.yaml
exec "$bin" -version "$version" "$@"
