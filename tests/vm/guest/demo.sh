#!/bin/sh
# The demo (make demo): attach scx_chameleon with cgroup "seq" tagged for a
# level-1 execution object, run a sequential task there next to a parallel
# load, offline and online a CPU on the way, and show what the scheduler did.
. /opt/chameleon/guest/lib.sh
TEST=demo

echo "== kernel $(uname -r), $(nproc) CPUs, SMT pairs: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list) $(cat /sys/devices/system/cpu/cpu2/topology/thread_siblings_list)"
echo "== sched_ext state before: $(state)"
make_cgroup seq
make_cgroup par
echo "== cgroups: seq (id $(stat -c %i /sys/fs/cgroup/seq), tagged level 1, tax 1), par (id $(stat -c %i /sys/fs/cgroup/par), untagged)"
start_agent --events --stats 2 --tag seq=level:1,tax:1
echo "== attached: state=$(state) ops=$(ops)"

echo "== phase 1 (4 s): the sequential task alone: it borrows its SMT sibling"
spin -g /sys/fs/cgroup/seq 12 >/tmp/seq.out &
seq_pid=$!
sleep 4
echo "== phase 2 (4 s): + a task pinned to cpu1 (the borrowed sibling): they take turns"
spin -c 1 4 >/dev/null &
sleep 4
echo "== phase 3: + a parallel load in par, and cpu3 offlined and onlined"
sh -c 'echo $$ >/sys/fs/cgroup/par/cgroup.procs; exec stress-ng --cpu 2 --pipe 1 --timeout 4 -q' &
par_pid=$!
sleep 1
echo 0 >/sys/devices/system/cpu/cpu3/online
sleep 1
echo 1 >/sys/devices/system/cpu/cpu3/online
wait $seq_pid $par_pid
stop_agent

echo
echo "== events from the scheduler (ring buffer), by kind:"
grep '^event ' "$AGENT_LOG" | awk '{ n[$2]++ } END { for (k in n) printf "   %-13s %d\n", k, n[k] }'
echo "== the sequential task (pid $seq_pid): object, first fuses and splits, exit"
grep -E "DEBUG (assign|unassign) pid=$seq_pid" "$AGENT_LOG" | sed 's/^/   /'
grep -E "^event  *(fuse|partial_fuse) .*pid=$seq_pid " "$AGENT_LOG" | head -n 3 | sed 's/^/   /'
grep -E "^event  *split .*pid=$seq_pid " "$AGENT_LOG" | awk '{ print $7 }' | sort | uniq -c | sed 's/^/   split /'
grep -E "^event  *split .*pid=$seq_pid " "$AGENT_LOG" | head -n 3 | sed 's/^/   /'
grep -E "^event  *task_exit .*pid=$seq_pid " "$AGENT_LOG" | sed 's/^/   /'
echo "   fused $(fused_pct $seq_pid)% of its run time"
echo "== CPU hotplug events:"
grep -E "^event  *cpu_o" "$AGENT_LOG" | sed 's/^/   /'
echo "== counters every 2 s:"
grep '^stats ' "$AGENT_LOG" | sed 's/^/   /'
echo "== $(grep '^summary ' "$AGENT_LOG")"
echo "== $(grep 'EXIT' "$AGENT_LOG")"
echo "== sched_ext state after: $(state)"
