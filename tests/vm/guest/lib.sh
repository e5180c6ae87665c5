# Helpers for guest test scripts (sourced). Busybox sh.
# A test prints "ok: ..." for each check that held and ends with "PASS <name>";
# the first check that fails prints "FAIL <name>: <why>" and exits 1.

TEST=${TEST:-$(basename "$0" .sh)}
STATE=/sys/kernel/sched_ext/state
OPS=/sys/kernel/sched_ext/root/ops
AGENT_LOG=/tmp/agent.log
AGENT_PID=

fail() {
	echo "FAIL $TEST: $*"
	# The agent's own state: stuck (where), gone, or fine and the cause is
	# elsewhere; and what its status file says now (CI keeps only this).
	if [ -n "$AGENT_PID" ] && [ -d "/proc/$AGENT_PID" ]; then
		echo "--- agent pid $AGENT_PID: $(grep -h State /proc/$AGENT_PID/task/*/status | tr -s '\t\n' '  ')wchan $(cat /proc/$AGENT_PID/wchan)"
		scx_chameleon status 2>&1 | grep -E "^(cpus|module: kfuncs|counters)" | sed 's/^/    /'
	fi
	# A test's own evidence (the runtime test: the plugin's log).
	[ -z "${FAIL_EVIDENCE:-}" ] || $FAIL_EVIDENCE
	if [ -f "$AGENT_LOG" ]; then
		echo "--- agent log (last 20 lines) ---"
		tail -n 20 "$AGENT_LOG"
		# The kernel's dump of an ejection (watchdog, scx_bpf_error): who waited where.
		if grep -q "^DEBUG DUMP" "$AGENT_LOG"; then
			echo "--- the kernel's exit dump ---"
			sed -n '/^DEBUG DUMP/,$p' "$AGENT_LOG" | head -n 250
		fi
	fi
	exit 1
}
ok() { echo "ok: $*"; }
# The policy's invariant counters (bpf/intf.h, struct chameleon_invariants)
# must stay zero in every test: the agent logs "invariant broken" when one
# grows, and its exit summary has them all.
invariants_held() {
	[ -f "$AGENT_LOG" ] || return 0
	_bad=$(grep -m 1 "invariant broken" "$AGENT_LOG")
	[ -z "$_bad" ] || fail "$_bad"
	_sum=$(sed -n 's/.* invariants \(lent_to_non_rep=[0-9]* owner_gone=[0-9]* queue_forbidden=[0-9]*\).*/\1/p' "$AGENT_LOG" | tail -n 1)
	case $_sum in
	""|"lent_to_non_rep=0 owner_gone=0 queue_forbidden=0") ;;
	*) fail "invariant broken at exit: $_sum" ;;
	esac
}

pass() { invariants_held; echo "PASS $TEST"; exit 0; }

# The helpers a test polls with start no process: under single-threaded TCG
# every vCPU shares one host thread, and what the test's own loop runs is
# time the system under test does not get. A fork and exec costs 10-15 ms
# of a vCPU there (awk, cat, usleep), a subshell 5, a builtin read under 1:
# start_agent's poll every 10 ms (cat, awk, grep, usleep) made the agent's
# start 4.7-5.3 s against 2.6-2.9 s waited for quietly.
# Milliseconds since boot (/proc/uptime has 10 ms resolution: enough here).
now_ms() {
	read -r _upt _upi </proc/uptime
	echo $(( ${_upt%.*} * 1000 + 10 * 1${_upt#*.} - 1000 ))
}
# now_var: the same in NOW, without the subshell $(now_ms) takes.
now_var() {
	read -r _upt _upi </proc/uptime
	NOW=$(( ${_upt%.*} * 1000 + 10 * 1${_upt#*.} - 1000 ))
}

state() { read -r _st <"$STATE" && echo "$_st"; }
ops() { read -r _ops 2>/dev/null <"$OPS" && echo "$_ops"; }

# nap SECONDS (fractions too): sleep inside the shell, a read's timeout on a
# FIFO no one writes (fd 9), not as a process (usleep); where read has no
# timeout (dash, the host's sh), sleep.
nap() { sleep "$1"; }
if mkfifo "/tmp/.nap.$$" 2>/dev/null; then
	exec 9<>"/tmp/.nap.$$"
	rm -f "/tmp/.nap.$$"
	if [ -z "$(read -t 0.001 _napv <&9 2>&1)" ]; then
		nap() { read -t "$1" _napv <&9; return 0; }
	else
		exec 9<&-
	fi
fi

# scx_utils appends a version suffix to the ops name: match the prefix.
ops_is_chameleon() {
	case "$(ops)" in chameleon*) return 0 ;; *) return 1 ;; esac
}

# wait_state WANT TIMEOUT_MS: poll every 10 ms; prints the ms it took.
wait_state() {
	want=$1 limit=$2
	now_var
	t0=$NOW
	while :; do
		_st=
		read -r _st 2>/dev/null <"$STATE"
		now_var
		[ "$_st" = "$want" ] && { echo $(( NOW - t0 )); return 0; }
		[ $(( NOW - t0 )) -ge "$limit" ] && return 1
		nap 0.01
	done
}

# start_agent [ARGS...]: run scx_chameleon in the background and wait until
# the kernel reports our scheduler enabled.
# The kernel's watchdog at half its default: a task stranded for WATCHDOG_MS
# (5x the policy's own 1 s bound) ejects the scheduler with the kernel's dump
# of who waited where, while it happens (a test's later check would only see
# that something took long). A test whose scenario starves a task on purpose
# (an RT hog) sets WATCHDOG_MS.
start_agent() {
	[ "$(state)" = disabled ] || fail "sched_ext is '$(state)' before the agent starts"
	set -- --watchdog-timeout-ms "${WATCHDOG_MS:-5000}" "$@"
	# The agent's decisions (assign, unassign, rebalanced, untagged load,
	# autotax) are debug lines of the target "decisions", which the tests
	# read from the log; a test that sets its own --log-level adds it.
	case " $* " in *" --log-level "*) ;; *) set -- --log-level info,decisions=debug "$@" ;; esac
	if [ -n "$START_AGENT_NICE" ]; then
		# (busybox has renice, not nice; without -n it sets the value)
		sh -c 'renice "$0" $$ >/dev/null && exec "${AGENT_BIN:-scx_chameleon}" "$@"' "$START_AGENT_NICE" "$@" >"$AGENT_LOG" 2>&1 &
	else
		"${AGENT_BIN:-scx_chameleon}" "$@" >"$AGENT_LOG" 2>&1 &
	fi
	AGENT_PID=$!
	now_var
	t0=$NOW
	# Started = sched_ext enabled and the agent's own "attached" line
	# logged: the kernel enables the ops inside the attach, before the
	# agent binds the module, starts emulation and its workers (so a test
	# needs --log-level to include info for the agent's target).
	while ! { read -r _st <"$STATE" && [ "$_st" = enabled ] &&
		grep -q "scx_chameleon attached:" "$AGENT_LOG"; }; do
		# An agent that failed to load is gone (or a zombie): no need to
		# wait. (/proc/PID/stat's third field, its state; the name in the
		# second has no space.)
		_ast=X
		read -r _sp1 _sp2 _ast _sp4 2>/dev/null </proc/$AGENT_PID/stat
		case $_ast in Z | X) fail "the agent exited before the scheduler was enabled" ;; esac
		now_var
		[ $(( NOW - t0 )) -lt ${AGENT_START_MS:-30000} ] ||
			fail "scheduler not enabled within ${AGENT_START_MS:-30000} ms (state $(state)); agent log: $(tail -n 5 "$AGENT_LOG" | tr '\n' '|')"
		nap 0.02
	done
	ops_is_chameleon || fail "root/ops is '$(ops)', not chameleon"
	ok "scx_chameleon attached (pid $AGENT_PID, ops $(ops)) after $(( $(now_ms) - t0 )) ms"
}

agent_alive() { kill -0 "$AGENT_PID" 2>/dev/null; }

# stop_agent: SIGTERM, wait, and require exit status 0 and state disabled.
stop_agent() {
	kill -TERM "$AGENT_PID" || fail "agent already gone"
	wait "$AGENT_PID"
	rc=$?
	[ "$rc" = 0 ] || fail "agent exited with status $rc after SIGTERM"
	[ "$(state)" = disabled ] || fail "state is '$(state)' after the agent exited"
	ok "SIGTERM: agent exited 0, sched_ext disabled"
}

# Cgroup for tagged tasks; printed path is under /sys/fs/cgroup.
make_cgroup() {
	mkdir -p "/sys/fs/cgroup/$1" || fail "cannot create cgroup $1"
}

# run_ns and fused_ns of a tagged task, from its task_exit event: "RUN FUSED".
task_times() {
	sed -n "s/.*task_exit .* pid=$1 .*tagged run_ns=\([0-9]*\) fused_ns=\([0-9]*\).*/\1 \2/p" "$AGENT_LOG" | tail -n 1
}

# Fused share of a tagged task's run time, in percent (integer).
fused_pct() {
	set -- $(task_times "$1")
	[ -n "${1:-}" ] || { echo -1; return; }
	echo $(( $2 * 100 / $1 ))
}

# object PID: the CPUs of PID's object as `status` lists them ("2, 3"), empty if none.
object() {
	scx_chameleon status | sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p"
}
# wait_object PID CPUS WHAT: until PID's object is [CPUS], 5 s at most.
wait_object() {
	t0=$(now_ms)
	until [ "$(object $1)" = "$2" ]; do
		[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "$3: pid $1 has [$(object $1)], want [$2]"
		nap 0.1
	done
}

# until_ok MS WHAT CMD...: run CMD every 50 ms until it succeeds; fail with
# WHAT after MS ms (a liveness bound: "it happens", never "it happens fast").
# Sets TOOK (ms).
until_ok() {
	_ums=$1 _uwhat=$2
	shift 2
	_ut0=$(now_ms)
	until "$@"; do
		[ $(( $(now_ms) - _ut0 )) -lt "$_ums" ] || fail "$_uwhat (after $_ums ms)"
		nap 0.05
	done
	TOOK=$(( $(now_ms) - _ut0 ))
}

# rmmod_proxy: remove chameleon_proxy once the agent is gone. The policy's
# programs hold the module until the kernel frees them, an RCU grace period
# after the exit; 30 s at most.
rmmod_proxy() {
	until_ok 30000 "rmmod chameleon_proxy still refused after the agent exited (refcnt $(cat /sys/module/chameleon_proxy/refcnt 2>/dev/null))" \
		rmmod chameleon_proxy 2>/dev/null
}

# has_pair PID: PID holds a level-1 object; sets PAIR_REP and PAIR_LENT.
has_pair() {
	_o=$(object "$1")
	echo "$_o" | grep -q "^[0-9]*, [0-9]*$" || return 1
	PAIR_REP=${_o%%,*} PAIR_LENT=${_o##* }
}

count_events() { grep -c "^event  *$1 " "$AGENT_LOG"; }

# spinners_then_seq N [CPU...]: N untagged spinners ($p0 ..), allowed on
# every CPU, or the k-th pinned to the k-th CPU given; once they run, a
# spinner in cgroup seq ($a): an object under load.
spinners_then_seq() {
	_ns=$1
	shift
	n=0
	while [ $n -lt "$_ns" ]; do
		if [ $# -gt 0 ]; then
			spin -c "$1" $LONG >/dev/null &
			shift
		else
			spin $LONG >/dev/null &
		fi
		eval p$n=$!
		n=$((n + 1))
	done
	nap 0.3
	spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
	a=$!
}

# wait_log PATTERN TIMEOUT_MS WHAT: until the agent log has a line matching PATTERN.
wait_log() {
	t0=$(now_ms)
	until grep -q "$1" "$AGENT_LOG"; do
		[ $(( $(now_ms) - t0 )) -lt "$2" ] || fail "$3"
		nap 0.05
	done
}

# log_mark: the agent log's line count now; wait_log_after MARK PATTERN MS
# MESSAGE: as wait_log, for a line written after MARK (a line from before,
# say an earlier fuse, does not answer).
log_mark() { wc -l <"$AGENT_LOG"; }
wait_log_after() {
	t0=$(now_ms)
	until tail -n +$(($1 + 1)) "$AGENT_LOG" | grep -q "$2"; do
		[ $(( $(now_ms) - t0 )) -lt "$3" ] || fail "$4"
		nap 0.05
	done
}

# --- The kernel's own accounting (not the scheduler's counters) ---

# get VAR CMD...: VAR=$(CMD...), and the test fails if CMD fails. A `fail`
# inside $( ) ends only the subshell: its "FAIL" text would become the value
# compared next, and `set -- $(CMD) || fail` cannot fail at all (set returns
# 0). CMD's output, a FAIL line included, is shown when it fails.
get() {
	_gv=$1
	shift
	_go=$("$@")
	_grc=$?
	if [ "$_grc" != 0 ]; then
		[ -z "$_go" ] || echo "$_go"
		case "$_go" in *"FAIL $TEST:"*) exit 1 ;; esac
		fail "'$*' exited $_grc"
	fi
	eval "$_gv=\$_go"
}

# shares VAR MS WHAT...: VAR = the per-mille shares of the next MS ms
# (cpu_share: a PID's CPU time from schedstat, "cpuN" CPU N's idle time from
# /proc/stat, both over one CLOCK_MONOTONIC window), space-separated in WHAT's
# order; fails the test if any cannot be read at both ends.
shares() {
	_sv=$1
	shift
	get _so cpu_share "$@"
	_so=$(echo $_so)
	[ "$(echo "$_so" | wc -w)" = $(( $# - 1 )) ] || fail "cpu_share $*: got '$_so'"
	eval "$_sv=\$_so"
}

# idle_over VAR CPU SECONDS: VAR = CPU's idle time in % of the next SECONDS
# (decimal allowed) of the monotonic clock. Idle is the /proc/stat field the
# kernel accounts by clock, not by tick (NOHZ); never divide by its total:
# TCG thins the busy ticks, and at that thinning "50 % idle" read from 25 %
# real idle.
idle_over() {
	_ims=$(echo "$3" | awk '{ printf "%d", $1 * 1000 }')
	shares _ipm "$_ims" "cpu$2"
	eval "$1=$(( _ipm / 10 ))"
}

# accounts_for WHAT IDLE_PM TASKS_PM [TOL_PM] [REST_PM]: a CPU's idle time and
# the CPU time of the tasks that can run there (all per mille of one window)
# must add up to the whole window, within TOL_PM (default 80): otherwise one
# of the two readings is wrong and whatever a test concludes from it is too.
# REST_PM is what every other thread ran in the window (cpu_share's "rest":
# the agent, the shell, kernel threads), which may have run on this CPU too:
# the sum may fall short by that much more. Under TCG the sum drifts with how
# often the CPU goes idle and back: with a few switches a second it adds up
# within a few per mille; at dozens a second (a bursty task, an object lent
# and reclaimed ~45 times a second) idle read up to 20 % high with the other
# vCPUs idle and up to 35 % low with them busy, under EEVDF alike. A test
# that switches often states its tolerance and why.
accounts_for() {
	_sum=$(( $2 + $3 ))
	_lo=$(( 1000 - ${4:-80} - ${5:-0} ))
	_hi=$(( 1000 + ${4:-80} ))
	_also=${5:+", other threads $5 ‰"}
	[ "$_sum" -ge "$_lo" ] && [ "$_sum" -le "$_hi" ] ||
		fail "$1: idle $2 ‰ + its tasks' $3 ‰ = $_sum ‰ of the window$_also (want $_lo-$_hi)"
	ok "$1: idle $2 ‰ + its tasks' $3 ‰ of the window$_also (kernel accounting adds up)"
}

# scx_event NAME: the kernel's sched_ext event counter NAME (e.g.
# SCX_EV_REENQ_REPEAT) for the scheduler loaded now; empty if none.
scx_event() {
	sed -n "s/^$1 *//p" /sys/kernel/sched_ext/root/events 2>/dev/null
}

# CPU time the kernel accounted to a task, ns (/proc/PID/schedstat field 1).
run_ns() {
	cut -d' ' -f1 "/proc/$1/schedstat" 2>/dev/null || echo 0
}

# A task's waits come from wait_watch PID MS (one process sampling its
# schedstat every 2 ms): "LONGEST_MS RUN_MS TURNS WAIT_MS GAP_MS". A shell
# loop forking a reader per sample saw no stretch at all on busy CPUs, where
# wait_watch found one of 500 ms.

# Workloads outlive their measuring windows by far: under TCG a few guest
# seconds of waiting can stretch past a short task's end, and a task that
# ended inside a window makes the window measure something else. Start them
# long (LONG seconds), check they are all still there after the window, then
# end them.
LONG=120
still_running() {
	for _p in "$@"; do
		kill -0 "$_p" 2>/dev/null || fail "pid $_p ended inside a measuring window"
	done
}
end_tasks() {
	still_running "$@"
	kill "$@"
	wait "$@" 2>/dev/null
	return 0
}

# RT throttling off for a test's RT hog (so it holds its CPU for good), and
# back to what it was: `restore` (also before a fail).
rt_throttling_off() {
	rt0=$(cat /proc/sys/kernel/sched_rt_runtime_us)
	echo -1 >/proc/sys/kernel/sched_rt_runtime_us || fail "cannot turn RT throttling off"
}
restore() { echo "$rt0" >/proc/sys/kernel/sched_rt_runtime_us; }

# --- chameleon_proxy and CPU hotplug ---

# A field of the module's STATS (proxy_ctl stats), e.g. stat_of lends.
stat_of() { proxy_ctl stats | sed -n "s/^$1=//p"; }
online() { cat /sys/devices/system/cpu/online; }
# wait_online LIST [MS] [WHAT]: until the online CPUs are LIST (default 30 s).
wait_online() {
	_t=$(now_ms)
	until [ "$(online)" = "$1" ]; do
		[ $(( $(now_ms) - _t )) -lt "${2:-30000}" ] || fail "${3:+$3: }online $(online), expected $1"
		nap 0.01
	done
}

# --- A chameleon_proxy file held across commands: proxy_ctl session ---
# Since ABI 3 the module's state (parks, lends, moved IRQs, emulation)
# belongs to the open file that made it, and is undone when that file is
# released. A one-shot `proxy_ctl park` is undone as it exits; what must last
# across commands goes through one session: pc_open starts `proxy_ctl
# session` on two FIFOs (the shell writes commands on fd 3, reads replies on
# fd 4), `pc CMD...` sends one command and prints its reply ("ok ..." or
# "err ENAME"; returns 1 on err), pc_close closes its stdin (it exits at EOF:
# the file is released) and waits, pc_kill kills it (-9) instead.
# Every child the shell starts while a session is open inherits fds 3 and 4:
# one that outlives the session must be started with `3>&- 4<&-`, or
# pc_close never sees the session exit (it says so after 5 s).
PC_PID=
pc_open() {
	[ -z "$PC_PID" ] || fail "pc_open: session $PC_PID still open"
	_pcd=/tmp/pc.$$
	rm -rf "$_pcd"
	mkdir "$_pcd" && mkfifo "$_pcd/in" "$_pcd/out" || fail "pc_open: cannot make FIFOs in $_pcd"
	proxy_ctl session <"$_pcd/in" >"$_pcd/out" &
	PC_PID=$!
	# Each open of a FIFO waits for its other end: the session opens "in"
	# and then "out", in that order, as we do.
	exec 3>"$_pcd/in" 4<"$_pcd/out"
	rm -rf "$_pcd"
}
# The session is running (not gone, not a zombie: that holds no file).
_pc_alive() {
	kill -0 "$PC_PID" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$PC_PID/status" 2>/dev/null
}
pc() {
	[ -n "$PC_PID" ] || fail "pc $*: no session open"
	# Writing to a FIFO nobody reads kills the shell (SIGPIPE): look first.
	if ! _pc_alive; then
		echo "err GONE"
		return 1
	fi
	echo "$*" >&3
	read -r _pcr <&4 || _pcr="err GONE"
	echo "$_pcr"
	case $_pcr in ok | "ok "*) return 0 ;; esac
	return 1
}
pc_close() {
	exec 3>&-
	_pct=$(now_ms)
	while _pc_alive; do
		[ $(( $(now_ms) - _pct )) -lt 5000 ] ||
			fail "pc_close: session $PC_PID still running 5 s after its stdin closed (a child holds fd 3?)"
		nap 0.01
	done
	wait "$PC_PID"
	_pcrc=$?
	exec 4<&-
	PC_PID=
	return $_pcrc
}
pc_kill() {
	kill -9 "$PC_PID" 2>/dev/null
	wait "$PC_PID" 2>/dev/null
	exec 3>&- 4<&-
	PC_PID=
	return 0
}

# pick_irq LIST: the first device IRQ whose affinity can be set to LIST, left
# set to it and in effect: an IO-APIC IRQ takes a new affinity only at its next
# interrupt (the line printed here, on the serial console, makes ttyS0's
# fire), so a one-CPU LIST must also read as the effective affinity. The IRQ's
# number in IRQ; returns 1 if there is none.
pick_irq() {
	IRQ=
	for _d in /proc/irq/[0-9]*; do
		_n=${_d#/proc/irq/}
		[ -n "$(ls "$_d" | grep -v -e '^affinity_hint$' -e '^node$' -e '^smp_affinity' -e '^effective_affinity' -e '^spurious$')" ] || continue
		echo "$1" >"$_d/smp_affinity_list" 2>/dev/null || continue
		echo "   IRQ $_n: affinity $1 requested"
		nap 0.2
		[ "$(cat "$_d/smp_affinity_list")" = "$1" ] || continue
		case $1 in
		*[-,]*) ;;
		*) [ "$(cat "$_d/effective_affinity_list")" = "$1" ] || continue ;;
		esac
		IRQ=$_n
		return 0
	done
	return 1
}
