// SPDX-License-Identifier: GPL-2.0
/*
 * scx_floor: the least a sched_ext scheduler can do, to measure what the
 * sched_ext framework itself costs on a workload (issue 31: the pinned pipe
 * against EEVDF). Whatever a real scheduler (ours, bpfland, cosmos) adds
 * on top of this floor is its own policy's cost; what this floor costs over
 * EEVDF no BPF scheduler can win back.
 *
 * Two schedulers in one object; the loader creates and attaches one of the
 * two struct_ops maps and leaves the other (and the programs only it uses)
 * unloaded:
 *
 * floor_ops ("scx_floor"): every task runs where it was enqueued, in FIFO
 *   order, on that CPU's local DSQ. select_cpu takes the kernel's default
 *   idle-CPU pick and, when that CPU is idle, inserts straight into its
 *   local DSQ (the enqueue is then skipped). No dispatch: a local DSQ needs
 *   none. Three callbacks, each one kfunc call.
 *
 * floor_vtime_ops ("scx_floor_vtime"): the shape of a minimal weighted
 *   scheduler, which is also the shape of ours and of the peers: one shared
 *   DSQ ordered by virtual time, which CPUs pull from in dispatch; a task's
 *   vtime advances by the time it ran, scaled by its weight. Its cost over
 *   floor_ops is that of a shared queue (one lock for every CPU), a
 *   dispatch per pick and the running/stopping accounting.
 *
 * Built for the kernels the bench boots (7.3.4): the vtime is set through
 * scx_bpf_task_set_dsq_vtime() (v6.19+), as the kernel now wants it set,
 * not by a store into the task.
 *
 * Neither balances load beyond the idle pick at wakeup, and neither has a
 * notion of fairness beyond the above: they are measuring sticks, not
 * schedulers to run anything on.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

/* The kernel's default slice (SCX_SLICE_DFL, 20 ms), as most scx schedulers use. */
#define FLOOR_SLICE_NS 20000000ULL
/* The shared DSQ of floor_vtime (any id below the builtin ones). */
#define FLOOR_DSQ 0
/* A task's weight at nice 0 (p->scx.weight is 1..10000, 100 at nice 0). */
#define WEIGHT_NICE0 100

/*
 * Why the scheduler left, for the loader: the kernel may eject a BPF
 * scheduler on its own (the watchdog, an error); the loader polls this to
 * say so and exit instead of waiting for a signal forever.
 */
int exit_kind;	/* plain C types: the skeleton declares them for the loader */
char exit_reason[128];
char exit_msg[256];

static void record_exit(struct scx_exit_info *ei)
{
	bpf_probe_read_kernel_str(exit_reason, sizeof(exit_reason), ei->reason);
	bpf_probe_read_kernel_str(exit_msg, sizeof(exit_msg), ei->msg);
	/* Last: the loader reads the strings once it sees a kind. */
	exit_kind = ei->kind;
}

/*
 * Both schedulers: the kernel's own idle pick (prev_cpu if idle, else an
 * idle sibling/LLC CPU). On an idle CPU the task goes straight to that
 * CPU's local DSQ, so the wakeup costs no enqueue call at all.
 */
SEC("struct_ops/floor_select_cpu")
s32 BPF_PROG(floor_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, FLOOR_SLICE_NS, 0);
	return cpu;
}

/*
 * floor: the local DSQ of the CPU the task is enqueued on (the one
 * select_cpu returned, or its only CPU when pinned: then select_cpu is not
 * called at all). The cheapest insert there is: no shared lock, no
 * dispatch afterwards.
 */
SEC("struct_ops/floor_enqueue")
void BPF_PROG(floor_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, FLOOR_SLICE_NS, enq_flags);
}

SEC("struct_ops/floor_exit")
void BPF_PROG(floor_exit, struct scx_exit_info *ei)
{
	record_exit(ei);
}

SEC(".struct_ops.link")
struct sched_ext_ops floor_ops = {
	.select_cpu = (void *)floor_select_cpu,
	.enqueue = (void *)floor_enqueue,
	.exit = (void *)floor_exit,
	.name = "floor",
};

/*
 * floor_vtime's clock: the largest vtime a task started running with. Read
 * and written by every CPU without a lock: a lost update only lets a task
 * start a little ahead or behind, and a minimal scheduler should not pay
 * for an atomic here when none of its peers' hot paths would.
 */
static u64 vnow;

SEC("struct_ops.s/floor_vtime_init")
s32 BPF_PROG(floor_vtime_init)
{
	return scx_bpf_create_dsq(FLOOR_DSQ, -1);
}

/*
 * A task waking after a long sleep starts at most one slice behind the
 * clock: it gets ahead of the busy tasks, but cannot bank its whole sleep.
 */
SEC("struct_ops/floor_vtime_enqueue")
void BPF_PROG(floor_vtime_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 vtime = p->scx.dsq_vtime;

	if ((s64)(vtime - (vnow - FLOOR_SLICE_NS)) < 0)
		vtime = vnow - FLOOR_SLICE_NS;
	scx_bpf_dsq_insert_vtime(p, FLOOR_DSQ, FLOOR_SLICE_NS, vtime, enq_flags);
}

SEC("struct_ops/floor_vtime_dispatch")
void BPF_PROG(floor_vtime_dispatch, s32 cpu, struct task_struct *prev)
{
	scx_bpf_dsq_move_to_local(FLOOR_DSQ);
}

SEC("struct_ops/floor_vtime_running")
void BPF_PROG(floor_vtime_running, struct task_struct *p)
{
	if ((s64)(p->scx.dsq_vtime - vnow) > 0)
		vnow = p->scx.dsq_vtime;
}

/*
 * The slice used (the kernel counts p->scx.slice down), weighted. A slice
 * the kernel set itself (a task it queued on its own, e.g. while exiting)
 * may be longer than ours: count nothing rather than wrap.
 */
SEC("struct_ops/floor_vtime_stopping")
void BPF_PROG(floor_vtime_stopping, struct task_struct *p, bool runnable)
{
	u64 slice = p->scx.slice;

	if (slice < FLOOR_SLICE_NS)
		scx_bpf_task_set_dsq_vtime(p, p->scx.dsq_vtime +
					   (FLOOR_SLICE_NS - slice) * WEIGHT_NICE0 / p->scx.weight);
}

/* A task entering the scheduler starts at the clock. */
SEC("struct_ops/floor_vtime_enable")
void BPF_PROG(floor_vtime_enable, struct task_struct *p)
{
	scx_bpf_task_set_dsq_vtime(p, vnow);
}

SEC(".struct_ops.link")
struct sched_ext_ops floor_vtime_ops = {
	.select_cpu = (void *)floor_select_cpu,
	.enqueue = (void *)floor_vtime_enqueue,
	.dispatch = (void *)floor_vtime_dispatch,
	.running = (void *)floor_vtime_running,
	.stopping = (void *)floor_vtime_stopping,
	.enable = (void *)floor_vtime_enable,
	.init = (void *)floor_vtime_init,
	.exit = (void *)floor_exit,
	.name = "floor_vtime",
};
