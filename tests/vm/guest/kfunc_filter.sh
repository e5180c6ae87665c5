#!/bin/sh
# Only the agent may call chameleon_proxy's kfuncs: the module's kfunc filter
# lets the verifier take a program calling one only from the process that
# owns the module (CLAIM), and only as a syscall or sched_ext struct_ops
# program (chameleon_proxy.h). Any other program that could call them could
# lend CPUs and move IRQs behind the agent's back. kfunc_probe loads the
# smallest program that calls chameleon_proxy_abi() and says what the
# verifier did:
# - a socket filter, a type the module never registered its kfuncs for:
#   refused with EACCES by the verifier alone (the message the filter's
#   refusals share: the probe's refusal path works);
# - no owner: syscall, sched_ext and tcp_cong (struct_ops, not a scheduler)
#   all refused with EACCES;
# - the probe owns the module (--claim): syscall and sched_ext load (the
#   positive control: the programs are valid, so a refusal elsewhere is the
#   filter's), tcp_cong is still refused;
# - another process owns it (a probe holding its claim): syscall, sched_ext
#   and tcp_cong refused, also with the device open but not claimed;
# - the owner gone: refused again;
# - a program loaded by an owner lends only while that owner holds the
#   module: run after its owner is gone, and after a new owner claimed,
#   chameleon_proxy_lend() answers -ENODEV and lends nothing (below);
# - the agent owns it: its own scheduler binds the kfuncs ("processor
#   proxies on"), a foreign syscall or sched_ext program is refused.
# Every case runs and is printed; the test fails at the end, naming each case
# that went otherwise (a probe's tool error, e.g. a failed CLAIM, is one).
. /opt/chameleon/guest/lib.sh

ko=/opt/chameleon/chameleon_proxy.ko
insmod "$ko" || fail "insmod failed"
[ -e /sys/kernel/btf/chameleon_proxy ] || fail "no /sys/kernel/btf/chameleon_proxy: the module has no BTF, its kfuncs cannot register"
echo "   module: $(proxy_ctl info 2>&1)"

wrong= nwrong=0 ncases=0
# probe WANT CASE ARGS...: kfunc_probe ARGS must print WANT ("loaded", or
# "refused EACCES" followed by the errno and the verifier's last line).
probe() {
	_want=$1 _case=$2
	shift 2
	ncases=$((ncases + 1))
	_out=$(kfunc_probe "$@" 2>&1)
	_rc=$?
	if [ "$_rc" = 0 ]; then
		case $_out in
		"$_want"|"$_want "*) ok "$_case: $_out"; return 0 ;;
		esac
	else
		_out="tool error (exit $_rc): $_out"
	fi
	echo "   WRONG $_case: want '$_want', got: $_out"
	wrong="$wrong; $_case"
	nwrong=$((nwrong + 1))
	return 1
}

probe "refused EACCES" "socket filter" socket
# No owner: nobody may call the kfuncs.
for p in syscall sched_ext tcp_cong; do
	probe "refused EACCES" "no owner, $p" $p
done

# The probe owns the module itself.
probe loaded "own claim, syscall" --claim syscall
probe loaded "own claim, sched_ext" --claim sched_ext
probe "refused EACCES" "own claim, tcp_cong" --claim tcp_cong

# Another process owns it: a probe holding its claim (a claim ends with its
# file, that is with the holder).
kfunc_probe --claim --hold 600 >/tmp/holder 2>&1 &
holder=$!
t0=$(now_ms)
until grep -q '^claimed$' /tmp/holder; do
	if ! kill -0 $holder 2>/dev/null; then
		wait $holder
		holder=
		break
	fi
	# CLAIM waits for a previous owner's cleanup: a liveness bound.
	[ $(( $(now_ms) - t0 )) -lt 30000 ] || fail "the holder's CLAIM still not done after 30 s"
	usleep 20000
done
ncases=$((ncases + 1))
if [ -n "$holder" ]; then
	ok "pid $holder owns the module"
	for p in syscall sched_ext tcp_cong; do
		probe "refused EACCES" "pid $holder owns it, $p" $p
	done
	probe "refused EACCES" "pid $holder owns it, device open, syscall" --open syscall
	# The agent's CLAIM is refused (EBUSY), and it says who holds the module.
	out=$(timeout 60 scx_chameleon 2>&1) && fail "the agent started while pid $holder owns the module"
	echo "$out" | grep -q "another process (pid $holder, kfunc_probe) owns /dev/chameleon_proxy: stop it first" ||
		fail "agent vs pid $holder's claim: '$(echo "$out" | tail -n 2 | tr '\n' '|')'"
	ok "agent refused: $(echo "$out" | grep -o 'another process.*')"
	kill $holder
	wait $holder 2>/dev/null
	# The owner's release may end after its process does: give it 5 s
	# (a liveness bound), then the case decides.
	t0=$(now_ms)
	until kfunc_probe syscall 2>/dev/null | grep -q '^refused EACCES'; do
		[ $(( $(now_ms) - t0 )) -lt 5000 ] || break
		usleep 100000
	done
	probe "refused EACCES" "owner gone, syscall" syscall
else
	echo "   WRONG the holder could not claim the module: $(cat /tmp/holder)"
	wrong="$wrong; holder's claim"
	nwrong=$((nwrong + 1))
fi

# A program outlives the owner it was loaded under (issue 45): pinned in
# bpffs here; for the agent's scheduler, the few hundred milliseconds the
# kernel takes to unload it after its agent died, or a struct_ops link someone
# keeps. Its kfunc calls must change nothing once another owner claims: the
# new owner never asked for them, and its release would not expect them. A
# holder claims and loads a syscall program calling chameleon_proxy_lend(1, 0)
# and pins it; kfunc_probe --run runs it from here.
# - while the holder owns the module: lends (positive control: the program
#   and --run work, and running it from another process is no refusal);
# - holder gone: -ENODEV (no owner), and the lend it made has ended;
# - a new owner (a proxy_ctl session that claims): still -ENODEV, the lends
#   counter unchanged and CPU 1 not lent.
pin=/sys/fs/bpf/chp_lend
# lent_to CPU: whom the module says CPU is lent to (-1: nobody).
lent_to() {
	proxy_ctl stats | sed -n "s/^cpu=$1 proxied_by=\(-*[0-9]*\) .*/\1/p"
}
stat_of() {
	proxy_ctl stats | sed -n "s/^$1=//p"
}
# run WANT CASE: kfunc_probe --run $pin must print "ret WANT".
run() {
	ncases=$((ncases + 1))
	_out=$(kfunc_probe --run "$pin" 2>&1)
	_rc=$?
	[ "$_rc" = 0 ] || _out="tool error (exit $_rc): $_out"
	if [ "$_out" = "ret $1" ]; then
		ok "$2: $_out"
		return 0
	fi
	echo "   WRONG $2: want 'ret $1', got: $_out"
	wrong="$wrong; $2"
	nwrong=$((nwrong + 1))
	return 1
}
# until_ms MS CMD...: CMD succeeds within MS ms (a liveness bound).
until_ms() {
	_lim=$1
	shift
	_t0=$(now_ms)
	until "$@"; do
		[ $(( $(now_ms) - _t0 )) -lt "$_lim" ] || return 1
		usleep 20000
	done
}
no_owner() { [ "$(stat_of owner_pid)" = 0 ]; }
has_line() { grep -q "^$1\$" "$2"; }

until_ms 5000 no_owner || fail "the module still has an owner: pid $(stat_of owner_pid)"
kfunc_probe --claim --hold 600 --pin "$pin" lend 1 0 >/tmp/lender 2>&1 &
lender=$!
# CLAIM waits for a previous owner's cleanup: a liveness bound.
until_ms 30000 has_line loaded /tmp/lender ||
	fail "the lender did not load its program within 30 s: $(cat /tmp/lender)"
ok "pid $lender owns the module, its lend program pinned at $pin"
run 0 "its owner holds the module, lend 1 to 0"
ncases=$((ncases + 1))
if [ "$(lent_to 1)" = 0 ]; then
	ok "CPU 1 lent to 0"
else
	echo "   WRONG the lend went nowhere: CPU 1 lent to '$(lent_to 1)'"
	wrong="$wrong; lend under its owner"
	nwrong=$((nwrong + 1))
fi
kill $lender
wait $lender 2>/dev/null
until_ms 5000 no_owner || fail "pid $lender killed, the module still owned by $(stat_of owner_pid)"
ncases=$((ncases + 1))
if [ "$(lent_to 1)" = -1 ]; then
	ok "owner gone: CPU 1 no longer lent"
else
	echo "   WRONG owner gone, CPU 1 still lent to '$(lent_to 1)'"
	wrong="$wrong; lend after its owner's release"
	nwrong=$((nwrong + 1))
fi
run -19 "no owner, the old owner's program"
pc_open
pc claim >/dev/null || fail "the session's CLAIM failed"
lends0=$(stat_of lends)
ok "pid $PC_PID owns the module (lends so far: $lends0)"
run -19 "a new owner, the old owner's program"
lends1=$(stat_of lends) cpu1=$(lent_to 1)
ncases=$((ncases + 1))
if [ "$lends1" = "$lends0" ] && [ "$cpu1" = -1 ]; then
	ok "a new owner: lends still $lends1, CPU 1 not lent"
else
	echo "   WRONG a new owner: lends $lends0 -> $lends1, CPU 1 lent to '$cpu1'"
	wrong="$wrong; the old owner's lend under a new owner"
	nwrong=$((nwrong + 1))
fi
pc_close
rm -f "$pin"

# The agent owns it (its RESET or CLAIM before the scheduler's load): the
# policy binds the kfuncs, nobody else may.
start_agent
ncases=$((ncases + 1))
if grep -q "processor proxies on (kfuncs bound)" "$AGENT_LOG"; then
	ok "the agent's scheduler: $(grep -m 1 'chameleon_proxy:' "$AGENT_LOG")"
else
	echo "   WRONG the agent's scheduler did not bind the kfuncs: $(grep 'chameleon_proxy' "$AGENT_LOG")"
	wrong="$wrong; agent's kfuncs"
	nwrong=$((nwrong + 1))
fi
probe "refused EACCES" "agent owns it, syscall" syscall
probe "refused EACCES" "agent owns it, sched_ext" sched_ext
stop_agent

[ "$nwrong" = 0 ] || fail "$nwrong of $ncases cases wrong:${wrong#;}"
pass
