#!/bin/sh
# The guard timer slows down on an idle machine: with nothing queued, fused,
# lent, parked or draining anywhere it runs every CHAMELEON_GUARD_IDLE_NS
# (100 ms) instead of every CHAMELEON_GUARD_NS (10 ms), and comes back to its
# period as soon as tasks wait. Two agent runs in one boot: 4 s idle, then
# 4 s with two spinners per CPU (every queue holds a task). From each run's
# exit summary (guard_runs: passes over the CPUs) and the guest clock around
# it: passes per second. Asserted as a ratio of the two runs (TCG stretches
# time alike for both): the busy machine's rate at least 3 times the idle
# one's (10 times by design). And its work follows the CPUs that need it:
# the CPUs a pass looks at (guard_cpus / guard_runs, in hundredths) stay
# under one on the idle machine and reach most of the CPUs on the busy one.
. /opt/chameleon/guest/lib.sh

# rate VAR: start the agent, run "$@" for 4 s, stop it; VAR = guard passes
# per 10 s of its life.
rate() {
	_var=$1
	shift
	start_agent
	_t0=$(now_ms)
	"$@"
	_t1=$(now_ms)
	stop_agent
	_runs=$(sed -n 's/.*summary .* guard_runs=\([0-9]*\).*/\1/p' "$AGENT_LOG" | tail -n 1)
	[ -n "$_runs" ] || fail "no guard_runs in the agent's summary: $(grep summary "$AGENT_LOG")"
	_cpus=$(sed -n 's/.*summary .* guard_cpus=\([0-9]*\).*/\1/p' "$AGENT_LOG" | tail -n 1)
	[ -n "$_cpus" ] && [ "$_runs" -gt 0 ] || fail "no guard_cpus in the agent's summary: $(grep summary "$AGENT_LOG")"
	eval "$_var=$(( _runs * 10000 / (_t1 - _t0) ))"
	eval "${_var}_cpus=$(( _cpus * 100 / _runs ))"
}

idle() { sleep 4; }
busy() {
	_pids=
	for _c in $(seq 0 $(( $(nproc) - 1 ))); do
		spin -c "$_c" $LONG >/dev/null & _pids="$_pids $!"
		spin -c "$_c" $LONG >/dev/null & _pids="$_pids $!"
	done
	sleep 4
	end_tasks $_pids
}

rate quiet idle
rate loaded busy
ok "guard passes per 10 s: idle $quiet, two spinners per CPU $loaded"
[ "$quiet" -gt 0 ] || fail "the guard did not run on the idle machine"
[ "$loaded" -ge $(( 3 * quiet )) ] ||
	fail "the guard ran $loaded times per 10 s with every queue holding a task, not clearly more than idle ($quiet)"
n=$(nproc)
ok "CPUs a pass looked at, in hundredths: idle $quiet_cpus, busy $loaded_cpus (of $n)"
[ "$quiet_cpus" -lt 100 ] ||
	fail "on the idle machine a guard pass looked at $quiet_cpus/100 CPUs: it does not follow the CPUs that need it"
[ "$loaded_cpus" -ge $(( n * 100 / 2 )) ] ||
	fail "with every queue holding a task a guard pass looked at only $loaded_cpus/100 of $n CPUs"
pass
