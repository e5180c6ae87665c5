#!/bin/sh
# A fused object keeps its lent CPUs while the emulation idles the others
# (Chameleon Fig. 7's situation, on 4 CPUs): a level-1 object {0, 1}, tax
# 0.01, four untagged spinners allowed on every CPU, --emulate high (CPUs 2
# and 3, native, run at a 50 % duty cycle: the module's idle injection
# takes both at once). A spinner displaced onto lent CPU 1 that reaches the
# lending bound may run elsewhere: the guard moves it to CPU 2 or 3, and the
# object stays. A CPU inside an injected idle period is not held away from
# us (preempt.bpf.c, cpu_held): it runs again within milliseconds, and so
# is one whose injection thread has woken and not yet taken it. Counted as
# held, every waiter the guard met then stayed on the lent CPU and split the
# object at the bound.
# Asserted over 6 s: no lending-bound split (our count: only the policy
# knows why it split; nothing here can run on the lent CPU only), the
# owner's CPU time (schedstat) at least 60 %
# of the window (its representative runs at full duty while fused: 75 % of
# a native CPU's time at level 1, Table 2 as the emulate test measures it),
# and every spinner runs.
. /opt/chameleon/guest/lib.sh
TEST=lend_emulated
count_split() { grep -cE "^event +split .*reason=$1" "$AGENT_LOG"; }

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
make_cgroup seq
start_agent --events --emulate high --tag seq=level:1,tax:0.01
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs"
spinners_then_seq 4
wait_log "DEBUG assign pid=$a cpus=\[0, 1\]" 10000 "no object {0, 1} for the sequential task"
sleep 1
b0=$(count_split bound) f0=$(count_events fuse)
shares r 6000 $a $p0 $p1 $p2 $p3
b1=$(count_split bound) f1=$(count_events fuse)
set -- $r
own=$1
bnd=$((b1 - b0)) fus=$((f1 - f0))
reasons=$(grep -E '^event +split ' "$AGENT_LOG" | sed 's/.*reason=\([a-z]*\).*/\1/' | sort | uniq -c | tr -s ' \n' ' ')
ok "in 6 s: owner $own ‰ of the window, spinners $2 / $3 / $4 / $5 ‰ (schedstat); $bnd lending-bound splits, $fus fuses (splits since the start by reason:$reasons)"
[ "$(state)" = enabled ] || fail "scheduler ejected"
for s in $2 $3 $4 $5; do
	[ "$s" -ge 50 ] || fail "a spinner got $s ‰ of the window"
done
[ "$bnd" = 0 ] || fail "$bnd lending-bound splits in 6 s: waiters that may run elsewhere split the object"
[ "$own" -ge 600 ] || fail "the owner got $own ‰ of the window (< 600): its object did not hold"
end_tasks $a $p0 $p1 $p2 $p3
stop_agent
rmmod_proxy
pass
