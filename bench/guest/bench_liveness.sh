#!/bin/sh
# Benchmark (not a test): the times the VM tests only wait for (liveness,
# 30 s) and print, with repeats, side by side with a reference measured the
# same way in the same boot. Driven by bench/liveness_times.
#   bench_liveness.sh ROUNDS
# 1. Detach: kill -9 of the agent -> sched_ext disabled (sigkill.sh), against
#    SIGTERM -> disabled (the agent's own orderly exit), each with a spinner
#    on every CPU; both timed from the shell: the kill, then sched_state
#    polling the state every 0.2 ms (the fork of sched_state is in both).
# 2. Live tag: `scx_chameleon tag` starts -> the task's fuse event (BPF
#    ts_ns; tags_live.sh), against the CLI's own round trip (the CLI returns
#    once the agent applied the tag, often after the fuse).
# 3. Node manager (node_manager.sh, 8 CPUs): three level-2 tasks hold 4, 2
#    and 2 CPUs; the one with 4 is killed: the agent's figure (BPF exit event
#    -> map updated, its "rebalanced ... after_us"), against the shell's view
#    of the same change (kill -> `status` lists 4 and 4, polled every 50 ms).
# 4. IRQs (proxy_stress.sh): park 2-3 (hold-off 60 s, a proxy_ctl session) -> IRQ 4's
#    affinity off CPU 2 (the module's deferred work) and effective there,
#    against an affinity written by hand (1 -> 2) -> effective (the IRQ core
#    alone); polled every 10 ms, printing a line each time (an IO-APIC IRQ
#    moves at its next interrupt).
. /opt/chameleon/guest/lib.sh
TEST=bench_liveness
rounds=${1:-10}
[ "$(nproc)" = 8 ] || fail "needs 8 CPUs, has $(nproc)"
ko=/opt/chameleon/chameleon_proxy.ko
irq=4

# pct FILE P: the P-th percentile of the numbers in FILE (nearest rank).
pct() {
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		i = int(p / 100 * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
ms() { awk -v n="$1" 'BEGIN { if (n == "-") print "-"; else printf "%.2f", n / 1000 }'; }
row() {
	printf 'BENCH %-56s %4s %9s %9s %9s\n' "$1" "$(grep -c . "$2")" \
		"$(ms "$(pct "$2" 50)")" "$(ms "$(pct "$2" 99)")" "$(ms "$(pct "$2" 100)")"
}
# us_since T0_NS: microseconds from T0_NS (now_ns) to now.
us_since() { echo $(( ($(now_ns) - $1) / 1000 )); }
rm -f /tmp/b.*

# --- 1. Detach ---
# The spinners start once the agent is up (loading it on 8 busy vCPUs of one
# emulator thread took over 30 s).
for sig in KILL TERM; do
	r=0
	while [ $r -lt "$rounds" ]; do
		start_agent
		load=
		i=0
		while [ $i -lt "$(nproc)" ]; do spin $LONG >/dev/null & load="$load $!"; i=$((i + 1)); done
		sleep 1
		t0=$(now_ns)
		kill -$sig "$AGENT_PID"
		sched_state disabled 30000 >/dev/null || fail "still $(state) 30 s after SIG$sig"
		us_since "$t0" >>/tmp/b.detach.$sig
		wait "$AGENT_PID" 2>/dev/null
		end_tasks $load
		r=$((r + 1))
	done
	ok "SIG$sig -> disabled: $(tr '\n' ' ' </tmp/b.detach.$sig) us"
done

# --- 2. Live tag ---
make_cgroup seq
start_agent --events
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
sleep 1
r=0
while [ $r -lt "$rounds" ]; do
	n=$(grep -c "^event  *fuse .*pid=$a " "$AGENT_LOG")
	c0=$(now_ns)
	scx_chameleon tag seq --level 1 --tax 1 >/dev/null || fail "tag"
	t1=$(now_ns)
	echo $(( (t1 - c0) / 1000 )) >>/tmp/b.cli
	t0=$(now_ms)
	until [ "$(grep -c "^event  *fuse .*pid=$a " "$AGENT_LOG")" -gt "$n" ]; do
		[ $(( $(now_ms) - t0 )) -lt 30000 ] || fail "no fuse 30 s after tag round $r"
		usleep 20000
	done
	ts=$(grep "^event  *fuse .*pid=$a " "$AGENT_LOG" | sed -n "$((n + 1))s/.* ts_ns=\([0-9]*\).*/\1/p")
	[ -n "$ts" ] || fail "fuse event without ts_ns"
	echo $(( (ts - c0) / 1000 )) >>/tmp/b.tag
	[ "$ts" -le "$t1" ] && echo "$r" >>/tmp/b.tag_early
	u=$(grep -c "DEBUG unassign pid=$a " "$AGENT_LOG")
	scx_chameleon untag seq >/dev/null || fail "untag"
	t0=$(now_ms)
	until [ "$(grep -c "DEBUG unassign pid=$a " "$AGENT_LOG")" -gt "$u" ]; do
		[ $(( $(now_ms) - t0 )) -lt 30000 ] || fail "no unassign 30 s after untag round $r"
		usleep 20000
	done
	usleep 500000
	r=$((r + 1))
done
end_tasks $a
stop_agent

# --- 3. Node manager ---
start_agent --events --tag seq=level:2,weight:1,tax:1
size() { sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p" /tmp/st | awk -F, '{ print NF }'; }
sizes() { scx_chameleon status >/tmp/st 2>&1; for p in $1; do size $p; done | sort -n | tr '\n' ' '; }
r=0
while [ $r -lt "$rounds" ]; do
	pids=
	for i in 1 2 3; do spin -g /sys/fs/cgroup/seq $LONG >/dev/null & pids="$pids $!"; usleep 300000; done
	t0=$(now_ms)
	until [ "$(sizes "$pids")" = "2 2 4 " ]; do
		[ $(( $(now_ms) - t0 )) -lt 30000 ] || fail "round $r: no 2 2 4 in 30 s"
		usleep 200000
	done
	big=$(for p in $pids; do [ "$(size $p)" = 4 ] && echo $p; done)
	rest=$(for p in $pids; do [ "$p" != "$big" ] && echo $p; done)
	k0=$(now_ns)
	kill -9 "$big"
	until [ "$(sizes "$rest")" = "4 4 " ]; do
		[ $(( ($(now_ns) - k0) / 1000000 )) -lt 30000 ] || fail "round $r: no 4 4 in 30 s"
		usleep 50000
	done
	us_since "$k0" >>/tmp/b.nm.shell
	wait_log "DEBUG unassign pid=$big " 30000 "no unassign of $big"
	line=$(grep -A20 "DEBUG unassign pid=$big " "$AGENT_LOG" | grep -m1 'DEBUG rebalanced ')
	[ -n "$line" ] || fail "no rebalance line after pid $big's exit"
	echo "${line##*after_us=}" >>/tmp/b.nm.agent
	kill $rest
	wait $pids 2>/dev/null
	sleep 1
	r=$((r + 1))
done
stop_agent

# --- 4. IRQs ---
insmod "$ko" || fail "insmod failed"
# Park and unpark from one open file (a proxy_ctl session): a one-shot
# park's exit releases its file, and the module undoes the park (ABI 3).
pc_open
# eff_is CPU: IRQ $irq's effective affinity is CPU; a line printed first
# makes it interrupt (an IO-APIC IRQ moves at its next interrupt).
eff_is() { echo "   ."; [ "$(cat /proc/irq/$irq/effective_affinity_list)" = "$1" ]; }
# until_us WHAT CMD...: poll CMD every 10 ms (30 s at most); US = the us it took.
until_us() {
	_w=$1; shift
	_t=$(now_ns)
	until "$@"; do
		[ $(( ($(now_ns) - _t) / 1000000 )) -lt 30000 ] || fail "$_w (30 s)"
		usleep 10000
	done
	US=$(us_since "$_t")
}
r=0
while [ $r -lt "$rounds" ]; do
	echo 1 >/proc/irq/$irq/smp_affinity_list
	until_us "IRQ $irq not effective on CPU 1" eff_is 1
	echo 2 >/proc/irq/$irq/smp_affinity_list
	until_us "IRQ $irq not effective on CPU 2" eff_is 2
	echo "$US" >>/tmp/b.irq.hand
	t0=$(now_ns)
	pc park 2-3 60000 >/dev/null || fail "park 2-3"
	until_us "IRQ $irq's affinity not moved off parked CPU 2" sh -c "! grep -q '^2' /proc/irq/$irq/smp_affinity_list"
	us_since "$t0" >>/tmp/b.irq.park
	until_us "IRQ $irq not effective off parked CPU 2" sh -c "echo '   .'; ! grep -q '^2' /proc/irq/$irq/effective_affinity_list"
	us_since "$t0" >>/tmp/b.irq.park_eff
	pc unpark 2-3 >/dev/null || fail "unpark 2-3"
	wait_online 0-7
	r=$((r + 1))
done
pc_close || fail "proxy_ctl session exited $?"
rmmod chameleon_proxy || fail "rmmod"

echo "BENCH kernel=$(uname -r) cpus=$(nproc) (4 cores x 2 threads) tcg=single rounds=$rounds"
printf 'BENCH %-56s %4s %9s %9s %9s\n' "what (ms)" n p50 p99 max
row "kill -9 agent -> sched_ext disabled (all CPUs busy)" /tmp/b.detach.KILL
row "  ref: SIGTERM agent -> disabled (all CPUs busy)" /tmp/b.detach.TERM
row "tag CLI started -> fuse event (BPF ts)" /tmp/b.tag
row "  ref: the tag CLI's own round trip" /tmp/b.cli
row "exit of the 4-CPU task -> rebalanced (agent's after_us)" /tmp/b.nm.agent
row "  ref: kill -9 -> status shows 4 4 (shell, 50 ms poll)" /tmp/b.nm.shell
row "park 2-3 (CLI) -> IRQ 4 affinity off CPU 2 (module)" /tmp/b.irq.park
row "park 2-3 (CLI) -> IRQ 4 effective off CPU 2" /tmp/b.irq.park_eff
row "  ref: affinity 1 -> 2 written by hand -> effective" /tmp/b.irq.hand
echo "BENCH fuses before the tag CLI returned: $(grep -c . /tmp/b.tag_early 2>/dev/null || echo 0) of $rounds"
pass
