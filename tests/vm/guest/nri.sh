#!/bin/sh
# Kubernetes: a pod asks for an execution object by annotation, through the
# container runtime's NRI (Debian's containerd 1.7 with runc, driven through
# CRI by crictl; tests/vm/k8s/runtime.sh), and scx_chameleon-nri.
#   a: a pod annotated level 1, its container on cpuset 2-3: the container's
#      cgroup is tagged within 1 s of its start, the spinner in it gets the
#      object [2, 3], and by the kernel's accounting CPU 3 idles;
#   b: a container on cpuset 1-2 (one CPU of each pair): tagged, and never an
#      object (it would hold a CPU outside its cpuset), and it runs;
#   c: an invalid annotation: the container runs, untagged; the plugin logs
#      the reason with the pod's and container's names; the agent counts it
#      (chameleon_nri_rejected_total{reason="level"});
#   d: the pod removed: no tag, no object, no requester left;
#   e: the plugin killed (-9) while a pod is created, then started again:
#      the runtime created the pod without it, and Synchronize tags it;
#   f: the agent restarted, then the runtime: the tag stays (it is on the
#      cgroup), the object comes back, the plugin registers again;
#   g: 4 pods created and removed in a loop, every other one annotated:
#      every creation succeeds, each annotated container is tagged, and
#      nothing is left (bench/pod_churn does 50, and times them against a
#      run with NRI off);
#   h: the DaemonSet's image (deploy/kubernetes/build-image.sh) imports into
#      containerd under its name, and its binaries run in a container.
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/runtime_lib.sh
TEST=nri
CHURN=${NRI_CHURN:-4}

# (predicates for until_ok, which runs them in this shell)
level1() { tagged "$1" | grep -q level=1; }
untagged_all() { [ -z "$(scx_chameleon tags 2>/dev/null | grep -F /kubepods/)" ]; }
no_requester() { ! scx_chameleon status | grep -q "^pid ${1:-}"; }
synced() { [ "$(grep -c 'msg=synchronized' "$NRI_LOG")" -ge "$1" ]; }

start_agent --events
start_runtime
start_plugin

# a
run_pod a '"chameleon.scx/level":"1"' 2-3 600
tag_latency "$CTR" 10000
ok "a: pod a's container (pid $CPID) tagged $TAG_MS ms after it started (the runtime's startedAt against the agent's log; crictl run took $RUN_MS ms): $(tagged $CGDIR)"
[ "$TAG_MS" -le 1000 ] || fail "a: tagged $TAG_MS ms after the container's start (want within 1 s)"
wait_object $CPID "2, 3" "a: the spinner's object"
idle_over i3 3 2
ok "a: object [2, 3]; CPU 3 (lent) idle $i3 % of 2 s"
[ "$i3" -ge 80 ] || fail "a: the lent CPU 3 was idle only $i3 % (want >= 80)"
A_POD=$POD A_CTR=$CTR A_PID=$CPID A_CG=$CGDIR

# b
run_pod b '"chameleon.scx/level":"1"' 1-2 600
until_ok 10000 "b: never tagged" level1 $CGDIR
t0=$(now_ms)
while [ $(( $(now_ms) - t0 )) -lt 3000 ]; do
	o=$(object $CPID)
	[ -z "$o" ] || fail "b: pinned to cpuset 1-2, the spinner got the object [$o]"
	nap 0.2
done
r0=$(awk '{ print $1 }' /proc/$CPID/schedstat)
nap 1
r1=$(awk '{ print $1 }' /proc/$CPID/schedstat)
ok "b: cpuset 1-2: tagged, no object in 3 s (status: $(scx_chameleon status | grep "^pid $CPID:")), ran $(( (r1 - r0) / 1000000 )) ms of the last 1 s"
[ $(( r1 - r0 )) -gt 100000000 ] || fail "b: the spinner ran only $(( (r1 - r0) / 1000000 )) ms in 1 s"
remove_pod "$POD"

# c
run_pod c '"chameleon.scx/level":"7","chameleon.scx/tax":"0.5"' "" 600
until_ok 10000 "c: the refusal was never logged" grep -q "tag refused.*pod default/c container spin.*reason=level" "$NRI_LOG"
[ "$(ctr_state "$CTR")" = CONTAINER_RUNNING ] || fail "c: the container is $(ctr_state "$CTR"), not running"
[ -z "$(tagged $CGDIR)" ] || fail "c: tagged anyway: $(tagged $CGDIR)"
n=$(scx_chameleon metrics | sed -n 's/^chameleon_nri_rejected_total{reason="level"} //p')
ok "c: level 7 refused, the container runs untagged; logged: $(grep "tag refused.*pod default/c" "$NRI_LOG" | tail -n 1 | cut -c1-200); counted $n"
[ "$n" = 1 ] || fail "c: chameleon_nri_rejected_total{reason=\"level\"} is '$n', want 1"
remove_pod "$POD"

# d
remove_pod "$A_POD"
until_ok 5000 "d: pid $A_PID still a requester after its pod was removed" no_requester "$A_PID:"
[ ! -d "$A_CG" ] || [ -z "$(tagged "$A_CG")" ] || fail "d: $A_CG still tagged"
[ -z "$(scx_chameleon tags 2>/dev/null | grep -F /kubepods/)" ] || fail "d: tags left: $(scx_chameleon tags | grep -F /kubepods/)"
ok "d: pod a removed: no tag, no object, no requester (status: $(scx_chameleon status | grep -c '^pid ') requesters)"

# e
kill -KILL "$NRI_PID"
wait "$NRI_PID" 2>/dev/null
run_pod e '"chameleon.scx/level":"1"' 2-3 600
[ "$(ctr_state "$CTR")" = CONTAINER_RUNNING ] || fail "e: created without the plugin, the container is $(ctr_state "$CTR")"
[ -z "$(tagged $CGDIR)" ] || fail "e: tagged with no plugin running"
start_plugin
until_ok 5000 "e: the restarted plugin did not tag the running container" level1 $CGDIR
wait_object $CPID "2, 3" "e: after the plugin's Synchronize"
ok "e: plugin killed, pod e created without it, the restarted plugin's Synchronize tagged it: $(tagged $CGDIR)"

# f
stop_agent
[ "$(ctr_state "$CTR")" = CONTAINER_RUNNING ] || fail "f: the container stopped with the agent"
start_agent --events
until_ok 5000 "f: the tag was lost across the agent's restart" level1 $CGDIR
wait_object $CPID "2, 3" "f: after the agent's restart"
ok "f: agent restarted: the tag stayed on the cgroup, the object came back"
stop_runtime
start_runtime
until_ok 30000 "f: the plugin did not register again with the restarted runtime" \
	synced 3
tagged $CGDIR | grep -q level=1 || fail "f: the tag was lost across the runtime's restart"
[ "$(ctr_state "$CTR")" = CONTAINER_RUNNING ] || fail "f: the container is $(ctr_state "$CTR") after the runtime's restart"
ok "f: runtime restarted: the plugin registered again (synchronized $(grep -c 'msg=synchronized' $NRI_LOG) times), the tag stayed"
remove_pod "$POD"

# g
t0=$(now_ms)
i=0
while [ $i -lt "$CHURN" ]; do
	if [ $((i % 2)) = 0 ]; then ann='"chameleon.scx/level":"1"'; else ann=; fi
	run_pod "g$i" "$ann" "" 600
	[ "$(ctr_state "$CTR")" = CONTAINER_RUNNING ] || fail "g: pod g$i's container is $(ctr_state "$CTR")"
	[ -z "$ann" ] || tag_latency "$CTR" 5000
	remove_pod "$POD"
	i=$((i + 1))
done
until_ok 5000 "g: tags left after the churn: $(scx_chameleon tags 2>/dev/null | grep -F /kubepods/ | head -n 3)" untagged_all
until_ok 5000 "g: requesters left after the churn" no_requester
[ -z "$(crictl ps -aq)" ] || fail "g: containers left: $(crictl ps -a)"
ok "g: $CHURN pods created and removed ($(( $(now_ms) - t0 )) ms), every creation succeeded, the annotated tagged; nothing left"
grep -q 'level=ERROR' "$NRI_LOG" && fail "the plugin logged an error: $(grep 'level=ERROR' "$NRI_LOG" | head -n 2)"

# h
if [ -f /opt/k8s/deploy/image.tar ]; then
	name=$(ctr -n k8s.io images import /opt/k8s/deploy/image.tar 2>&1 | sed -n 's/^unpacking \(localhost\/scx_chameleon:[^ ]*\) .*/\1/p')
	[ -n "$name" ] || fail "h: the DaemonSet's image did not import: $(ctr -n k8s.io images import /opt/k8s/deploy/image.tar 2>&1 | tail -n 2)"
	crictl images | grep -q "localhost/scx_chameleon" || fail "h: CRI does not list $name"
	v=$(ctr -n k8s.io run --rm --no-pivot --snapshotter native "$name" image-check /usr/bin/scx_chameleon -V 2>&1 | tail -n 1)
	case $v in scx_chameleon*) ;; *) fail "h: scx_chameleon -V in $name: $v" ;; esac
	ctr -n k8s.io run --rm --no-pivot --snapshotter native "$name" image-check-nri /usr/bin/scx_chameleon-nri --help 2>&1 | grep -q chameleon.scx ||
		fail "h: scx_chameleon-nri --help in $name failed"
	ok "h: $name imported (CRI lists it); in a container: $v; scx_chameleon-nri runs"
else
	fail "h: no DaemonSet image in the guest (tests/run builds it with deploy/kubernetes/build-image.sh)"
fi

kill -TERM "$NRI_PID"
wait "$NRI_PID" 2>/dev/null
stop_runtime
stop_agent
pass
