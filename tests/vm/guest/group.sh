#!/bin/sh
# Several tests in one boot: group.sh NAME... runs NAME.sh for each, one
# after the other, each as /cmd would run it alone (in /root, a shell of its
# own, in the foreground). tests/run uses it for the kernel matrix
# (NAME@VERSION), the primary kernel's tests that need no runner options of
# their own, and the @mttcg ones that need none, where a boot per test cost
# more than some of the tests; it reports each test on its own, from these
# lines:
#   === group: begin NAME ===
#   ... the test's output ...
#   === group: end NAME status RC after MS ms; kernel log: clean|N lines ===
# and exits 0 if every test passed.
# Between two tests, what a test can leave behind is undone, so that the
# next one starts as on a fresh boot: its processes (the agent, spinners)
# killed, sched_ext disabled, every CPU online, modules it loaded removed,
# RT throttling, transparent huge pages, IRQ affinities and cgroups (tags are cgroup xattrs) as at
# boot, /tmp, /root and /run/scx_chameleon emptied, files it made anywhere
# else in the root file system (e.g. /etc/default, /var/run/scx's stats
# socket), pins it left in /sys/fs/bpf and file systems it mounted removed.
# Then the state is checked; a test that left it unrestorable fails.
# Each test has the time it would have alone: tests/vm/run's default
# timeout (300 s) less a boot, GROUP_TEST_S (default 290) s. A test still
# running then fails as a timeout would (the kernel's blocked tasks and
# backtraces, SysRq w and l, printed from its part of the log), is killed
# with what it started, and the next test runs.
# The kernel log: each test's part (from a marker written to /dev/kmsg at
# its start, to the end of its cleanup) is checked against the runner's
# patterns (kernel_log_bad, the same tests/vm/run applies to a whole boot);
# a match fails that test, and tests/vm/run fails the boot as well.
PATH=/opt/chameleon/bin:/opt/chameleon/tools:/opt/chameleon/guest:/bin:/sbin:/usr/bin:/usr/sbin
g=/run/chameleon-group
mkdir -p $g
pattern=/opt/chameleon/guest/kernel_log_bad
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
# The root file system's files (the initramfs, not /tmp, /run or the other
# mounts), but for /root's, which every test has to itself.
rootfs_files() { find / -xdev | grep -v '^/root/' | sort; }

# The boot's state, to restore and to compare with.
rt0=$(cat /proc/sys/kernel/sched_rt_runtime_us)
for d in /proc/irq/[0-9]*; do
	echo "${d#/proc/irq/} $(cat "$d/smp_affinity_list" 2>/dev/null)"
done >$g/irq
# (a line that is no module's name: busybox grep -f of an empty file
# matches every line)
{ echo "-"; cut -d' ' -f1 /proc/modules; } | sort >$g/modules
find /sys/fs/cgroup -mindepth 1 -type d | sort >$g/cgroups
online0=$(cat /sys/devices/system/cpu/online)
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp0=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $thp 2>/dev/null)
rootfs_files >$g/files
find /sys/fs/bpf -mindepth 1 | sort >$g/bpf
cut -d' ' -f2 /proc/mounts | sort >$g/mounts
limit=${GROUP_TEST_S:-290}
# Every process now (init, its sentinels, this shell): any other is a test's.
ls /proc | grep -x '[0-9]*' >$g/pids

# leftovers: into $g/left, the processes not in $g/pids, but for kernel
# threads (kthreadd, pid 2, and its children), zombies (orphans init has not
# reaped yet) and this shell's own (the awk).
leftovers() {
	awk -v self=$$ '
	NR == FNR { keep[$1] = 1; next }
	{
		pid = FILENAME; sub(/^\/proc\//, "", pid); sub(/\/stat$/, "", pid)
		s = $0; sub(/.*\) /, "", s); split(s, f, " ")
		if (!(pid in keep) && pid != 2 && f[2] != 2 && pid != self && f[2] != self && f[1] != "Z")
			print pid
	}' $g/pids /proc/[0-9]*/stat 2>/dev/null >$g/left
	[ -s $g/left ]
}

# cleanup: undo what the test left; prints what it found, one line each;
# status 1 if something could not be put back.
cleanup() {
	_bad=0
	_t=$(now_ms)
	while leftovers; do
		[ $(( $(now_ms) - _t )) -lt 10000 ] || { echo "processes still there after kill -9: $(tr '\n' ' ' <$g/left)"; _bad=1; break; }
		for _p in $(cat $g/left); do
			echo "left running: pid $_p ($(tr '\0' ' ' </proc/$_p/cmdline 2>/dev/null | cut -c1-80))"
			kill -9 "$_p" 2>/dev/null
		done
		usleep 100000
	done
	_t=$(now_ms)
	until [ "$(cat /sys/kernel/sched_ext/state)" = disabled ]; do
		[ $(( $(now_ms) - _t )) -lt 30000 ] || { echo "sched_ext still $(cat /sys/kernel/sched_ext/state) 30 s after its agent was killed"; _bad=1; break; }
		usleep 50000
	done
	# (read, not $(cat): a fork costs tens of ms under TCG, and this runs
	# between every two tests)
	for _f in /sys/devices/system/cpu/cpu[0-9]*/online; do
		read -r _v <"$_f"
		[ "$_v" = 1 ] && continue
		echo "${_f%/online} left offline"
		echo 1 >"$_f" || _bad=1
	done
	for _m in $(cut -d' ' -f1 /proc/modules | grep -vxF -f $g/modules); do
		echo "module $_m left loaded"
		_t=$(now_ms)
		until rmmod "$_m" 2>/dev/null; do
			[ $(( $(now_ms) - _t )) -lt 30000 ] || { echo "rmmod $_m refused for 30 s"; _bad=1; break; }
			usleep 100000
		done
	done
	[ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" = "$rt0" ] ||
		{ echo "sched_rt_runtime_us left at $(cat /proc/sys/kernel/sched_rt_runtime_us)"; echo "$rt0" >/proc/sys/kernel/sched_rt_runtime_us; }
	_v=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $thp 2>/dev/null)
	[ "$_v" = "$thp0" ] || { echo "transparent huge pages left at $_v"; echo "$thp0" >$thp; }
	while read -r _n _a; do
		_c=
		read -r _c 2>/dev/null </proc/irq/$_n/smp_affinity_list
		[ "$_c" = "$_a" ] && continue
		echo "IRQ $_n affinity left at $_c (was $_a)"
		echo "$_a" >/proc/irq/$_n/smp_affinity_list 2>/dev/null
	done <$g/irq
	for _c in $(find /sys/fs/cgroup -mindepth 1 -type d | sort -r); do
		grep -qxF "$_c" $g/cgroups && continue
		echo "cgroup $_c left"
		rmdir "$_c" 2>/dev/null || { echo "cgroup $_c not removable"; _bad=1; }
	done
	rm -rf /tmp/* /tmp/.[!.]* /root/* /root/.[!.]* /run/scx_chameleon
	for _m in $(cut -d' ' -f2 /proc/mounts | sort | grep -vxF -f $g/mounts | sort -r); do
		echo "file system on $_m left mounted"
		umount "$_m" || { echo "cannot unmount $_m"; _bad=1; }
	done
	for _f in $(find /sys/fs/bpf -mindepth 1 | sort | grep -vxF -f $g/bpf | sort -r); do
		echo "$_f left in bpffs"
		rm -rf "$_f"
	done
	for _f in $(rootfs_files | grep -vxF -f $g/files | sort -r); do
		echo "file $_f left"
		rm -rf "$_f"
	done
	[ "$(cat /sys/devices/system/cpu/online)" = "$online0" ] || { echo "online CPUs $(cat /sys/devices/system/cpu/online), at boot $online0"; _bad=1; }
	[ "$({ echo "-"; cut -d' ' -f1 /proc/modules; } | sort)" = "$(cat $g/modules)" ] || { echo "modules loaded: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"; _bad=1; }
	rootfs_files >$g/files.now
	cmp -s $g/files.now $g/files || { echo "files of the root file system missing: $(grep -vxF -f $g/files.now $g/files | head -n 5 | tr '\n' ' ')"; _bad=1; }
	return $_bad
}

failed=0
for t in "$@"; do
	echo "<6>chameleon-group: begin $t" >/dev/kmsg
	echo "=== group: begin $t ==="
	t0=$(now_ms)
	rm -f $g/pid $g/timedout
	# The watchdog: after $limit s, evidence into the kernel log and the
	# test's shell killed (what it started is cleanup's). Only a sleep that
	# ran its course acts: the one killed below, as the test ends, makes the
	# watchdog exit without a word.
	(
		sleep $limit && {
			echo 1 >$g/timedout
			echo w >/proc/sysrq-trigger
			echo l >/proc/sysrq-trigger
			kill -9 $(cat $g/pid)
		}
	) </dev/null >/dev/null 2>&1 &
	wd=$!
	# In the foreground, as /cmd runs a test alone (its own pid noted for
	# the watchdog: exec keeps it).
	sh -c 'echo $$ >'$g'/pid; cd /root && exec sh "$0"' "/opt/chameleon/guest/$t.sh" </dev/null
	rc=$?
	ms=$(( $(now_ms) - t0 ))
	# The watchdog's sleep (its child), which ends the watchdog, then the
	# watchdog itself.
	for _p in $(awk -v w=$wd '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); if (f[2] == w) { p = FILENAME; sub(/^\/proc\//, "", p); sub(/\/stat$/, "", p); print p } }' /proc/[0-9]*/stat 2>/dev/null); do
		kill -9 $_p 2>/dev/null
	done
	kill -9 $wd 2>/dev/null
	wait $wd 2>/dev/null
	if [ -f $g/timedout ]; then
		echo "FAIL $t: still running after $limit s (alone, tests/vm/run's timeout would have ended it): killed"
		dmesg | sed -n "/chameleon-group: begin $t\$/,\$p" | tail -n 400 | sed 's/^/group: evidence: /'
		rc=91
	fi
	# (not in a $( ) subshell: cleanup's awk must be this shell's child)
	if cleanup >$g/cleanup; then
		sed 's/^/group: after the test: /' $g/cleanup
	else
		sed 's/^/group: after the test: /' $g/cleanup
		echo "FAIL $t: what it left could not be undone: $(tr '\n' ';' <$g/cleanup)"
		[ "$rc" != 0 ] || rc=1
	fi
	bad=$(dmesg -r | sed -n "/chameleon-group: begin $t\$/,\$p" | grep -E -f $pattern | head -n 5)
	if [ -n "$bad" ]; then
		echo "$bad" | sed 's/^/group: kernel log: /'
		echo "FAIL $t: kernel log has: $(echo "$bad" | head -n 1 | cut -c1-160)"
		klog="$(echo "$bad" | wc -l) lines"
		[ "$rc" != 0 ] || rc=1
	else
		klog=clean
	fi
	echo "=== group: end $t status $rc after $ms ms; kernel log: $klog ==="
	[ "$rc" = 0 ] || failed=1
done
exit $failed
