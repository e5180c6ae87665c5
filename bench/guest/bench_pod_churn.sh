#!/bin/sh
# bench/pod_churn's guest side: PODS pods created and removed one after
# another with scx_chameleon running, in ROUNDS rounds alternating between
# containerd with NRI on (scx_chameleon-nri registered, every pod annotated
# chameleon.scx/level=1) and NRI off (the same pods, the runtime restarted
# without NRI), so that both see the same guest over the same time.
# Per pod, one line:
#   pod mode=on|off round=R i=N run_ms=M create_to_running_ms=C tag_ms=T
# run_ms: `crictl run` (sandbox, container, start) as the client waits;
# create_to_running_ms: the runtime's own createdAt to startedAt of the
# container; tag_ms: the tag stored after startedAt (agent log; NRI on).
# Every creation must succeed and each tag be stored (else FAIL).
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/runtime_lib.sh
TEST=bench_pod_churn
PODS=${CHURN_PODS:-50}
ROUNDS=${CHURN_ROUNDS:-4}

sed 's/^\(  *disable = \)false/\1true/' /etc/containerd/config.toml >/tmp/config-nri-off.toml
grep -q 'disable = true' /tmp/config-nri-off.toml || fail "cannot write the NRI-off config"
start_agent --log-level warn,chameleon=info
# Per round: PODS / ROUNDS pods in each mode.
per=$(( (PODS + ROUNDS - 1) / ROUNDS ))
n=0
r=0
while [ $r -lt "$ROUNDS" ]; do
	for mode in on off; do
		if [ $mode = on ]; then
			RUNTIME_CONFIG=/etc/containerd/config.toml start_runtime
			start_plugin
			ann='"chameleon.scx/level":"1"'
		else
			RUNTIME_CONFIG=/tmp/config-nri-off.toml start_runtime
			ann=
		fi
		i=0
		while [ $i -lt $per ]; do
			run_pod "p$mode$r-$i" "$ann" "" 600
			c2r=$(crictl inspect -o go-template --template '{{.status.createdAt}} {{.status.startedAt}}' "$CTR" |
				awk 'function ms(t,  p) { sub(/.*T/, "", t); sub(/Z$/, "", t); split(t, p, ":"); return (p[1] * 3600 + p[2] * 60 + p[3]) * 1000 }
				{ printf "%d", ms($2) - ms($1) }')
			tag=-
			if [ $mode = on ]; then
				tag_latency "$CTR" 10000
				tag=$TAG_MS
			fi
			echo "pod mode=$mode round=$r i=$i run_ms=$RUN_MS create_to_running_ms=$c2r tag_ms=$tag"
			remove_pod "$POD"
			i=$((i + 1))
		done
		[ $mode = off ] || { kill -TERM "$NRI_PID"; wait "$NRI_PID" 2>/dev/null; }
		stop_runtime
	done
	r=$((r + 1))
done
stop_agent
pass
