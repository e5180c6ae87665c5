#!/bin/sh
# Chameleon Figure 8, as a test of the allocation sequence (no timings): 10
# CPUs (5 cores x 2 threads), four CPU-bound tasks tagged level 2 with the
# weights standing for their speed-ups: two "astar" (1) from the start, then
# "lbm" (2) at a, "sjeng" (3) at b; lbm ends at c, sjeng at d. Expected, as
# in the paper and in the node manager's host replay:
#   start: astar 4, astar 4
#   a:     lbm 4, one astar 4, the other 2
#   b:     sjeng 4, lbm 2, astar 2, astar 2
#   c:     sjeng 4, one astar 4, the other 2
#   d:     astar 4, astar 4
# Object sizes are read from `scx_chameleon status`; at b, where all 10 CPUs
# are in objects, each object is also checked against the kernel over one
# window: its task on the representative status names in 80 % of the
# samples (task_cpu, one sleeping process per task; EEVDF would put it on
# any of the 10) and running at least 800 per mille (schedstat). The lent
# CPUs' idle time is reported: at tax 1 a lent CPU goes back to untagged
# work that wants it (the agent, this test's samplers: CPU 1 idled 537 per
# mille in one run, the others 979-988).
. /opt/chameleon/guest/lib.sh

[ "$(nproc)" = 10 ] || fail "needs 10 CPUs, has $(nproc)"
make_cgroup astar
make_cgroup lbm
make_cgroup sjeng
start_agent --events --tag astar=level:2,weight:1,tax:1 \
	--tag lbm=level:2,weight:2,tax:1 --tag sjeng=level:2,weight:3,tax:1

# Polled once a second: the poller is untagged load too, and under TCG a
# status command every 0.2 s was runnable often enough to count (with one
# other task) as 2 untagged CPUs, leaving sjeng a pair (1 run in ~10).
snapshot() { scx_chameleon status >/tmp/st 2>&1; }
size() {
	s=$(sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p" /tmp/st | awk -F, '{ print NF }')
	echo "${s:-0}"
}
# expect WHAT "PID:SIZE..." (a SIZE of a|b: either, the pair in some order)
expect_sizes() {
	what=$1
	shift
	t0=$(now_ms)
	while :; do
		snapshot
		got= good=1
		for ps in "$@"; do
			p=${ps%%:*} want=${ps#*:}
			got="$got $p:$(size $p)"
			[ "$(size $p)" = "$want" ] || good=0
		done
		[ $good = 1 ] && { ok "$what:$got"; return 0; }
		[ $(( $(now_ms) - t0 )) -lt 15000 ] || { cat /tmp/st; fail "$what: got$got, want $*"; }
		sleep 1
	done
}
# the astar pair in either order: "4 2" sorted
astar_sizes() { echo "$(size $a1) $(size $a2)" | tr ' ' '\n' | sort -n | tr '\n' ' '; }
expect_astars() {
	t0=$(now_ms)
	while :; do
		snapshot
		[ "$(astar_sizes)" = "$2" ] && [ "$(size $3)" = "$4" ] &&
			{ ok "$1: astars $(astar_sizes), pid $3: $4"; return 0; }
		[ $(( $(now_ms) - t0 )) -lt 15000 ] || { cat /tmp/st; fail "$1: astars '$(astar_sizes)', pid $3: $(size $3); want '$2', $4"; }
		sleep 1
	done
}

spin -g /sys/fs/cgroup/astar $LONG >/dev/null &
a1=$!
spin -g /sys/fs/cgroup/astar $LONG >/dev/null &
a2=$!
expect_sizes "start (two astar)" $a1:4 $a2:4

spin -g /sys/fs/cgroup/lbm $LONG >/dev/null &
lbm=$!
expect_astars "a (lbm, weight 2, starts)" "2 4 " $lbm 4

spin -g /sys/fs/cgroup/sjeng $LONG >/dev/null &
sjeng=$!
expect_sizes "b (sjeng, weight 3, starts)" $sjeng:4 $lbm:2 $a1:2 $a2:2

# The kernel's side of b's four objects.
snapshot
lent=
for p in $a1 $a2 $lbm $sjeng; do
	o=$(sed -n "s/^pid $p: .*-> \[\(.*\)\]$/\1/p" /tmp/st | tr -d ' ')
	[ -n "$o" ] || { cat /tmp/st; fail "b: pid $p has no object in status"; }
	eval "rep_$p=${o%%,*}"
	lent="$lent $(echo "${o#*,}" | tr ',' ' ')"
	task_cpu $p ${o%%,*} 20 150 >/tmp/on.$p 2>&1 &
	eval "sampler_$p=\$!"
done
lent_cpus=
for c in $lent; do lent_cpus="$lent_cpus cpu$c"; done
shares k 3000 $a1 $a2 $lbm $sjeng $lent_cpus
for p in $a1 $a2 $lbm $sjeng; do
	eval "wait \$sampler_$p" || fail "b: task_cpu of pid $p failed: $(cat /tmp/on.$p)"
done
set -- $k
for p in $a1 $a2 $lbm $sjeng; do
	eval "r=\$rep_$p"
	read on n </tmp/on.$p
	ok "b: pid $p ran $1 ‰ of 3 s (schedstat), on its representative CPU $r in $on of $n samples (task_cpu)"
	[ "$1" -ge 800 ] || fail "b: pid $p ran $1 ‰ of the window"
	[ "$on" -ge $(( n * 8 / 10 )) ] || fail "b: pid $p was on its representative CPU $r in $on of $n samples"
	shift
done
idles=
for c in $lent; do
	idles="$idles CPU $c $1 ‰,"
	shift
done
ok "b: lent CPUs idle (/proc/stat):${idles%,}"

kill $lbm; wait $lbm 2>/dev/null
expect_astars "c (lbm ends)" "2 4 " $sjeng 4

kill $sjeng; wait $sjeng 2>/dev/null
expect_sizes "d (sjeng ends)" $a1:4 $a2:4

end_tasks $a1 $a2
stop_agent
pass
