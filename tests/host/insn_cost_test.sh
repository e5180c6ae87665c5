#!/usr/bin/env bash
# The arithmetic of bench/insn_cost's report (report.awk and the tables of
# bench/insn_cost/report) on a synthetic boot: a guest log (kallsyms, windows,
# run_cnt) and a plugin output whose sums are known. Each case prints
# "ok NAME" or "not ok NAME: why" (tests/run counts them as
# host::insn_cost::NAME).
#   tests/host/insn_cost_test.sh
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Two schedulers in one boot of 4 vCPUs, each a window of hackbench; the
# same JIT addresses reused by the second (as after a detach).
cat >"$dir/insn_cost-4.vm.log" <<'EOF'
[    1.0] some console line
INSN header cpus=4 kernel=7.3.4
INSN ksym chameleon ffffffffc0001000 bpf__sched_ext_ops_enqueue
INSN ksym chameleon ffffffffc0002000 bpf_prog_aaaaaaaaaaaaaaaa_chameleon_enqueue
INSN ksym chameleon ffffffffc0003000 bpf_prog_bbbbbbbbbbbbbbbb_guard_fn
INSN ksym chameleon ffffffffc0004000 bpf__sched_ext_ops_select_cpu
INSN ksym chameleon ffffffffc0005000 bpf_prog_cccccccccccccccc_chameleon_select_cpu
INSN ksym chameleon ffffffffc0005100 bpf_prog_9999999999999999_loop_cb
INSN ksym chameleon ffffffffc0fffff0 bpf_prog_dddddddddddddddd_chameleon_tick
INSN ksym chameleon ffffffff81100000 scx_bpf_dsq_insert
INSN ksym chameleon ffffffff81100000 scx_bpf_dispatch
INSN ksym chameleon ffffffff81200000 __bpf_prog_enter
INSN ksym chameleon ffffffff81300000 bpf_task_storage_get
INSN window 1 chameleon hackbench 400000 message 3.5
INSN runcnt 1 aaaaaaaaaaaaaaaa chameleon_enqueue 10
INSN runcnt 1 cccccccccccccccc chameleon_select_cpu 4
INSN runcnt 1 eeeeeeeeeeeeeeee other_prog 7
INSN ksym scx_bpfland ffffffffc0001000 bpf__sched_ext_ops_enqueue
INSN ksym scx_bpfland ffffffffc0002000 bpf_prog_ffffffffffffffff_bpfland_enqueue
INSN ksym scx_bpfland ffffffff81100000 scx_bpf_dsq_insert
INSN window 2 scx_bpfland hackbench 400000 message 4.0
INSN runcnt 2 ffffffffffffffff bpfland_enqueue 19
PASS bench_insn_cost
EOF
cat >"$dir/insn_cost-4.plugin" <<'EOF'
# insn_cost 1
window 1 insns 800000000 pauses 4000
window 2 insns 1200000000 pauses 0
site 1 call ffffffffc0001040 ffffffffc0002000 10 9000 20 1500
site 1 call ffffffffc0001020 ffffffff81200000 10 500 0 50
site 1 call ffffffffc000202c ffffffff81100000 30 6000 20 400
site 1 call ffffffffc0002100 ffffffff81300010 5 1000 0 300
site 1 call ffffffffc0004030 ffffffffc0005000 4 3000 0 800
site 1 call ffffffffc1000010 ffffffff81100000 2 100 0 50
site 1 call ffffffffc0005008 0 1 10 0 10
site 1 entry ffffffffc0001000 0 10 11300 20 1800
site 1 entry ffffffffc0003000 0 3 2400 0 900
site 1 call ffffffff00000010 ffffffff81100000 1 1 0 1
site 1 nested ffffffffc0005100 0 6 600 0 100
site 2 call ffffffffc0001040 ffffffffc0002000 20 30000 0 2000
site 2 call ffffffffc000202c ffffffff81100000 20 8000 0 500
site 9 call ffffffffc0001040 ffffffffc0002000 99 99 0 1
health lost 2 mismatch 1 overflow 0 sites 120 dropped 0 reg_fail 0
EOF

raw=$(tr -d '\r' <"$dir/insn_cost-4.vm.log" | awk '$1 == "INSN"' | sort -s -k2,2 -k3,3 -k4,4 |
	awk -v cpus=4 -f "$repo/bench/insn_cost/report.awk" - "$dir/insn_cost-4.plugin")

# check NAME LINE: LINE must be one of report.awk's records.
check() {
	if printf '%s\n' "$raw" | grep -qxF -- "$2"; then
		echo "ok $1"
	else
		echo "not ok $1: no line '$2' in:"
		printf '%s\n' "$raw" | sed 's/^/    /'
	fi
}
absent() {
	if printf '%s\n' "$raw" | grep -q -- "$2"; then
		echo "not ok $1: unexpected '$2'"
	else
		echo "ok $1"
	fi
}

check callback_is_the_trampolines_call_of_its_program \
	"cb,4,chameleon,hackbench,callback,enqueue,10,9000,20,1500,10"
check callback_run_cnt_by_tag "cb,4,chameleon,hackbench,callback,select_cpu,4,3000,0,800,4"
check entry_of_a_timer_callback_without_run_cnt "cb,4,chameleon,hackbench,entry,guard_fn,3,2400,0,900,-"
check trampoline_entered_from_the_kernel "cb,4,chameleon,hackbench,trampoline,enqueue,10,11300,20,1800,-"
check kfunc_site_with_offset_and_alias "site,4,chameleon,hackbench,chameleon_enqueue,0x2c,scx_bpf_dsq_insert,30,6000,20,400"
check target_inside_a_function "site,4,chameleon,hackbench,chameleon_enqueue,0x100,bpf_task_storage_get+0x10,5,1000,0,300"
check offset_across_ten_hex_digits "site,4,chameleon,hackbench,chameleon_tick,0x20,scx_bpf_dsq_insert,2,100,0,50"
check indirect_call_site "site,4,chameleon,hackbench,chameleon_select_cpu,0x8,indirect,1,10,0,10"
absent trampolines_own_calls_left_out "__bpf_prog_enter"
check site_below_every_symbol_unmatched "unmatched,4,1,call,ffffffff00000010"
# BPF instructions: the callbacks (9000 + 3000) and the entry (2400), not
# the trampoline's entry (it contains the enqueue callback).
check nested_entry_listed "cb,4,chameleon,hackbench,nested,loop_cb,6,600,0,100,-"
check bpf_per_window_counts_each_once "unit,4,chameleon,hackbench,400000,message,3.5,14400,800000000,4000"
check jit_addresses_reused_by_the_next_scheduler \
	"cb,4,scx_bpfland,hackbench,callback,enqueue,20,30000,0,2000,19"
check second_window "unit,4,scx_bpfland,hackbench,400000,message,4.0,30000,1200000000,0"
absent window_not_in_the_log ",99,99,"
check health "health,4,2,1,0,120,0,0"

# The tables: per call, per unit, run_cnt against calls.
bash "$repo/bench/insn_cost/report" "$dir" >"$dir/report.md" 2>"$dir/report.err"
tcheck() {
	if grep -qF -- "$2" "$dir/report.md"; then
		echo "ok $1"
	else
		echo "not ok $1: no '$2' in:"
		sed 's/^/    /' "$dir/report.md" "$dir/report.err"
	fi
}
tcheck table_per_call_with_pauses "| chameleon | enqueue | 900 (10; 2.0 pauses) |"
tcheck table_per_call "| scx_bpfland | enqueue | 1500 (20) |"
tcheck table_nested "| chameleon | loop_cb (called back by a helper, inside a callback) | 100 (6) |"
tcheck table_entry "| chameleon | guard_fn (called by the kernel) | 800 (3) |"
tcheck table_bpf_per_unit "| chameleon | BPF instructions per message (callbacks + entries) | 0.0 |"
tcheck table_guest_per_unit "| chameleon | guest instructions per message (every vCPU) | 2000.0 |"
tcheck table_pauses_per_unit "| chameleon | pause instructions per message (every vCPU) | 0.0 |"
tcheck table_run_cnt "| 4 | chameleon | hackbench | 2 | 14 | 14 | 0 |"
tcheck table_run_cnt_difference "| 4 | scx_bpfland | hackbench | 1 | 20 | 19 | 1 (enqueue) |"
tcheck table_top_site "| chameleon | chameleon_enqueue+0x2c | scx_bpf_dsq_insert | 30 | 200 | 41.7 % |"
tcheck unmatched_reported_on_stderr_file "| 4 | chameleon | hackbench"
if grep -q "1 plugin records at addresses no symbol covers" "$dir/report.err"; then
	echo "ok unmatched_reported"
else
	echo "not ok unmatched_reported: $(cat "$dir/report.err")"
fi

# kernel_share: a callback's kernel part. select_cpu (10 calls, 5000
# instructions, 200 of them pauses) calls a kfunc (2000 in all), a leaf BPF
# subprogram (not kernel: 300) and a shared subprogram `near` (called 4 times
# from here and 12 times from enqueue) that calls a kfunc for 1600 in all:
# select_cpu's share is 4/16 of it, 400. Kernel part 2400 / 10 = 240 a call;
# its own (5000 - 200 - 2400) / 10 = 240.
ks=$dir/ks
mkdir -p "$ks"
cat >"$ks/insn_cost.csv" <<'CSV'
cpus,scheduler,load,kind,name,calls,insns,pauses,max,run_cnt
4,chameleon,hackbench,callback,select_cpu,10,5000,200,900,10
4,chameleon,hackbench,callback,enqueue,12,2400,0,300,12
CSV
cat >"$ks/insn_cost_sites.csv" <<'CSV'
cpus,scheduler,load,prog,offset,target,calls,insns,pauses,max
4,chameleon,hackbench,chameleon_select_cpu,0x10,__scx_bpf_select_cpu_and,10,2000,0,300
4,chameleon,hackbench,chameleon_select_cpu,0x20,task_rep,10,300,0,30
4,chameleon,hackbench,chameleon_select_cpu,0x30,near,4,1000,0,300
4,chameleon,hackbench,chameleon_enqueue,0x40,near,12,2000,0,300
4,chameleon,hackbench,near,0x8,scx_bpf_pick_idle_cpu_node,16,1600,0,200
CSV
ksout=$(bash "$repo/bench/insn_cost/kernel_share" "$ks")
for want in "4 select_cpu 10 480 240 240" "4 enqueue 12 200 100 100"; do
	n=$(echo "$want" | cut -d' ' -f2)
	if printf '%s\n' "$ksout" | grep -qxF -- "$want"; then
		echo "ok kernel_share_$n"
	else
		echo "not ok kernel_share_$n: no '$want' in: $ksout"
	fi
done
