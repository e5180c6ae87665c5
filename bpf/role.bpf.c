/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU role word (role.h) and the one placement rule built on it.
 *
 * Every decision about where a task may run asks may_run_on(): select_cpu,
 * enqueue, stealing, the guard's moves and the drains. A CPU's role says who
 * it runs:
 * - NATIVE, FUSING, SPLITTING: anyone (a representative is FUSING or
 *   SPLITTING only for the few instructions of a fuse or split);
 * - REP: its owner, and per-CPU kthreads bound there, whose turn is short
 *   and ends nothing; a kthread that may run elsewhere goes elsewhere (on
 *   the representative it kept the owner off, past the guard's bound, at 32
 *   vCPUs: an unbound kworker, kdamond); any other task would take the
 *   representative from its owner and end the object (running());
 * - LENT: only the kthreads a processor proxy would serve there (per-CPU
 *   ones, any kthread on a kernel-work context);
 * - PARKED: only what can run nowhere else.
 * A task that is to be put somewhere new (PLACE_NEW) also needs the CPU
 * online, not held by a higher class (cpu_held), whose queue it would wait
 * in for as long as the higher class runs, and not draining (its queue is
 * unserved: the guard would move it back out, two drains in turn). The CPU a task is already
 * queued on keeps it (PLACE_STAY) while its role allows it, online or not:
 * the drains see to queues of CPUs that stopped serving them. PLACE_PICKED
 * is PLACE_NEW for a CPU an idle search of the task's cpus_ptr gave, which
 * is allowed by construction (one kfunc call less on every wakeup).
 *
 * The pickers: pick_idle() an idle CPU a task may run on (its idle bit
 * taken), pick_other() that or the nearest allowed CPU in topology order.
 * A task found an idle CPU is handed to it (handoff(), direct()) so that
 * the CPU cannot miss it.
 */
#include "chameleon.bpf.h"

struct cpu_role cpu_roles[CHAMELEON_MAX_CPUS];
struct chameleon_invariants invariants;

/* One transition of @cpu's role word (role.h); false if it does not apply now. */
bool role_cas(s32 cpu, u32 ev, s32 arg)
{
	u32 old, new;

	if (!cpu_valid(cpu))
		return false;
	old = READ_ONCE(cpu_roles[CPU_IDX(cpu)].word);
	new = chameleon_role_step(old, ev, arg);
	if (new == CHAMELEON_ROLE_INVALID)
		return false;
	return __sync_bool_compare_and_swap(&cpu_roles[CPU_IDX(cpu)].word, old, new);
}

/*
 * Is @p inside migrate_disable()? As common.bpf.h's is_migration_disabled(),
 * but the one ambiguous case (a count of 1 on the current task, which the BPF
 * prolog may have taken) is settled by the prolog probe run at attach
 * (scx_lib_init_probe), never by CONFIG_PREEMPT_RCU: where libbpf cannot read
 * the kernel's config that reads as 0, and every task being put would count
 * as pinned (7.0.13 in the VM, whose config Debian no longer ships). Global:
 * verified once, not at each of its inlined callers' sites.
 */
bool task_migration_disabled(struct task_struct *p __arg_trusted)
{
	u32 md;

	if (!bpf_core_field_exists(p->migration_disabled))
		return false;
	md = p->migration_disabled;
	if (md == 1 && __scx_prolog_disables_migration)
		return bpf_get_current_task_btf() != p;
	return md;
}

/*
 * An idle CPU @p may run on, its idle bit taken, or -1. The kernel's idle
 * tracking hands out lent CPUs and representatives between two runs of their
 * owner like any other idle CPU; each one passed over keeps its idle bit
 * taken, which keeps it out of later picks until it idles again. Bounded.
 */
s32 pick_idle(struct task_struct *p __arg_trusted)
{
	s32 cpu = -1, c;
	u32 i;

	/* p->cpus_ptr is an RCU pointer: the guard calls this from a timer. */
	bpf_rcu_read_lock();
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		c = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (c < 0)
			break;
		if (may_run_on(p, c, PLACE_PICKED)) {
			cpu = c;
			break;
		}
	}
	bpf_rcu_read_unlock();
	return cpu;
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
 * May a task be put into another CPU's local queue? Only where the kernel
 * lets us take it back out if a higher class takes that CPU before it runs
 * (7.1+, scx_bpf_dsq_reenq: hotplug_guard). Before, the kernel says nothing
 * when an RT task takes an idle CPU into whose local queue a task was just
 * put, and the task waited the whole RT burst: such a task goes into the
 * CPU's own queue instead, where others steal it and the guard drains it.
 */
bool local_handoff(void)
{
	return __COMPAT_has_generic_reenq();
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

/*
 * select_cpu found @cpu idle for @p (its idle bit taken): straight to its
 * local queue where that is safe (SCX_ENQ_IMMED, as handoff()), else
 * enqueue hands it over (wake_idle).
 */
void direct(struct task_struct *p, struct task_ctx *tctx)
{
	struct chameleon_cpu_stats *st = stats_here();

	if (local_handoff()) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, SCX_ENQ_IMMED);
		if (st)
			st->nr_direct++;
	} else if (tctx) {
		tctx->wake_idle = 1;
	}
}
