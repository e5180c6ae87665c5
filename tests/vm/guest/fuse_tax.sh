#!/bin/sh
# Cluster scheduling (2), Chameleon Figure 3: task A (level 1, object {0,1})
# and task B pinned to CPU 1, both CPU-bound for 20 s. The fused share of A
# follows the tax: <= 5% at 100, 30..70% at 1, >= 80% at 0.01; B makes
# progress every time and the scheduler is never ejected. The fused share,
# our own count, is checked against the kernel's: B runs only while CPU 1 is
# not lent (schedstat: B's share + A's fused share ~ 100 %), a lent CPU 1
# idles (/proc/stat's absolute idle ~ A's fused share), and the two readings
# add up to the window.
. /opt/chameleon/guest/lib.sh

# Fuses of A preempt B on CPU 1, so they wait for CPU 1: every reported event
# must carry CPU 1's own time (local_ns), which lies inside its end-to-end
# latency (a lower bound when superseded, so those are left out).
check_local_times() {
	r=$(grep -E "^event  *(fuse|split) .*cpus=0,1 " "$AGENT_LOG" | grep -v superseded | awk '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		v["latency_ns"] > v["cost_ns"] { waited++; if (v["local_ns"] > 0) timed++ }
		v["local_ns"] + 0 > v["latency_ns"] + 0 { bad++ }
		END { printf "%d %d %d\n", waited, timed, bad }')
	set -- $r
	ok "local times: $2 of $1 waited-for events timed on the borrowed CPU, $3 outside their latency"
	[ "$1" -gt 0 ] || fail "no fuse or split waited for CPU 1"
	[ "$3" -eq 0 ] || fail "$3 events with local_ns > latency_ns"
	[ "$2" -eq "$1" ] || fail "only $2 of $1 waited-for events have local_ns"
}

make_cgroup seq
# Reference: B's work in 2 s alone on CPU 1, to express B's progress.
solo=$(spin -c 1 2 | sed -n 's/.*loops=//p')
fused_all=
for case in "100 0 5" "1 30 70" "0.01 80 100"; do
	set -- $case
	tax=$1 lo=$2 hi=$3
	start_agent --events --tag seq=level:1,tax:$tax
	spin -c 1 21 >/tmp/b.out &
	b=$!
	sleep 0.5
	spin -g /sys/fs/cgroup/seq 20 >/tmp/a.out &
	a=$!
	# The kernel's view over 18 of A's 20 s: CPU 1's absolute idle time
	# and B's schedstat, in one window of the monotonic clock.
	shares r 18000 $b cpu1
	still_running $a $b
	set -- $r
	bpm=$1 idlepm=$2
	wait $a || fail "A failed (tax $tax)"
	wait $b || fail "B failed (tax $tax)"
	[ "$(state)" = enabled ] || fail "scheduler ejected during tax $tax"
	agent_alive || fail "agent died during tax $tax"
	stop_agent
	pct=$(fused_pct $a)
	bl=$(sed -n 's/.*loops=//p' /tmp/b.out)
	ok "tax $tax: A fused $pct% of 20 s ($(count_events fuse) fuses, $(count_events split) splits); B did $bl loops in 21 s ($solo in 2 s alone)"
	long=$(grep -E '^event +split ' "$AGENT_LOG" | sed 's/.*fused_ns=\([0-9]*\).*/\1/' | sort -rn | head -n 1)
	ok "tax $tax: longest object $(( ${long:-0} / 1000000 )) ms"
	ok "tax $tax, the kernel's view: CPU 1 idle $idlepm ‰, B ran $bpm ‰ of the time (schedstat)"
	if [ "$pct" -lt "$lo" ] || [ "$pct" -gt "$hi" ]; then
		echo "splits by reason: $(grep -E '^event +split ' "$AGENT_LOG" | sed 's/.*reason=\([a-z]*\).*/\1/' | sort | uniq -c | tr '\n' ' ')"
		echo "longest objects:"
		grep -E '^event +split ' "$AGENT_LOG" | sed 's/.*fused_ns=\([0-9]*\).*/\1 &/' | sort -rn | head -n 3 | cut -d' ' -f2-
		fail "tax $tax: A fused $pct%, expected $lo..$hi%"
	fi
	# B is always runnable on CPU 1, so the lending bound (50 ms) ends
	# every object; 10x leaves room for TCG. An object lost its CPU to the
	# guard mid-fuse once and stayed fused 4.9 s (REP_FUSING).
	[ "${long:-0}" -le 500000000 ] || fail "tax $tax: an object lived $(( long / 1000000 )) ms while B waited for CPU 1"
	[ "${bl:-0}" -gt 0 ] || fail "tax $tax: B made no progress"
	[ "$bpm" -ge 50 ] || fail "tax $tax: B ran only $bpm ‰ of the time on CPU 1"
	# Only B (and CPU 1's kthreads) may run on CPU 1, and lent time is idle
	# time. B's schedstat is exact: A's fused share and B's make up the
	# window within 15 points. Here CPU 1's idle reads high, about 4 ms
	# per lend (idle + B over one window: 988-991 ‰ at tax 100, 2 lends a
	# second; 1055-1062 ‰ at 0.01, 15 a second; 1134-1196 ‰ at 1, 45 a
	# second; cause not found: trace.sh, without --events, read 1015 ‰ at
	# 42 a second). So idle must agree with the fused share and make up the
	# window with B at tax 100 (within 80 ‰) and 0.01 (within 120 ‰, twice
	# the excess seen); at tax 1 only "lent time shows as idle" is held.
	if [ "$tax" = 1 ]; then
		[ "$idlepm" -ge $(( pct * 10 - 150 )) ] || fail "tax $tax: CPU 1 idle only $idlepm ‰ but A fused $pct%: our count disagrees with /proc/stat"
	else
		tol=80; [ "$tax" = 0.01 ] && tol=120
		accounts_for "tax $tax: CPU 1 (B pinned there)" "$idlepm" "$bpm" $tol
		d=$(( idlepm / 10 - pct )); [ $d -lt 0 ] && d=$(( -d ))
		[ "$d" -le 15 ] || fail "tax $tax: CPU 1 idle $idlepm ‰ but A fused $pct%: our count disagrees with /proc/stat"
	fi
	d=$(( 100 - pct - bpm / 10 )); [ $d -lt 0 ] && d=$(( -d ))
	[ "$d" -le 15 ] || fail "tax $tax: B ran $bpm ‰ of the time but A fused $pct% (CPU 1 lent): disagree"
	[ "$tax" = 1 ] && check_local_times
	fused_all="$fused_all $pct"
done
# The figure's ordering: the lower the tax, the more A fuses.
set -- $fused_all
[ "$3" -gt "$2" ] && [ "$2" -gt "$1" ] || fail "fused shares at tax 100, 1, 0.01: $*; want increasing"
ok "ordering holds: A fused $1% < $2% < $3% at tax 100, 1, 0.01"
pass
