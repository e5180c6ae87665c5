#!/bin/sh
# The container runtime in the guest (tests/vm/k8s/runtime.sh's archive,
# appended with tests/vm/run --extra): containerd with NRI, driven through
# CRI by crictl, and scx_chameleon's NRI plugin. Sourced after lib.sh.

RUNTIME_LOG=/tmp/containerd.log
NRI_LOG=/tmp/nri.log
PODS=/tmp/pods

# On a failure (lib.sh fail): the plugin's and containerd's last lines.
runtime_evidence() {
	echo "--- NRI plugin log (last 15 lines) ---"
	tail -n 15 "$NRI_LOG" 2>/dev/null
	echo "--- containerd log (last 10 lines) ---"
	tail -n 10 "$RUNTIME_LOG" 2>/dev/null
}
FAIL_EVIDENCE=runtime_evidence

cri_up() { crictl info >/dev/null 2>&1; }
nri_synced_more() { [ "$(grep -c 'msg=synchronized' "$NRI_LOG" 2>/dev/null)" -gt "$1" ]; }

# start_runtime: containerd up and answering CRI, the test's images imported
# (RUNTIME_CONFIG: another config file).
start_runtime() {
	[ -x /usr/bin/containerd ] || fail "no containerd in the guest (tests/vm/run --extra the runtime archive)"
	mkdir -p /var/lib/containerd /run/containerd /run/nri "$PODS"
	containerd --config "${RUNTIME_CONFIG:-/etc/containerd/config.toml}" >>"$RUNTIME_LOG" 2>&1 &
	RUNTIME_PID=$!
	until_ok 60000 "containerd did not answer CRI: $(tail -n 3 "$RUNTIME_LOG" | tr '\n' '|')" cri_up
	for img in /opt/k8s/images/*.tar; do
		[ -n "$(ctr -n k8s.io images ls -q 2>/dev/null | grep -F "localhost/$(basename "$img" .tar):test")" ] && continue
		ctr -n k8s.io images import "$img" >/dev/null 2>&1 || fail "cannot import $img"
	done
	ok "containerd $(containerd --version | awk '{ print $3 }') up (pid $RUNTIME_PID), images: $(crictl images -q 2>/dev/null | wc -l)"
}

# stop_runtime: containerd stopped (the shims and their containers stay).
stop_runtime() {
	kill -TERM "$RUNTIME_PID" 2>/dev/null
	wait "$RUNTIME_PID" 2>/dev/null
	RUNTIME_PID=
}

# start_plugin: scx_chameleon-nri registered with containerd (its log says
# "synchronized" once the runtime has handed it what runs).
start_plugin() {
	_nm=$(grep -c 'msg=synchronized' "$NRI_LOG" 2>/dev/null || true)
	scx_chameleon-nri --verbose >>"$NRI_LOG" 2>&1 &
	NRI_PID=$!
	until_ok 30000 "the NRI plugin did not synchronize: $(tail -n 3 "$NRI_LOG" | tr '\n' '|')" nri_synced_more "${_nm:-0}"
	ok "NRI plugin registered (pid $NRI_PID): $(grep 'msg=synchronized' "$NRI_LOG" | tail -n 1 | sed 's/.*msg=synchronized //')"
}

# pod_config NAME ANNOTATIONS: a host-network pod's CRI config on stdout.
# ANNOTATIONS is JSON members ('"chameleon.scx/level":"1"', or empty). Its
# cgroup parent is the cgroupfs driver's /kubepods/burstable/pod<uid>.
pod_config() {
	printf '{"metadata":{"name":"%s","namespace":"default","uid":"uid-%s","attempt":0},' "$1" "$1"
	printf '"annotations":{%s},"log_directory":"%s/%s",' "$2" "$PODS" "$1"
	printf '"linux":{"cgroup_parent":"/kubepods/burstable/pod-uid-%s",' "$1"
	printf '"security_context":{"namespace_options":{"network":2,"pid":1}}}}\n'
}

# ctr_config NAME CPUSET SECONDS: a container running the spinner for
# SECONDS, on CPUSET ("" for any).
ctr_config() {
	printf '{"metadata":{"name":"%s"},"image":{"image":"localhost/spin:test"},' "$1"
	printf '"args":["%s"],"log_path":"%s.log",' "$3" "$1"
	printf '"linux":{"resources":{"cpu_shares":1024%s}}}\n' "${2:+,\"cpuset_cpus\":\"$2\"}"
}

# run_pod NAME ANNOTATIONS CPUSET SECONDS: a pod with one container "spin"
# created and started (one `crictl run`: each crictl exec costs about a
# second under TCG); sets CTR and POD (ids), CPID (the spinner's host pid),
# CGDIR (its cgroup) and RUN_MS (how long the run took).
run_pod() {
	pod_config "$1" "$2" >"$PODS/$1.pod.json"
	ctr_config spin "$3" "$4" >"$PODS/$1.ctr.json"
	_t0=$(now_ms)
	CTR=$(crictl run --no-pull "$PODS/$1.ctr.json" "$PODS/$1.pod.json") || fail "pod $1: crictl run failed"
	RUN_MS=$(( $(now_ms) - _t0 ))
	set -- "$1" $(crictl inspect -o go-template \
		--template '{{.info.pid}} {{.info.sandboxID}} {{.info.runtimeSpec.linux.cgroupsPath}}' "$CTR" 2>/dev/null)
	CPID=$2 POD=$3 CGDIR=/sys/fs/cgroup$4
	[ -n "$CPID" ] && [ "$CPID" -gt 0 ] 2>/dev/null || fail "pod $1: no pid for container $CTR"
	[ -n "$POD" ] || fail "pod $1: no sandbox for container $CTR"
	[ -d "$CGDIR" ] || fail "pod $1: no cgroup $CGDIR"
}

# ctr_state ID: CONTAINER_RUNNING, CONTAINER_EXITED...
ctr_state() { crictl inspect -o go-template --template '{{.status.state}}' "$1" 2>/dev/null; }

# remove_pod ID: stopped and removed with its containers.
remove_pod() {
	crictl rmp -f "$1" >/dev/null || fail "crictl rmp -f $1 failed"
}

# tag_latency ID MS: how many ms after container ID started (its start time
# as the runtime records it, status.startedAt) the agent logged storing its
# cgroup's tag (negative: before, at its creation), both the guest's wall
# clock; waits MS ms at most for the tag (reading the agent's log every
# 20 ms: `scx_chameleon tags`'s exec alone takes longer under TCG). Sets
# TAG_MS.
_tag_line() { grep -m 1 "INFO tagged /sys/fs/cgroup/.*$1 " "$AGENT_LOG"; }
tag_latency() {
	_t0=$(now_ms)
	until [ -n "$(_tag_line "$1")" ]; do
		[ $(( $(now_ms) - _t0 )) -lt "$2" ] || fail "container $1: no tag stored within $2 ms"
		nap 0.02
	done
	_tt=$(_tag_line "$1" | cut -d' ' -f1)
	_ts=$(crictl inspect -o go-template --template '{{.status.startedAt}}' "$1" 2>/dev/null)
	# (RFC 3339 UTC times of one day: the ms since its midnight, each)
	TAG_MS=$(echo "$_tt $_ts" | awk '
		function ms(t,  p) { sub(/.*T/, "", t); sub(/Z$/, "", t); split(t, p, ":"); return (p[1] * 3600 + p[2] * 60 + p[3]) * 1000 }
		{ d = ms($1) - ms($2); if (d < -43200000) d += 86400000; printf "%d", d }')
	[ -n "$TAG_MS" ] || fail "container $1: cannot read its start ($_ts) or tag ($_tt) time"
}

# tagged DIR: DIR's own tag as the agent lists it ("" if none).
tagged() { scx_chameleon tags 2>/dev/null | grep -F "$1 (cgroup "; }
