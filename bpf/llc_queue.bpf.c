/* SPDX-License-Identifier: GPL-2.0 */
/*
 * LLC queues: a task that may run on any CPU, untagged, waits in one vtime
 * queue shared by the CPUs of its LLC (the DSQ CHAMELEON_LLC_Q0 + l, on a
 * clock of its own: llc_run.vclock), instead of in one CPU's queue. A CPU
 * whose own queue runs dry then takes the LLC's next task with one kfunc
 * call on a queue its own cache holds, where with per-CPU queues it probed
 * and migrated from other CPUs' queues under their locks (steal()). What
 * must stay on one CPU keeps its CPU's queue: pinned and migration-disabled
 * tasks, tasks with an object or a tag (the virtual threads and the tax
 * weigh an object against the queues of the CPUs it borrows), kthreads,
 * and every task of an LLC where a CPU is not NATIVE or not online
 * (llc_run.nr_unfit): objects, lending and parking work on per-CPU queues
 * alone.
 *
 * Invariants:
 * - only a NATIVE CPU of the LLC takes from its queue (llc_take()), in
 *   vtime order against its own queue's head and the task it ran last, the
 *   two clocks compared by rebasing; a CPU whose own LLC has nothing looks
 *   at one other LLC's queue per dispatch, in turn (llc_far());
 * - a task enters an LLC queue only while the LLC is fit (nr_unfit 0);
 *   once it is not, the guard moves what is queued there to per-CPU queues
 *   (move_llc_queue()), CHAMELEON_GUARD_MOVES a pass, as it does a tail
 *   that waited CHAMELEON_LLC_STARVE_NS: every bound of the per-CPU queues
 *   then applies to it;
 * - llc_need bit l is set while LLC l's queue may hold a task, cleared by
 *   the guard only after it counted the queue empty, then counted again.
 */
#include "weight.bpf.h"

/* As keep_prev()'s: how long a queue's head may wait while the last task runs on. */
#define CHAMELEON_LLC_KEEP_NS	(100ULL * 1000 * 1000)

/*
 * ops.enqueue found @p a place in @cpu's queue at @vtime (place_task()'s
 * INSERT_QUEUE): it goes into @cpu's LLC's queue instead if it may run on
 * any CPU there and nothing ties it to @cpu (untagged, no kthread, not
 * exiting, movable, @cpu NATIVE) and the LLC is fit; its vtime rebased to
 * the LLC's clock, floored and capped there as queue_vtime() does on a
 * CPU's (behind the clock: nothing runs on an LLC's). Any CPU of the LLC
 * takes it at its next dispatch (llc_take()); @cpu is preempted for it or
 * woken as for its own queue (place_queued()). Returns -1 if it stays for
 * @cpu's queue, else the kick for @cpu. Global: verified once.
 */
s64 llc_enqueue(struct task_struct *p __arg_trusted, struct task_ctx *tctx, s32 cpu, u64 vtime,
		u64 enq_flags)
{
	struct chameleon_cpu_stats *st;
	struct llc_run *lr;
	u64 clock, bit;
	s32 q;
	u32 l;

	if (!llc_queues || hybrid || !tctx || !cpu_valid(cpu) || tctx->tagged ||
	    (p->flags & (PF_KTHREAD | PF_EXITING)) || p->nr_cpus_allowed < nr_cpus ||
	    !task_movable(p) || role_word(cpu) != CHAMELEON_ROLE_NATIVE)
		return -1;
	l = llc_of(cpu);
	lr = llc_run(l);
	if (READ_ONCE(lr->nr_unfit))
		return -1;
	q = CHAMELEON_LLC_Q0 + l;
	clock = READ_ONCE(lr->vclock);
	vtime = chameleon_vtime_rebase(vtime, cpu_run(cpu)->vclock, clock);
	vtime = chameleon_vtime_floor(vtime, clock, slice_ns);
	vtime = chameleon_vtime_cap(vtime, clock, CHAMELEON_WAIT_BOUND_NS, 0);
	tctx->vcpu = q;
	scx_bpf_dsq_insert_vtime(p, q, slice_ns, vtime, enq_flags);
	/* After the insert: a CPU that reads the hint clear has counted it. */
	if (!READ_ONCE(lr->may_hold))
		WRITE_ONCE(lr->may_hold, 1);
	bit = 1ULL << l;
	if (!(READ_ONCE(llc_need) & bit))
		__sync_fetch_and_or(&llc_need, bit);
	st = &cpu_stats[CPU_IDX(bpf_get_smp_processor_id())];
	st->nr_llc_queued++;
	if ((enq_flags & SCX_ENQ_WAKEUP) &&
	    wake_preempts(cpu, chameleon_vtime_rebase(vtime, clock, cpu_run(cpu)->vclock)))
		return SCX_KICK_PREEMPT;
	/* As for its own queue: woken unless it is this CPU, running a task. */
	if ((enq_flags & SCX_ENQ_LAST) || cpu != bpf_get_smp_processor_id() ||
	    !bpf_get_current_task_btf()->pid)
		return SCX_KICK_IDLE;
	return 0;
}

/* Take the head of LLC @l's queue (its vtime @v) to @cpu's local queue. */
static int llc_move(s32 cpu, u32 l, u64 v, bool far)
{
	struct chameleon_cpu_stats *st = &cpu_stats[CPU_IDX(cpu)];
	struct llc_run *lr = llc_run(l);
	u64 old;

	if (!scx_bpf_dsq_move_to_local(CHAMELEON_LLC_Q0 + l, 0))
		return 0;
	/* The clock moves to the largest vtime taken; a lost race moved it further. */
	old = READ_ONCE(lr->vclock);
	if (chameleon_vtime_before(old, v))
		__sync_val_compare_and_swap(&lr->vclock, old, v);
	st->nr_llc_taken++;
	if (far)
		st->nr_llc_far++;
	return 1;
}

/*
 * One other LLC's queue, the next in turn, for @cpu whose own queues hold
 * nothing: its head if it has one. Bounded to one look per dispatch, every
 * other LLC within nr_llcs - 1 of them.
 */
static int llc_far(s32 cpu)
{
	struct cpu_run *cr = cpu_run(cpu);
	struct task_struct *head;
	u32 mine = llc_of(cpu), k;

	if (nr_llcs < 2)
		return 0;
	k = cr->far_llc + 1;
	if (k == mine)
		k++;
	if (k >= nr_llcs)
		k = mine ? 0 : 1;
	cr->far_llc = k;
	if (!READ_ONCE(llc_run(k)->may_hold))
		return 0;
	head = __COMPAT_scx_bpf_dsq_peek(CHAMELEON_LLC_Q0 + k);
	return head ? llc_move(cpu, k, head->scx.dsq_vtime, true) : 0;
}

/*
 * Does @prev, still runnable on @cpu after its slice, run before a head at
 * @hv (on @cpu's clock) that became runnable at @head_j? As keep_prev():
 * its vtime charged up to now is ahead, and the head has not waited
 * CHAMELEON_LLC_KEEP_NS. Then dispatch runs it on (renew()).
 */
static bool prev_first(s32 cpu, struct task_struct *prev, u64 hv, u64 head_j)
{
	struct task_ctx *tctx;
	u64 v;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED) || task_cpu_of(prev) != cpu)
		return false;
	tctx = task_ctx(prev);
	if (!tctx || !tctx->started_at)
		return false;
	v = task_vtime(prev, tctx) +
	    chameleon_vtime_charge(bpf_ktime_get_ns() - tctx->started_at, run_weight(prev, tctx));
	return chameleon_vtime_before(v, hv) &&
	       jiffies_to_ns(bpf_jiffies64() - head_j) < CHAMELEON_LLC_KEEP_NS;
}

/*
 * From dispatch on @cpu once its own queue gave it nothing (@prev the task
 * that ran last): the head of its LLC's queue, unless @prev runs before it;
 * with nothing there, another LLC's head (llc_far()). Whether it moved a
 * task to the local queue. Only a NATIVE CPU takes from an LLC queue.
 * Global: verified once.
 */
int llc_take(s32 cpu, struct task_struct *prev __arg_trusted __arg_nullable)
{
	struct task_struct *head;
	struct llc_run *lr;
	u64 hv;
	u32 l;

	if (!llc_queues || !cpu_valid(cpu) || role_word(cpu) != CHAMELEON_ROLE_NATIVE)
		return 0;
	l = llc_of(cpu);
	lr = llc_run(l);
	if (!READ_ONCE(lr->may_hold))
		return llc_far(cpu);
	head = __COMPAT_scx_bpf_dsq_peek(CHAMELEON_LLC_Q0 + l);
	if (!head) {
		/* Cleared, then counted: an insert in between leaves it set. */
		__sync_val_compare_and_swap(&lr->may_hold, 1, 0);
		if (scx_bpf_dsq_nr_queued(CHAMELEON_LLC_Q0 + l)) {
			WRITE_ONCE(lr->may_hold, 1);
			return 0;
		}
		return llc_far(cpu);
	}
	hv = chameleon_vtime_rebase(head->scx.dsq_vtime, READ_ONCE(lr->vclock),
				    cpu_run(cpu)->vclock);
	if (prev_first(cpu, prev, hv, BPF_CORE_READ(head, scx.runnable_at)))
		return 0;
	return llc_move(cpu, l, head->scx.dsq_vtime, false);
}
