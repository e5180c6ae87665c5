#!/bin/sh
# chameleon_proxy under sysfs CPU hotplug (module only, 4 CPUs): what someone
# else does to a CPU while the module holds IRQs off it or has parked it.
# (a) A parked CPU we took offline and someone brings back online is no longer
#     ours (not "offlined"), and stays parked.
# (b) IRQ with affinity 2-3, CPU 3 parked: the module sets it to 2; CPU 2 goes
#     offline through sysfs (the kernel would break an affinity with no CPU
#     left to all CPUs, for good), comes back, CPU 3 is unparked: the IRQ must
#     end on 2-3, exactly as before.
# (c) IRQ pinned to 3, CPU 3 parked (the IRQ goes elsewhere), taken offline
#     through sysfs, unparked while offline (its original cannot be set yet),
#     brought back: the IRQ must end on 3.
# Every step is read from the kernel: /proc/irq/N/smp_affinity_list and
# /sys/devices/system/cpu/online; the module's STATS only for (a)'s marks.
. /opt/chameleon/guest/lib.sh

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
cpu_online() { echo "$2" >"/sys/devices/system/cpu/cpu$1/online" || fail "echo $2 > cpu$1/online"; }
aff() { cat "/proc/irq/$1/smp_affinity_list"; }
# wait_aff IRQ LIST MS WHAT: until the IRQ's affinity reads LIST.
wait_aff() {
	_t0=$(now_ms)
	until [ "$(aff "$1")" = "$2" ]; do
		[ $(( $(now_ms) - _t0 )) -lt "$3" ] || fail "$4: IRQ $1 on $(aff "$1"), expected $2 within $3 ms"
		usleep 20000
	done
}
cpu_flags() { proxy_ctl stats | grep "^cpu=$1 " | tr ' ' '\n' | grep -E "^(parked|offlined|online)=" | tr '\n' ' '; }

# --- (a) someone else brings a CPU we parked and offlined back ---
pc_open
pc park 3 0 >/dev/null || fail "park 3 0"
wait_online 0-2
flags=$(cpu_flags 3)
case $flags in *"parked=1 "*"offlined=1 "*) ;; *) fail "(a) after the park: cpu 3 $flags" ;; esac
cpu_online 3 1
t0=$(now_ms)
until case $(cpu_flags 3) in *"parked=1 "*"offlined=0 "*"online=1"*) true ;; *) false ;; esac; do
	[ $(( $(now_ms) - t0 )) -lt 2000 ] || fail "(a) CPU 3 online through sysfs, the module still says: $(cpu_flags 3)"
	usleep 20000
done
ok "(a) CPU 3 parked, offlined by the module, onlined through sysfs: $(cpu_flags 3)"
pc unpark 3 >/dev/null || fail "(a) unpark 3"
sleep 1
[ "$(online)" = 0-3 ] || fail "(a) online $(online) after unpark"
pc_close || fail "(a) session exit"

# --- (b) the CPU an IRQ was moved to goes offline through sysfs ---
pick_irq 2-3 || fail "no device IRQ whose affinity can be set to 2-3"
irq=$IRQ
ok "(b) IRQ $irq on 2-3"
pc_open
pc park 3 60000 >/dev/null || fail "(b) park 3"
wait_aff "$irq" 2 5000 "(b) park 3"
cpu_online 2 0
echo "   (b) CPU 2 offline: IRQ $irq on $(aff "$irq")"
cpu_online 2 1
wait_aff "$irq" 2 5000 "(b) CPU 2 back online"
pc unpark 3 >/dev/null || fail "(b) unpark 3"
wait_aff "$irq" 2-3 5000 "(b) unpark 3"
ok "(b) IRQ $irq: 2-3, parked 3: 2, CPU 2 offline and back, unparked: $(aff "$irq")"
pc_close || fail "(b) session exit"

# --- (c) an IRQ's only CPU is parked, taken offline, unparked, brought back ---
echo 3 >"/proc/irq/$irq/smp_affinity_list" || fail "(c) IRQ $irq to 3"
usleep 200000
wait_aff "$irq" 3 2000 "(c) set to 3"
pc_open
pc park 3 60000 >/dev/null || fail "(c) park 3"
t0=$(now_ms)
while [ "$(aff "$irq")" = 3 ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "(c) IRQ $irq still on 3 after park"
	usleep 20000
done
moved=$(aff "$irq")
cpu_online 3 0
pc unpark 3 >/dev/null || fail "(c) unpark 3"
sleep 1
echo "   (c) parked: IRQ $irq on $moved; CPU 3 offline, unparked: on $(aff "$irq")"
cpu_online 3 1
wait_aff "$irq" 3 5000 "(c) CPU 3 back online"
ok "(c) IRQ $irq: 3, parked: $moved, CPU 3 offline and unparked, back online: $(aff "$irq")"
pc_close || fail "(c) session exit"

[ "$(stat_of irq_failures)" = 0 ] || echo "   irq_failures=$(stat_of irq_failures) last error $(stat_of irq_last_error)"
rmmod chameleon_proxy || fail "rmmod"
pass
