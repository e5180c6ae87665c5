#!/usr/bin/env bash
# deploy/kubernetes/check.sh on the manifests as they are (they pass), and on
# copies broken on purpose, one way each (each must be refused, with the FAIL
# line that says why). Each case prints "ok NAME" or "not ok NAME: why"
# (tests/run counts them as host::k8s_manifest::NAME).
#   tests/host/k8s_manifest_test.sh
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
k8s=$repo/deploy/kubernetes
check=$k8s/check.sh
ds=$k8s/scx-chameleon.yaml
pod=$k8s/examples/annotated-pod.yaml
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

out=$("$check" 2>&1)
rc=$?
if [ "$rc" = 0 ] && grep -q '^ok: 1 namespace(s), 1 service account(s), 1 daemonset(s), 1 example pod(s)' <<<"$out"; then
	echo "ok manifests_pass"
else
	echo "not ok manifests_pass: exit $rc: $out"
fi

# rejects NAME PATTERN FILE SED_SCRIPT: FILE edited by SED_SCRIPT (or, with
# SED_SCRIPT "awk:PROGRAM", by awk) must fail the check with a FAIL line
# matching the extended regex PATTERN.
rejects() {
	local name=$1 want=$2 src=$3 edit=$4 copy=$dir/$1.yaml out rc
	if [[ $edit == awk:* ]]; then
		awk "${edit#awk:}" "$src" >"$copy"
	else
		sed -e "$edit" "$src" >"$copy"
	fi
	if cmp -s "$src" "$copy"; then
		echo "not ok $name: the edit changed nothing (the manifest changed under the test?)"
		return
	fi
	out=$("$check" "$copy" 2>&1)
	rc=$?
	if [ "$rc" = 1 ] && grep -qE "^FAIL .*$want" <<<"$out"; then
		echo "ok $name"
	else
		echo "not ok $name: exit $rc, want a FAIL matching /$want/: $out"
	fi
}

# Strict decoding: what client-side YAML tools let through.
rejects misspelled_field 'unknown field "spec.template.spec.hostPid"' "$ds" 's/hostPID: true/hostPid: true/'
rejects misspelled_nested_field 'unknown field "spec.template.spec.containers\[0\].volumeMounts\[1\].readonly"' "$ds" \
	'/mountPath: \/sys\/kernel\/btf/{n;s/readOnly/readonly/}'
rejects duplicate_field 'key "hostPID" already set' "$ds" 's/^\( *\)hostPID: true/&\n\1hostPID: false/'
rejects wrong_type 'cannot unmarshal|json: ' "$ds" 's/terminationGracePeriodSeconds: 30/terminationGracePeriodSeconds: "30s"/'
rejects bad_quantity 'quantities must match' "$ds" 's/cpu: 50m/cpu: 50 millicores/'
rejects unknown_kind 'not a kind these manifests use' "$ds" '$a ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x'
# What the agent and the plugin need.
rejects no_host_pid 'hostPID is not true' "$ds" '/hostPID: true/d'
rejects not_privileged 'container agent: not privileged' "$ds" \
	'/- name: agent/,/privileged:/s/privileged: true/privileged: false/'
rejects btf_not_mounted 'container agent does not mount volume "btf"' "$ds" \
	'awk:!done && /- name: btf$/ { skip = 3; done = 1 } skip > 0 { skip--; next } { print }'
rejects btf_writable '/sys/kernel/btf is not mounted readOnly' "$ds" \
	'/mountPath: \/sys\/kernel\/btf/{n;d}'
rejects nri_dir_missing 'no hostPath volume for /var/run/nri' "$ds" 's|path: /var/run/nri|path: /run/nri|'
rejects image_version 'want "localhost/scx_chameleon:[0-9]' "$ds" 's|localhost/scx_chameleon:[^ ]*|localhost/scx_chameleon:0.0.0-old|'
rejects pull_always 'imagePullPolicy "Always"' "$ds" '0,/imagePullPolicy: Never/s//imagePullPolicy: Always/'
rejects module_on_by_default 'CHAMELEON_MODULE "on"' "$ds" '/name: CHAMELEON_MODULE/{n;s/"off"/"on"/}'
rejects probe_not_status 'livenessProbe runs' "$ds" '/livenessProbe:/,/command:/s/"status"\]/"tags"]/'
rejects no_toleration 'no toleration' "$ds" '/tolerations:/{N;d}'
rejects control_socket_mismatch 'container nri: --control-socket' "$ds" 's|^\( *- \)/run/scx_chameleon/control.sock|\1/run/other.sock|'
# The example pod's annotations.
rejects unknown_annotation 'annotation chameleon.scx/levle: unknown' "$pod" 's|chameleon.scx/level: "1"|chameleon.scx/levle: "1"|'
rejects level_out_of_range 'annotation chameleon.scx/level: value "4"' "$pod" 's|chameleon.scx/level: "1"|chameleon.scx/level: "4"|'
rejects override_no_such_container 'the pod has no container "solvr"' "$pod" 's|level.container.solver|level.container.solvr|'

# The image's init-container script and the build script parse.
if sh -n "$k8s/image/load-module" 2>/dev/null && bash -n "$k8s/build-image.sh" 2>/dev/null; then
	echo "ok scripts_parse"
else
	echo "not ok scripts_parse: $(sh -n "$k8s/image/load-module" 2>&1; bash -n "$k8s/build-image.sh" 2>&1)"
fi
