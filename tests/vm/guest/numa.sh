#!/bin/sh
# Two NUMA nodes (tests/run boots 8 CPUs on 2 sockets with --numa: node 0 is
# CPUs 0-3, node 1 CPUs 4-7). The agent has the kernel keep idle CPUs per node
# (SCX_OPS_BUILTIN_IDLE_PER_NODE); there the kernel's global idle kfuncs are
# errors that eject the scheduler, so every idle search of the policy must go
# through the per-node ones. Asserted, from the kernel's accounting:
#   a. the guest has the two nodes; the agent says it tracks idle per node;
#      the verifier's count, with the per-node searches live, within the
#      budget of 50,000;
#   b. eight CPU-bound tasks started on node 0, then allowed everywhere, each
#      run >= 60 % of one CPU over 3 s (schedstat) and node 1's CPUs idle
#      <= 25 % (/proc/stat): idle searches reach the other node;
#   c. a pipe ping-pong load (wakeups: select_cpu's search) and a task pinned
#      to CPU 5 (a search within its affinity) run beside them;
#   d. a level-2 tagged task allowed on CPUs 4-7 gets them, node 1 whole, as
#      its object;
#   e. CPU 7 of node 1 goes offline and comes back under that load;
#   f. SIGTERM detaches cleanly: sched_ext stayed enabled and ours at every
#      step, so no idle search was refused by the kernel;
#   g. with --disable-numa (one idle mask, as scx_bpfland's flag) the agent
#      says so and the eight tasks of (b) spread the same.
. /opt/chameleon/guest/lib.sh

nodes=$(cat /sys/devices/system/node/online 2>/dev/null)
[ "$nodes" = 0-1 ] || fail "a: want NUMA nodes 0-1 online, have '$nodes' (boot with --sockets 2 --numa)"
n1=$(cat /sys/devices/system/node/node1/cpulist)
[ "$n1" = 4-7 ] || fail "a: node 1 has CPUs '$n1', want 4-7"
ok "a: nodes $nodes, node 1 CPUs $n1"

enabled() {
	[ "$(state)" = enabled ] || fail "$1: sched_ext '$(state)'"
	ops_is_chameleon || fail "$1: root/ops '$(ops)'"
	agent_alive || fail "$1: the agent exited"
}

make_cgroup seq
taskset -p 0x1 $$ >/dev/null || fail "cannot pin the test shell"
start_agent --tag seq=level:2,tax:0.01
grep -q "2 NUMA nodes: idle CPUs tracked per node" "$AGENT_LOG" ||
	fail "a: the agent did not set per-node idle tracking: $(grep -m1 -i numa "$AGENT_LOG")"
ok "a: $(grep -m1 -o '2 NUMA nodes.*' "$AGENT_LOG")"
# The per-node searches are code the verifier walks only here (with one node
# the loaded program's constants prune them): the budget holds with them.
wait_log "^verifier: total_insns=" 2000 "a: the agent printed no verifier line"
total=$(sed -n 's/^verifier: total_insns=\([0-9]*\).*/\1/p' "$AGENT_LOG" | head -n 1)
ok "a: verifier: $total instructions with per-node idle masks"
[ "$total" -le 50000 ] || fail "a: verifier: $total instructions > the budget of 50000 with per-node idle masks"

# --- b: spread from node 0 to node 1 ----------------------------------------
# spread STEP: eight spinners started on node 0, then allowed everywhere;
# their shares and node 1's idle over 3 s. Leaves them running ($pids).
spread() {
	pids=
	for i in 1 2 3 4 5 6 7 8; do
		taskset 0x0f spin $LONG >/dev/null &
		pids="$pids $!"
	done
	usleep 300000
	for p in $pids; do taskset -p 0xff "$p" >/dev/null || fail "$1: cannot widen $p"; done
	usleep 700000
	shares s 3000 $pids cpu4 cpu5 cpu6 cpu7
	t=$(echo $s | cut -d' ' -f1-8) i=$(echo $s | cut -d' ' -f9-)
	ok "$1: eight tasks from node 0, widened: $t ‰ of one CPU; node 1 idle $i ‰"
	for v in $t; do [ "$v" -ge 600 ] || fail "$1: a task ran $v ‰ of a CPU ($t)"; done
	for v in $i; do [ "$v" -le 250 ] || fail "$1: a CPU of node 1 idled $v ‰ ($i): tasks did not reach it"; done
	enabled "$1"
}
spread b

# --- c: wakeups and a pinned task beside them -----------------------------------
stress-ng --pipe 2 --timeout 30 >/dev/null 2>&1 &
sng=$!
spin -c 5 $LONG >/dev/null &
pin=$!
usleep 500000
shares s 2000 $pin
ok "c: pipe load and a task pinned to CPU 5 ($s ‰ of a CPU among the eight)"
[ "$s" -ge 200 ] || fail "c: the task pinned to CPU 5 ran $s ‰ of 2 s"
kill -0 $sng || fail "c: the pipe load ended early"
enabled c

# --- d: an object on node 1 ------------------------------------------------------
taskset -c 4-7 spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
has_node1() { [ "$(object $a)" = "4, 5, 6, 7" ]; }
until_ok 20000 "d: pid $a has [$(object $a)], want [4, 5, 6, 7]" has_node1
ok "d: pid $a holds [$(object $a)] after $TOOK ms"
enabled d

# --- e: hotplug on node 1 under the load ------------------------------------------
echo 0 >/sys/devices/system/cpu/cpu7/online || fail "e: cannot offline cpu7"
wait_online 0-6 30000 "e: offline 7"
enabled "e: cpu7 offline"
echo 1 >/sys/devices/system/cpu/cpu7/online || fail "e: cannot online cpu7"
wait_online 0-7 30000 "e: online 7"
usleep 500000
enabled "e: cpu7 back"
ok "e: cpu7 offline and back with the load running"

end_tasks $pids $pin $a
kill $sng 2>/dev/null
wait $sng 2>/dev/null

# --- f: detach --------------------------------------------------------------------
enabled f
stop_agent
grep -q "unregistered from user space" "$AGENT_LOG" || fail "f: exit reason: $(grep EXIT "$AGENT_LOG")"

# --- g: --disable-numa --------------------------------------------------------------
start_agent --disable-numa
grep -q "2 NUMA nodes: one idle mask for the machine" "$AGENT_LOG" ||
	fail "g: --disable-numa not taken: $(grep -m1 -i numa "$AGENT_LOG")"
spread g
end_tasks $pids
stop_agent
pass
