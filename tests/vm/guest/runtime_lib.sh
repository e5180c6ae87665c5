#!/bin/sh
# The container runtime in the guest (tests/vm/k8s/runtime.sh's archive,
# appended with tests/vm/run --extra): containerd with NRI, driven through
# CRI by crictl, and scx_chameleon's NRI plugin. Sourced after lib.sh.

RUNTIME_LOG=/tmp/containerd.log
NRI_LOG=/tmp/nri.log
PODS=/tmp/pods

cri_up() { crictl info >/dev/null 2>&1; }
nri_synced_more() { [ "$(grep -c 'msg=synchronized' "$NRI_LOG" 2>/dev/null)" -gt "$1" ]; }

# start_runtime: containerd up and answering CRI, the test's images imported.
start_runtime() {
	[ -x /usr/bin/containerd ] || fail "no containerd in the guest (tests/vm/run --extra the runtime archive)"
	mkdir -p /var/lib/containerd /run/containerd /run/nri "$PODS"
	containerd --config /etc/containerd/config.toml >>"$RUNTIME_LOG" 2>&1 &
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
# created and started; sets POD, CTR (ids), CPID (the spinner's host pid),
# CGDIR (its cgroup), T_CREATE and T_STARTED (ms: before the container's
# creation, after its start returned).
run_pod() {
	pod_config "$1" "$2" >"$PODS/$1.pod.json"
	ctr_config spin "$3" "$4" >"$PODS/$1.ctr.json"
	POD=$(crictl runp "$PODS/$1.pod.json") || fail "pod $1: crictl runp failed"
	T_CREATE=$(now_ms)
	CTR=$(crictl create "$POD" "$PODS/$1.ctr.json" "$PODS/$1.pod.json") || fail "pod $1: crictl create failed"
	crictl start "$CTR" >/dev/null || fail "pod $1: crictl start failed"
	T_STARTED=$(now_ms)
	CPID=$(crictl inspect -o go-template --template '{{.info.pid}}' "$CTR" 2>/dev/null)
	CGDIR=/sys/fs/cgroup$(crictl inspect -o go-template --template '{{.info.runtimeSpec.linux.cgroupsPath}}' "$CTR" 2>/dev/null)
	[ -n "$CPID" ] && [ "$CPID" -gt 0 ] 2>/dev/null || fail "pod $1: no pid for container $CTR"
	[ -d "$CGDIR" ] || fail "pod $1: no cgroup $CGDIR"
}

# ctr_state ID: CONTAINER_RUNNING, CONTAINER_EXITED...
ctr_state() { crictl inspect -o go-template --template '{{.status.state}}' "$1" 2>/dev/null; }

# remove_pod ID: stopped and removed with its containers.
remove_pod() {
	crictl stopp "$1" >/dev/null || fail "crictl stopp $1 failed"
	crictl rmp "$1" >/dev/null || fail "crictl rmp $1 failed"
}

# tagged DIR: DIR's own tag as the agent lists it ("" if none).
tagged() { scx_chameleon tags 2>/dev/null | grep -F "$1 (cgroup "; }
