#!/bin/sh
# The agent's park rules (src/module/park.rs) against the module's (kmod_proxy/
# park.c and main.c): the same requests, in the same states, are sent to the
# module through its ioctl (proxy_ctl) and to the agent (`scx_chameleon park`
# / `unpark`). Asserted: each request is refused by both, and the agent's
# reason is the errno the module returned (cls below maps one to the other).
# A request the agent's own rules let through, refused by the module only,
# counts as a disagreement too: without the module nothing would refuse it.
# The agent runs with the module loaded, so both see the same parked CPUs.
# States: nothing parked; CPU 2 parked (a 60 s hold-off: still online); CPU 2
# parked and CPU 3 offline through sysfs. Every CPU the kernel cannot take
# offline (no /sys/devices/system/cpu/cpuN/online; CPU 0 on x86) is asked for.
# Positive control: the agent parks and unparks CPU 2 through the module.
# The agent owns the module (ABI 3): another file's requests are refused
# with EACCES only once their arguments and the state were checked, so the
# bad requests above keep their errnos; a valid one gets EACCES and changes
# nothing, and CLAIM gets EBUSY.
. /opt/chameleon/guest/lib.sh

[ "$(nproc)" -ge 4 ] || fail "needs 4 CPUs"
insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
start_agent
wait_log "chameleon_proxy: " 10000 "the agent did not find the module"
n=$(nproc)	# all online: nr_cpu_ids, the first id past the last

# The module's errno for the agent's reason; "agent-accepted" or "module-only"
# when the agent's own rules let the request through.
cls() {
	case "$1" in
	*"chameleon_proxy:"*) echo module-only ;;
	*"no CPU given"* | *"not a CPU list"* | *"this machine has CPUs"* | *"is not present"* | \
	*"CPU 0 cannot be parked"* | *"would leave no CPU"* | *"is not parked"* | *"is not in 0..="*)
		echo EINVAL ;;
	*"parked already"* | *"is offline"*) echo EBUSY ;;
	*"cannot be taken offline"*) echo EOPNOTSUPP ;;
	*) echo "unknown" ;;
	esac
}

asked=0 differ=0 report=
# ask STATE OP LIST [HOLDOFF_MS]: OP LIST to the module, then to the agent;
# anything either accepted is undone at once, so the next request sees the
# same state.
ask() {
	_h=${4:-60000}
	if [ "$2" = park ]; then
		_m=$(proxy_ctl park "$3" "$_h" 2>&1) && { proxy_ctl unpark "$3" >/dev/null 2>&1; _m=accepted; }
		_a=$(scx_chameleon park "$3" --holdoff-ms "$_h" 2>&1) && { scx_chameleon unpark "$3" >/dev/null 2>&1; _a="accepted: $_a"; }
	else
		_m=$(proxy_ctl unpark "$3" 2>&1) && _m=accepted
		_a=$(scx_chameleon unpark "$3" 2>&1) && _a="accepted: $_a"
	fi
	_me=$(echo "$_m" | sed -n 's/^[A-Z]*: \(E[A-Z0-9]*\) .*/\1/p')
	[ -n "$_me" ] || _me=$_m
	case "$_a" in accepted*) _ae=agent-accepted ;; *) _ae=$(cls "$_a") ;; esac
	_what="[$1] $2 '$3'$([ "$_h" = 60000 ] || echo " hold-off $_h")"
	_line="$_what: module $_me, agent $_ae ($(echo "$_a" | sed 's/^Error: //' | head -n 1))"
	asked=$((asked + 1))
	if [ "$_me" = "$_ae" ] && [ "$_me" != accepted ]; then
		echo "   $_line"
	else
		echo "   DIFFER $_line"
		differ=$((differ + 1))
		report="$report; $_line"
	fi
}

# CPUs the kernel cannot take offline.
fixed=
c=0
while [ $c -lt $n ]; do
	[ -e /sys/devices/system/cpu/cpu$c/online ] || fixed="$fixed $c"
	c=$((c + 1))
done
echo "   CPUs the kernel cannot take offline:${fixed:- none}"

s="nothing parked"
for c in $fixed; do ask "$s" park $c; done
ask "$s" park $n
ask "$s" park "$((n - 1)),$n"
ask "$s" park "$n,0"
ask "$s" park ""
ask "$s" park 2 3600001
ask "$s" unpark 2
ask "$s" unpark 0
ask "$s" unpark $n

# A valid request from another file than the owner's.
out=$(proxy_ctl park 2 60000 2>&1) && { proxy_ctl unpark 2 >/dev/null 2>&1; fail "the module parked CPU 2 for a file that is not its owner: $out"; }
echo "$out" | grep -q "^PARK: EACCES " || fail "valid park 2 from another file than the agent's: $out (expected EACCES)"
proxy_ctl stats | grep -q "^cpu=2 .* parked=1 " && fail "a refused park left CPU 2 parked"
out=$(proxy_ctl claim 2>&1) && fail "CLAIM succeeded while the agent owns the module: $out"
echo "$out" | grep -q "^CLAIM: EBUSY " || fail "CLAIM while the agent owns the module: $out (expected EBUSY)"
[ "$(stat_of owner_pid)" = "$AGENT_PID" ] || fail "owner_pid $(stat_of owner_pid), the agent is $AGENT_PID"
ok "the agent (pid $AGENT_PID) owns the module: a valid park from another file EACCES, nothing parked; CLAIM EBUSY"

get out scx_chameleon park 2 --holdoff-ms 60000
echo "$out" | grep -q "module [0-9]* us" || fail "park 2 did not go through the module: $out"
proxy_ctl stats | grep -q "^cpu=2 .* parked=1 " || fail "the module has CPU 2 unparked after the agent's park 2"
s="2 parked"
ask "$s" park 2
ask "$s" park 2-3
ask "$s" park 3,2
ask "$s" park "2,$n"
ask "$s" park 2,0
for c in $fixed; do [ "$c" = 0 ] || ask "$s" park "2,$c"; done
ask "$s" unpark 2-3
ask "$s" unpark "2,$n"

echo 0 >/sys/devices/system/cpu/cpu3/online || fail "cannot take CPU 3 offline through sysfs"
s="2 parked, 3 offline"
ask "$s" park 3
ask "$s" park 3,2
ask "$s" park 3,0
ask "$s" park "3,$n"
ask "$s" unpark 3
echo 1 >/sys/devices/system/cpu/cpu3/online || fail "cannot bring CPU 3 back"

get out scx_chameleon unpark 2
proxy_ctl stats | grep -q "^cpu=2 .* parked=0 " || fail "the module still has CPU 2 parked after the agent's unpark 2"
ok "positive control: the agent parked and unparked CPU 2 through the module"

[ "$differ" = 0 ] || fail "the agent and the module differ on $differ of $asked requests$report"
ok "$asked bad requests in 3 states: refused by the module and the agent alike, with the same errno"
pass
