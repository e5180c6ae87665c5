/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A higher class takes a CPU from us, and gives it back: ops.cpu_release and
 * ops.cpu_acquire, and the hold a per-CPU kthread's short turn puts on the
 * CPU's queue. The rules and why are in preempt.h. Included by main.bpf.c.
 */

/*
 * @cpu's queue is still held for a per-CPU kthread's turn there: nobody
 * steals from it (preempt.h). These two are global functions, which the
 * verifier checks once rather than at every call: steal() asks in a loop,
 * and inlined they doubled its work on enqueue and dispatch (6.16: 5672 ->
 * 11262 and 5283 -> 12007 instructions).
 */
__noinline int kthread_holds(s32 cpu)
{
	struct cpu_ctx *cc;
	u64 at;

	if (!cpu_valid(cpu))
		return 0;
	cc = cpu_ctx(cpu);
	at = READ_ONCE(cc->released_at);
	return at && chameleon_kthread_holds(at, READ_ONCE(cc->released_kthread),
					     bpf_ktime_get_ns(), CHAMELEON_RELEASE_NS);
}

/* Where a task a kthread pushed off @cpu goes back into its queue (preempt.h). */
__noinline u64 resume_vtime(s32 cpu, u64 vtime)
{
	struct task_struct *head;

	if (!cpu_valid(cpu))
		return vtime;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (!head)
		return vtime;
	return chameleon_vtime_resume(vtime, head->scx.dsq_vtime, 1);
}

/*
 * A higher class (RT, deadline, stop) takes @cpu from us. A kthread bound
 * here changes nothing: kmod_proxy's idle injection (idle_inject/N: the
 * emulation makes the CPU slower, it does not take it away), the stopper
 * (the soft-lockup watchdog's every 4 s), a threaded interrupt. Their turns
 * are short: the object stays (an injected idle period is its emulated
 * speed), and the guard timer splits if the owner stays away for
 * CHAMELEON_GUARD_NS. Anyone else may hold the CPU for long: a fused owner
 * gives its CPUs back (they would idle for nothing).
 *
 * The local queue goes back to enqueue either way: the kernel calls this once
 * until the CPU is ours again (cpu_acquire), so an RT task that follows the
 * kthread would find the local queue full and never let it run (preempt.h).
 * After a kthread the tasks wait in this CPU's own queue, in front and
 * unstolen while the hold is fresh; after anyone else they are anyone's, as
 * scx schedulers do.
 */
void BPF_STRUCT_OPS(chameleon_cpu_release, s32 cpu,
		    struct scx_cpu_release_args *args)
{
	struct task_struct *next = args->task;
	struct rep_ctx *rc = rep_ctx(cpu);
	bool fused = rc && rc->state == REP_FUSED;
	struct cpu_ctx *cc;

	if (!cpu_valid(cpu)) {
		scx_bpf_reenqueue_local();
		return;
	}
	cc = cpu_ctx(cpu);
	WRITE_ONCE(cc->released_kthread, next && is_pcpu_kthread(next));
	WRITE_ONCE(cc->released_at, bpf_ktime_get_ns() ?: 1);
	if (cc->released_kthread) {
		if (fused)
			cpu_stats[CPU_IDX(cpu)].nr_kthread_keeps++;
	} else if (fused) {
		split(cpu, CHAMELEON_SPLIT_PREEMPT);
	}
	scx_bpf_reenqueue_local();
}

/* @cpu is ours again: its queue is its own to serve. */
void BPF_STRUCT_OPS(chameleon_cpu_acquire, s32 cpu,
		    struct scx_cpu_acquire_args *args)
{
	if (cpu_valid(cpu))
		WRITE_ONCE(cpu_ctx(cpu)->released_at, 0);
}
