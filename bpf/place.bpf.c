/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Placement: where a task goes when the CPU it is on does not take it.
 * pick_other() an idle CPU the rule lets it on, else the nearest such CPU in
 * topology order; pick_rep_to_split() the object to end when the rule lets
 * it nowhere else; handoff() puts it on an idle CPU so that the CPU cannot
 * miss it.
 */
#include "role.bpf.h"

/*
 * When the rule lets @p on no CPU but @cpu (every other one fused, lent,
 * held or draining: a full machine losing a CPU): the nearest representative
 * in @cpu's steal order whose object could make room for @p (in its
 * affinity, online, not held by a higher class nor draining), or -1. The
 * caller splits that object, after which the rule lets @p there.
 */
s32 pick_rep_to_split(struct task_struct *p __arg_trusted, s32 cpu)
{
	struct chameleon_steal_order *o;
	u32 i, nr;
	s32 c = -1;

	o = steal_order(cpu, &nr);
	if (!o)
		return -1;
	/* (The guard calls it inside its RCU section: no lock of its own.) */
	bpf_for(i, 0, CHAMELEON_MAX_CPUS) {
		s32 o_cpu;

		if (i >= nr)
			break;
		o_cpu = o->cpus[i & (CHAMELEON_MAX_CPUS - 1)];
		if (o_cpu != cpu && role_kind(o_cpu) == CHAMELEON_ROLE_REP &&
		    bpf_cpumask_test_cpu(o_cpu, p->cpus_ptr) && cpu_online(o_cpu) &&
		    !cpu_held(o_cpu) && !READ_ONCE(cpu_hps[CPU_IDX(o_cpu)].drain)) {
			c = o_cpu;
			break;
		}
	}
	return c;
}

/* Looks one pick_other() spends on @cpu's steal order: bounded, nearest first. */
#define CHAMELEON_OTHER_SCAN	16

/*
 * A CPU other than @cpu for @p: an idle one, else the nearest in @cpu's
 * steal order (siblings, LLC, the rest) that @p may be placed on. -1 if
 * none within the scan: @p stays where it is, served by the bounds.
 */
s32 pick_other(struct task_struct *p __arg_trusted, s32 cpu)
{
	struct chameleon_steal_order *o;
	u32 i, nr;
	s32 c;

	c = pick_idle(p);
	if (c >= 0)
		return c;
	o = steal_order(cpu, &nr);
	if (!o)
		return -1;
	c = -1;
	bpf_rcu_read_lock();
	bpf_for(i, 0, CHAMELEON_OTHER_SCAN) {
		s32 o_cpu;

		if (i >= nr)
			break;
		o_cpu = o->cpus[i & (CHAMELEON_MAX_CPUS - 1)];
		if (o_cpu != cpu && may_run_on(p, o_cpu, PLACE_NEW)) {
			c = o_cpu;
			break;
		}
	}
	bpf_rcu_read_unlock();
	return c;
}

/*
 * Hand @p to @cpu, whose idle bit the caller took: it cannot miss the task.
 * Into its local queue where that is safe (local_handoff()), else into its
 * own queue, rebased, and the CPU dispatches it first thing. The local
 * insert is SCX_ENQ_IMMED where the kernel has it (7.1+; the loader reads 0
 * elsewhere): if @cpu turns out not to be free for @p (an RT task woke
 * there first, another task is in its local queue), the kernel hands @p
 * back to enqueue at once (SCX_ENQ_REENQ), where cpu_held() now keeps it
 * off @cpu, instead of leaving it behind for a guard period.
 */
void handoff(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 enq_flags)
{
	struct chameleon_cpu_stats *st = stats_here();

	if (local_handoff()) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_ns, enq_flags | SCX_ENQ_IMMED);
	} else {
		repay_resume_lag(p, tctx);
		rebase_to(p, tctx, cpu);
		scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, queue_vtime(cpu, task_vtime(p, tctx)),
					 enq_flags);
		tctx->vtime_owed = 0;
		queue_hint_set(cpu);
	}
	kick_cpu(cpu, SCX_KICK_IDLE);
	if (st)
		st->nr_direct++;
}

