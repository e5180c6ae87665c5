#!/bin/sh
# chameleon_proxy on its own (no scheduler loaded), everything checked from
# the kernel's side (sysfs, /proc/irq, /proc/stat):
# - its BTF is there (what lets its kfuncs register; out-of-tree builds
#   against some headers silently go without) and the kernel log has no
#   "cannot register" line (the kernel's or the module's);
# - CLAIM/PARK/UNPARK/EMULATE/RESET are root-only even on an open device;
# - ownership (ABI 3): a session that claims owns the module (STATS names
#   its pid); another file's CLAIM gets EBUSY, its valid PARK and RESET
#   EACCES and change nothing, its bad PARK keeps its errno; once the owner
#   closes, a one-shot park is undone as that process exits;
# - 3000 random ioctls, each judged against chameleon_proxy.h by proxy_ctl:
#   every call the header says must fail fails, with one of the errnos the
#   header gives its faults, and valid calls fail only for the module's
#   state; some of each kind ran; they change nothing for good (RESET after);
# - Bolt-style parking: the synchronous part returns in microseconds, the
#   CPUs go offline in bulk after the hold-off; unpark within the hold-off
#   cancels the offline (no remove_cpu at all); unpark after brings them
#   back through add_cpu;
# - a device IRQ whose affinity is a parked CPU moves off it at once and gets
#   its affinity back on unpark;
# - an administrator's affinity wins: IRQ N moved off a parked CPU and then
#   set by hand (to a mask without that CPU, then to one with it) keeps the
#   hand-set mask after the unpark;
# - emulation: idle injection gives spinners about half of their CPUs by
#   schedstat (category high: every CPU at 50 %), and all once off; its
#   idle_inject devices (one a CPU) are registered while it is on and gone
#   once it is off, by EMULATE off and by the owner's release (a device
#   left registered keeps intel_powerclamp and cpuidle_cooling from
#   registering theirs);
# - debugfs redirect_latency opened write-only, read-write and read-only,
#   with seeks, writes and reads: each works (a write empties the ring), and
#   the kernel log stays clean (the runner fails an Oops);
# - the owner killed (-9) with a CPU offlined by its park: the CPU back
#   online and the IRQ back on it within 2 s, by the release alone; then
#   rmmod.
# The parks and the emulation below are held across commands, so they are
# sent from one proxy_ctl session (lib.sh: pc_open, pc): a one-shot
# proxy_ctl's exit would release its file and undo them.
. /opt/chameleon/guest/lib.sh

ko=/opt/chameleon/chameleon_proxy.ko
[ "$(nproc)" -ge 4 ] || fail "needs 4 CPUs"
insmod "$ko" || fail "insmod failed"
# A module without BTF loads, with the kernel's "missing module BTF, cannot
# register kfunc" and no kfuncs; a registration that fails makes the module
# log "cannot register the kfuncs". Neither line may appear.
n=$(dmesg | grep -c 'cannot register')
[ "$n" = 0 ] || fail "kfunc registration failed ($n lines): $(dmesg | grep 'cannot register' | tr '\n' ' ')"
[ -e /sys/kernel/btf/chameleon_proxy ] || fail "no /sys/kernel/btf/chameleon_proxy: the module has no BTF, its kfuncs cannot register"
ok "module BTF present, no 'cannot register' line in the kernel log"


# Root only, even with the device already open.
for cmd in "park 3 0" "unpark 3" "emulate on" "reset" "claim"; do
	out=$(proxy_ctl --uid 65534 $cmd 2>&1) && fail "'$cmd' as uid 65534 succeeded: $out"
	echo "$out" | grep -q EPERM || fail "'$cmd' as uid 65534: $out (expected EPERM)"
done
proxy_ctl --uid 65534 info >/dev/null || fail "INFO as uid 65534 failed"
ok "PARK, UNPARK, EMULATE, RESET, CLAIM refused with EPERM to uid 65534 (INFO allowed)"

# Ownership. The EPERM calls above claimed nothing.
[ "$(stat_of owner_pid)" = 0 ] || fail "owner_pid $(stat_of owner_pid) before anyone claimed"
pc_open
get out pc pid
sp=${out#ok pid=}
get out pc claim
[ "$out" = "ok found=none nr_offlined=0 nr_irqs=0" ] || fail "first CLAIM: $out"
[ "$(stat_of owner_pid)" = "$sp" ] || fail "owner_pid $(stat_of owner_pid) after session $sp claimed"
get again pc claim
[ "$again" = "$out" ] || fail "CLAIM again from the owner: $again"
out=$(proxy_ctl claim 2>&1) && fail "CLAIM from another file while session $sp owns it: $out"
echo "$out" | grep -q EBUSY || fail "CLAIM from another file: $out (expected EBUSY)"
out=$(proxy_ctl park 3 60000 2>&1) && fail "PARK from another file succeeded: $out"
echo "$out" | grep -q EACCES || fail "PARK 3 from another file: $out (expected EACCES)"
proxy_ctl stats | grep -q "^cpu=3 .* parked=1 " && fail "another file's refused PARK parked CPU 3"
out=$(proxy_ctl reset 2>&1) && fail "RESET from another file succeeded: $out"
echo "$out" | grep -q EACCES || fail "RESET from another file: $out (expected EACCES)"
# Arguments are checked before the owner: a bad request keeps its errno.
out=$(proxy_ctl park 0 0 2>&1) && fail "PARK 0 from another file succeeded: $out"
echo "$out" | grep -q EINVAL || fail "PARK 0 from another file: $out (expected EINVAL)"
rel0=$(stat_of releases)
pc_close || fail "session exited $?"
[ "$(stat_of owner_pid)" = 0 ] || fail "owner_pid $(stat_of owner_pid) after the owner closed"
[ "$(stat_of releases)" = $(( rel0 + 1 )) ] || fail "releases $rel0 -> $(stat_of releases) after the owner closed"
# Nobody owns it now: a one-shot PARK claims it, and its exit undoes it.
out=$(proxy_ctl park 3 60000) || fail "one-shot park 3 with no owner: $out"
until_ok 2000 "CPU 3 still parked after the one-shot park's process exited" \
	sh -c "! proxy_ctl stats | grep -q '^cpu=3 .* parked=1 '"
[ "$(stat_of owner_pid)" = 0 ] || fail "owner_pid $(stat_of owner_pid) after the one-shot park exited"
ok "ownership: session $sp owns after CLAIM; another file: CLAIM EBUSY, PARK and RESET EACCES, PARK 0 EINVAL; closed: no owner, releases +1; a one-shot park undone at its exit ($TOOK ms)"

seed=$(( $(date +%s) % 100000 ))
echo "   fuzz: seed $seed"
# proxy_ctl exits 1 when a call ended otherwise than the header says (it
# prints the first 20 such calls).
get out proxy_ctl fuzz 3000 $seed
echo "$out" | grep -q "^pid=[0-9]* owner_pid=0$" || fail "fuzz: the module had an owner before it: $out"
echo "$out" | grep -q "^reset=ok$" || fail "fuzz did not end with a RESET: $out"
must=$(echo "$out" | sed -n 's/^must_fail=//p')
valid=$(echo "$out" | sed -n 's/^valid=\([0-9]*\) .*/\1/p')
succeeded=$(echo "$out" | sed -n 's/^valid=.* succeeded=//p')
# Both kinds of call ran, and valid ones really reached the module's work.
[ "${must:-0}" -gt 0 ] && [ "${valid:-0}" -gt 0 ] && [ "${succeeded:-0}" -gt 0 ] ||
	fail "fuzz: $must must-fail calls, $valid valid, $succeeded succeeded: $out"
[ "$(online)" = "0-$(( $(nproc) - 1 ))" ] || wait_online "0-3" 10000 "after the fuzz"
proxy_ctl stats | grep "^cpu=" | grep -q "parked=1" && fail "a CPU still parked after the fuzz's RESET"
ok "fuzz: 3000 random ioctls (seed $seed): $must must fail and did, $valid valid ($succeeded succeeded): $(echo "$out" | grep '_by' | tr '\n' ' ')"

# Park 2-3 at once (hold-off 0): both go offline in one worker pass.
pc_open
calls0=$(stat_of remove_cpu_calls)
get out pc park 2-3 0
crit=${out#ok critical_ns=}
wait_online "0-1" 10000 "park 2-3"
phys=$(stat_of park_physical_ns)
[ "$(( $(stat_of remove_cpu_calls) - calls0 ))" = 2 ] || fail "park 2-3: $(( $(stat_of remove_cpu_calls) - calls0 )) remove_cpu calls"
ok "park 2-3: synchronous part $(( crit / 1000 )) us, offline after $(( phys / 1000 )) us (x$(( phys / (crit + 1) )))"
get out pc unpark 2-3
wait_online "0-3" 10000 "unpark 2-3"
ok "unpark 2-3: synchronous part $(( ${out#ok ns=} / 1000 )) us, online after $(( $(stat_of unpark_physical_ns) / 1000 )) us"

# Unpark within the hold-off: the offline never happens.
calls0=$(stat_of remove_cpu_calls)
pc park 3 3000 >/dev/null || fail "park 3 (hold-off 3 s)"
[ "$(online)" = "0-3" ] || fail "CPU 3 offline before its hold-off"
get out pc unpark 3
out=${out#ok }
sleep 4
[ "$(online)" = "0-3" ] || fail "CPU 3 went offline after an unpark within its hold-off"
[ "$(stat_of remove_cpu_calls)" = "$calls0" ] || fail "remove_cpu called after an unpark within the hold-off"
ok "park 3 + unpark within the 3 s hold-off: never offline, no remove_cpu, unpark took $(( ${out#ns=} / 1000 )) us"

# A device IRQ on a parked CPU moves off it and comes back.
pick_irq 3 || fail "no device IRQ whose affinity can be set to CPU 3"
irq=$IRQ
pc park 3 60000 >/dev/null || fail "park 3 (hold-off 60 s)"
t0=$(now_ms)
until [ "$(cat /proc/irq/$irq/smp_affinity_list)" != 3 ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq still on CPU 3 5 s after park"
	usleep 20000
done
moved=$(cat /proc/irq/$irq/smp_affinity_list)
pc unpark 3 >/dev/null || fail "unpark 3"
t0=$(now_ms)
until [ "$(cat /proc/irq/$irq/smp_affinity_list)" = 3 ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq not back on CPU 3 5 s after unpark ($(cat /proc/irq/$irq/smp_affinity_list))"
	usleep 20000
done
ok "IRQ $irq ($(ls /proc/irq/$irq | grep -v -e affinity -e node -e spurious | head -n 1)): CPU 3 parked -> moved to $moved; unparked -> back on 3"

# Parked again before the IRQ's next interrupt: the restore to 3 is still
# pending (the affinity reads as moved) and must not land on the parked CPU
# (proxy_stress, once: IRQ 4 on a lent CPU for good after a split and a fuse).
aff_is_not3() { [ "$(cat /proc/irq/$irq/smp_affinity_list)" != 3 ]; }
pc park 3 60000 >/dev/null || fail "park 3 (hold-off 60 s)"
echo "   IRQ $irq: CPU 3 parked"
t0=$(now_ms)
until aff_is_not3; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq still on CPU 3 5 s after the second park"
	usleep 20000
done
# No console line between the two: nothing interrupts on the serial port.
pc unpark 3 >/dev/null && pc park 3 60000 >/dev/null || fail "unpark 3 + park 3"
for i in 1 2 3 4 5 6 7 8 9 10; do echo "   IRQ $irq: line $i after unpark + park"; usleep 20000; done
aff=$(cat /proc/irq/$irq/smp_affinity_list) eff=$(cat /proc/irq/$irq/effective_affinity_list)
[ "$aff" != 3 ] && [ "$eff" != 3 ] ||
	fail "IRQ $irq on parked CPU 3 (affinity $aff, in effect $eff) after an unpark and a park between two of its interrupts"
pc unpark 3 >/dev/null || fail "unpark 3"
t0=$(now_ms)
until ! aff_is_not3; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq not back on CPU 3 5 s after the last unpark ($(cat /proc/irq/$irq/smp_affinity_list))"
	echo "   IRQ $irq: waiting for 3"
	usleep 20000
done
ok "IRQ $irq: unpark and park again before its next interrupt: it stayed off CPU 3 (affinity $aff, in effect $eff), back on 3 after"

# The administrator's choice wins. IRQ $irq moved off parked CPU 3, then set
# by hand while 3 is parked: to 1-2 (no parked CPU in it: left alone), and
# to 2-3 (a parked CPU in it); after the unpark the hand-set mask stays, not
# the one the module saved at the park (3). Each line printed makes the IRQ
# fire, so a pending IO-APIC affinity takes effect.
for want in 1-2 2-3; do
	pc park 3 60000 >/dev/null || fail "park 3 (hold-off 60 s)"
	until_ok 5000 "IRQ $irq still on CPU 3 after park" aff_is_not3
	echo "$want" >/proc/irq/$irq/smp_affinity_list || fail "cannot set IRQ $irq to $want by hand"
	for i in 1 2 3; do echo "   IRQ $irq: set to $want by hand while 3 is parked ($i)"; usleep 20000; done
	pc unpark 3 >/dev/null || fail "unpark 3"
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "   IRQ $irq: unparked ($i)"; usleep 50000; done
	aff=$(cat /proc/irq/$irq/smp_affinity_list)
	[ "$aff" = "$want" ] || fail "IRQ $irq: set to $want by hand while CPU 3 was parked, $aff after the unpark (the module's saved affinity overwrote the administrator's)"
	ok "IRQ $irq: set to $want by hand while CPU 3 was parked: still $aff after the unpark"
done
echo 3 >/proc/irq/$irq/smp_affinity_list || fail "cannot put IRQ $irq back on 3"
until_ok 5000 "IRQ $irq not back in effect on CPU 3" sh -c "echo '   IRQ $irq: to 3'; [ \"\$(cat /proc/irq/$irq/effective_affinity_list)\" = 3 ]"

# Emulation: every CPU busy; the spinners' mean share of their CPUs over 3 s
# by schedstat (/proc/stat counts injected idle partly as system time).
spins=
for c in 0 1 2 3; do spin -c $c 30 >/dev/null 3>&- 4<&- & spins="$spins $!"; done
# mean_share: the spinners' mean CPU share over 3 s, in tenths of %.
mean_share() {
	cpu_share 3000 $spins | awk '{ t += $1 } END { print int(t / NR) }'
}
sleep 1
off=$(mean_share)
pc emulate on high >/dev/null || fail "emulate on high"
dev_on=$(stat_of emulate_devices)
sleep 2	# the module corrects the idle periods over a few 200 ms windows
on=$(mean_share)
pc emulate off >/dev/null || fail "emulate off"
dev_off=$(stat_of emulate_devices)
sleep 1
after=$(mean_share)
kill $spins
[ "$dev_on" = "$(nproc)" ] || fail "emulation on: $dev_on idle_inject devices registered, want one a CPU ($(nproc))"
[ "$dev_off" = 0 ] || fail "emulation off (EMULATE off returned): $dev_off idle_inject devices still registered, want 0"
ok "idle_inject devices: $dev_on while emulating, $dev_off once EMULATE off returned"
ok "4 spinners get ${off} ‰ of their CPUs without emulation, ${on} ‰ with (high: 50 % duty), ${after} ‰ after off"
# Loose here (the shell and kthreads share these CPUs); exact on isolated CPUs in `emulate`.
[ "$on" -ge 350 ] && [ "$on" -le 650 ] || fail "emulation high: spinners got ${on} ‰, expected about 500"
[ "$off" -ge 800 ] && [ "$after" -ge 800 ] || fail "without emulation: spinners got ${off} ‰ / ${after} ‰"

# The owner's release ends the emulation, devices included.
pc_close || fail "session exited $?"
pc_open
pc emulate on med >/dev/null || fail "emulate on med"
[ "$(stat_of emulate_devices)" = "$(nproc)" ] || fail "emulation on again: $(stat_of emulate_devices) idle_inject devices"
pc_close || fail "session exited $?"
until_ok 5000 "$(stat_of emulate_devices) idle_inject devices still registered after the emulating owner closed" \
	sh -c '[ "$(proxy_ctl stats | sed -n "s/^emulate_devices=//p")" = 0 ]'
[ "$(stat_of emulate_on)" = 0 ] || fail "emulation still on after the owner closed"
ok "the emulating owner closed: emulation off and its idle_inject devices gone after $TOOK ms"
pc_open

# The owner gone undoes it all: CPU 3, offlined by the session's park, comes
# back, and the IRQ gets its affinity, by the release alone (before any
# rmmod), within 2 s of the kill.
pc park 3 0 >/dev/null || fail "park 3"
wait_online "0-2" 10000 "park 3 before the kill"
[ "$(cat /proc/irq/$irq/smp_affinity_list)" != 3 ] || fail "IRQ $irq on offline CPU 3"
t0=$(now_ms)
pc_kill
until [ "$(online)" = "0-3" ] && [ "$(cat /proc/irq/$irq/smp_affinity_list)" = 3 ]; do
	[ $(( $(now_ms) - t0 )) -lt 2000 ] ||
		fail "2 s after the owner's kill -9: online $(online), IRQ $irq on $(cat /proc/irq/$irq/smp_affinity_list) (want 0-3 and 3)"
	echo "   IRQ $irq: waiting for 3"
	usleep 20000
done
ok "owner killed (-9) with CPU 3 offlined by its park: 0-3 online and IRQ $irq back on 3 after $(( $(now_ms) - t0 )) ms; cleanup_ns $(stat_of cleanup_ns)"
# debugfs redirect_latency in every open mode. seq_file formats the file on
# an lseek too, so each open must have what a read would show; a write-only
# open reads nothing but can seek (dd's seek= opens O_WRONLY, lseeks, then
# writes; conv=notrunc: no O_TRUNC or ftruncate). A write empties the ring.
lat=/sys/kernel/debug/chameleon_proxy/redirect_latency
[ -e "$lat" ] || fail "no $lat (debugfs mounted: $(grep -c debugfs /proc/mounts))"
head -n 1 "$lat" | grep -q '^# entries=' || fail "$lat reads: $(head -n 1 "$lat")"
for seek in 0 1 5 100; do
	echo x | dd of="$lat" bs=1 seek=$seek conv=notrunc 2>/tmp/dd.err ||
		fail "write-only open, lseek to $seek, write: dd failed: $(cat /tmp/dd.err)"
done
head -n 1 "$lat" | grep -q '^# entries=0 dropped=0 lend_skipped=0 reclaim_skipped=0$' ||
	fail "after writes: $lat reads '$(head -n 1 "$lat")', want an empty ring"
# Read-write (the shell's <>) and read-only with a seek (dd's skip=).
echo x 1<>"$lat" || fail "read-write open and write failed"
dd if="$lat" of=/dev/null bs=1 skip=3 2>/tmp/dd.err || fail "read-only open, lseek, read: $(cat /tmp/dd.err)"
dd if="$lat" of=/dev/null bs=1 skip=100000 2>/tmp/dd.err || fail "read-only open, lseek past the end, read: $(cat /tmp/dd.err)"
ok "debugfs $(basename "$lat"): write-only opens with lseek 0/1/5/100 and a write, read-write and read-only opens with seeks: no fault, the ring emptied"

rmmod chameleon_proxy || fail "rmmod after the owner's release"
pass
