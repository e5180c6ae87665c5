#!/bin/sh
# The demo (make demo): attach scx_chameleon, run a short mixed workload in two
# cgroups (CPU hogs, a pipe ping-pong, a CPU offlined and onlined mid-run), and
# show what the scheduler reported.
. /opt/chameleon/guest/lib.sh
TEST=demo

echo "== kernel $(uname -r), $(nproc) CPUs, SMT siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"
echo "== sched_ext state before: $(state)"
start_agent --events --stats 2
echo "== attached: state=$(state) ops=$(ops)"

mkdir -p /sys/fs/cgroup/seq /sys/fs/cgroup/par
echo "== cgroups: seq (id $(stat -c %i /sys/fs/cgroup/seq)), par (id $(stat -c %i /sys/fs/cgroup/par))"
sh -c 'echo $$ >/sys/fs/cgroup/seq/cgroup.procs; exec stress-ng --cpu 1 --timeout 8 -q' &
sh -c 'echo $$ >/sys/fs/cgroup/par/cgroup.procs; exec stress-ng --cpu 3 --pipe 1 --timeout 8 -q' &
sleep 3
echo "== offlining cpu3 under load"
echo 0 >/sys/devices/system/cpu/cpu3/online
sleep 1
echo 1 >/sys/devices/system/cpu/cpu3/online
echo "== cpu3 back online; state=$(state)"
wait %2 %3 2>/dev/null
sleep 1
stop_agent

echo
echo "== events from the scheduler (ring buffer), by kind:"
grep '^event ' "$AGENT_LOG" | awk '{ n[$2]++ } END { for (k in n) printf "   %-12s %d\n", k, n[k] }'
echo "== events of the workload's cgroups and of CPU hotplug:"
seq_id=$(stat -c %i /sys/fs/cgroup/seq) par_id=$(stat -c %i /sys/fs/cgroup/par)
grep -E "^event .*(cpu_o|cgroup=($seq_id|$par_id)$)" "$AGENT_LOG" | head -n 20 | sed 's/^/   /'
echo "== counters every 2 s (enqueue, direct to idle CPU, dispatch, steal, kick, busy):"
grep '^stats ' "$AGENT_LOG" | sed 's/^/   /'
echo "== $(grep '^summary ' "$AGENT_LOG")"
echo "== $(grep 'EXIT' "$AGENT_LOG")"
echo "== sched_ext state after: $(state)"
