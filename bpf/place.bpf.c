/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Placement: where a task goes, and how. place_task() is ops.enqueue's
 * decision (the op inserts and kicks as it says); the pickers serve it and
 * the drains: pick_other() an idle CPU the rule lets a task on, else the
 * nearest such CPU in topology order; pick_rep_to_split() the object to end
 * when the rule lets it nowhere else; handoff() puts a task on an idle CPU
 * so that the CPU cannot miss it.
 *
 * Nothing here inserts a task but handoff(): a decision is the caller's to
 * carry out, so its order (insert, then kick) is in one place, the op.
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

/*
 * @cpu is the CPU we run on and a task (not its idle loop) runs there: it
 * goes through dispatch when that task stops, so it needs no kick.
 */
static bool running_here(s32 cpu)
{
	struct task_struct *curr;

	if (cpu != bpf_get_smp_processor_id())
		return false;
	curr = bpf_get_current_task_btf();
	return curr->pid != 0;
}

/*
 * 1. Where @p, queued on @cpu, belongs: its representative @rep if it has
 * an object, the kernel-work sibling of a kwork representative for a
 * movable kthread, else @cpu unless the rule refuses it. Off a lent CPU
 * only to an idle one: with none, it waits there, and its vtime against the
 * owner's virtual thread decides when the object splits for it (§4.3.2: the
 * tax), the lending bound how long it may wait; a task moved to a busy CPU
 * is never weighed against the object, and a full machine would keep every
 * object whatever its tax. Off a representative or a parked CPU to wherever
 * the rule allows; with nowhere to go, it stays. *@here: it stays on @cpu
 * (or @cpu is its representative).
 */
static __always_inline s32 place_where(struct task_struct *p, s32 cpu, s32 rep, bool movable,
				       bool *here)
{
	s32 kw, other;

	*here = true;
	if (rep >= 0) {
		*here = cpu == rep;
		return rep;
	}
	if ((p->flags & PF_KTHREAD) && movable && (kw = kwork_sibling(cpu)) >= 0 &&
	    may_run_on(p, kw, PLACE_NEW)) {
		*here = false;
		return kw;
	}
	if (movable && !may_run_on(p, cpu, PLACE_STAY)) {
		other = cpu_lent(cpu) ? pick_idle(p) : pick_other(p, cpu);
		if (other >= 0) {
			*here = false;
			return other;
		}
	}
	return cpu;
}

/*
 * 6. @p joins @cpu's vtime queue (@rep, @here as place_where() found them):
 * its vtime rebased to the queue's clock, floored and capped, what it owed
 * folded in (tctx->vtime_owed is 0 after: every insert of this step stores
 * the vtime, scx_bpf_dsq_insert_vtime() or the set before a local insert).
 */
static __always_inline void place_in_queue(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					   s32 rep, bool here, u64 enq_flags,
					   struct placement *pl)
{
	struct chameleon_cpu_stats *st = stats_here();
	u64 vtime;

	repay_resume_lag(p, tctx);
	rebase_to(p, tctx, cpu);
	vtime = queue_vtime(cpu, task_vtime(p, tctx));
	tctx->vtime_owed = 0;
	if (st)
		st->nr_enqueued++;
	/*
	 * An exiting task goes to the front of its CPU's queue, as near as we
	 * queue to where the kernel's default put it (the local queue): what it
	 * frees is waited for, a killed agent's struct_ops link among it.
	 */
	if (p->flags & PF_EXITING)
		vtime = resume_vtime(cpu, vtime);
	/*
	 * Back from the local queue of a CPU a per-CPU kthread took for a
	 * moment (cpu_release): in front of this CPU's own queue, where the
	 * local queue had it, unstolen while the hold is fresh, with what is
	 * left of its slice (0: the kernel keeps it).
	 */
	if ((enq_flags & SCX_ENQ_REENQ) && here && kthread_holds(cpu)) {
		u64 front = resume_vtime(cpu, vtime);

		tctx->resume_lag = vtime - front;
		pl->how = INSERT_FRONT;
		pl->vtime = front;
		return;
	}
	pl->vtime = vtime;
	/*
	 * A task with an object that runs next on its representative anyway
	 * waits in the local queue there, where no other CPU can steal it.
	 * Only into an empty local queue, only while the CPU is ours, and only
	 * where the kernel can take it back out (local_handoff()).
	 */
	if (rep >= 0 && local_handoff() && !(enq_flags & SCX_ENQ_REENQ) && !cpu_held(cpu) &&
	    may_run_on(p, cpu, PLACE_STAY) && owner_next(cpu, vtime)) {
		pl->how = INSERT_LOCAL_ON_VTIME;
		return;
	}
	pl->how = INSERT_QUEUE;
}

/*
 * Where ops.enqueue puts @p, queued on @cpu, and how (enum
 * chameleon_insert), and whether the CPU is kicked after. The first rule
 * that applies decides, in this order:
 * 1. where it belongs: its representative if it has an object, the
 *    kernel-work sibling of a kwork representative for a movable kthread,
 *    else another CPU if the rule refuses @cpu (off a lent CPU only to an
 *    idle one: a waiter there is weighed against the object, §4.3.2);
 * 2. hybrid: off a slow CPU to an idle fast one;
 * 3. SCX_ENQ_LAST: the local queue, where the rule lets it stay (7.1+);
 * 4. a task that can run on @cpu only, both its queues empty: straight to
 *    @cpu's local queue;
 * 5. an idle CPU it may run on takes it now (handoff());
 * 6. its CPU's vtime queue: in front after a per-CPU kthread's turn
 *    (INSERT_FRONT), into the representative's local queue if its owner
 *    runs next there anyway, else in vtime order (INSERT_QUEUE; the op
 *    puts it into its LLC's queue instead if it may run anywhere there:
 *    llc_enqueue()).
 * What select_cpu found for the wake (wake_idle, wake_busy) is used up here.
 * Global: verified once, not inlined into the op's paths.
 */
int place_task(struct task_struct *p __arg_trusted, struct task_ctx *tctx, s32 cpu, u64 enq_flags,
	       struct placement *pl)
{
	bool here, wake_idle, wake_busy, movable;
	s32 rep, idle = -1, fast;

	if (!tctx || !pl)
		return 0;
	pl->kick = 0;
	pl->vtime = 0;
	wake_idle = tctx->wake_idle;
	wake_busy = tctx->wake_busy && (enq_flags & SCX_ENQ_WAKEUP);
	tctx->wake_idle = 0;
	tctx->wake_busy = 0;
	movable = task_movable(p);

	/* 1. Where it belongs. */
	rep = task_rep(p, tctx);
	cpu = place_where(p, cpu, rep, movable, &here);
	pl->cpu = cpu;

	/*
	 * 2. Hybrid. Movable only: a task preempted inside
	 * migrate_disable() keeps its full nr_cpus_allowed, and the kernel
	 * ends the scheduler when a local insert would move it.
	 */
	if (rep < 0 && here && movable && wants_fast(p, cpu) && (fast = pick_idle_fast(p)) >= 0) {
		pl->how = INSERT_HANDOFF_FAST;
		pl->cpu = fast;
		return 0;
	}

	/*
	 * 3. SCX_ENQ_LAST: the task's slice ended and nothing else is queued
	 * here: it runs on where the rule lets it. The kernel may have
	 * picked idle already when it asks: the kick makes the CPU look.
	 * Before 7.1 an RT task waking here next would find it in the local
	 * queue with nobody to tell us: it goes through this CPU's own queue
	 * (6), where dispatch leaves it while a higher class waits.
	 */
	if ((enq_flags & SCX_ENQ_LAST) && here && local_handoff() && may_run_on(p, cpu, PLACE_STAY)) {
		pl->how = INSERT_LOCAL;
		pl->kick = SCX_KICK_IDLE;
		return 0;
	}

	/*
	 * 4. It runs next there whatever the order, and the CPU skips a
	 * dispatch when the current task blocks. Never behind another task
	 * in the local queue (two pinned tasks taking turns there would keep
	 * the CPU out of ops.dispatch), and not a task re-enqueued from a
	 * local queue (SCX_ENQ_REENQ: the CPU is not ours; the next drain
	 * would re-enqueue it again). An insert into a local queue
	 * reschedules an idle CPU, but not one that has already picked idle
	 * (SCX_ENQ_LAST): that one is kicked. @cpu's queue is counted only
	 * if its hint says it may hold a task: a task whose insert raced
	 * with the hint's clearing is passed once, not lost (its CPU's
	 * dispatch counts for real).
	 */
	if (!movable && !(enq_flags & SCX_ENQ_REENQ) && may_run_on(p, cpu, PLACE_STAY) &&
	    (!queue_hint(cpu) || !scx_bpf_dsq_nr_queued(cpu)) &&
	    !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu)) {
		pl->how = INSERT_LOCAL_ON;
		if (enq_flags & SCX_ENQ_LAST)
			pl->kick = SCX_KICK_IDLE;
		return 0;
	}

	/*
	 * 5. The idle CPU select_cpu claimed (wake_idle), else its own if
	 * idle, else any. A task with an object waits for its
	 * representative; one re-enqueued after a kthread's turn waits in
	 * front of its own queue (6).
	 */
	if (rep < 0 && movable && !((enq_flags & SCX_ENQ_REENQ) && kthread_holds(cpu))) {
		if (wake_idle && here && may_run_on(p, cpu, PLACE_NEW))
			idle = cpu;
		else if (wake_busy && here)
			/*
			 * select_cpu searched a moment ago and found none: a
			 * second search costs every such wakeup a kfunc scan.
			 * A CPU that idled in between waits for its next
			 * dispatch; this task for its CPU (a slice at most).
			 */
			idle = -1;
		else if (here && may_run_on(p, cpu, PLACE_NEW) && scx_bpf_test_and_clear_cpu_idle(cpu))
			idle = cpu;
		else
			idle = pick_idle(p);
		if (idle >= 0) {
			pl->how = INSERT_HANDOFF;
			pl->cpu = idle;
			return 0;
		}
	} else if (wake_idle && rep >= 0 && here) {
		pl->how = INSERT_HANDOFF;
		return 0;
	}

	/* 6. Its CPU's queue. */
	place_in_queue(p, tctx, cpu, rep, here, enq_flags, pl);
	return 0;
}

/*
 * @p, just inserted into @pl->cpu's queue (INSERT_QUEUE): whom its arrival
 * wakes, read after the insert so that a CPU changing role meanwhile is seen
 * with the task already there. A lent CPU serves only its kthreads: it is
 * woken for one; anyone else there is a waiter (INSERT_WAITER: it starts the
 * lending bound and may split the object now). Elsewhere a waking task owed
 * the CPU more than a granularity preempts it (queue.bpf.c); otherwise the
 * CPU is woken if it idles (a pinned task, the representative), or is about
 * to (SCX_ENQ_LAST: the task is being put and idle picked).
 */
void place_queued(struct task_struct *p, u64 enq_flags, struct placement *pl)
{
	struct chameleon_cpu_stats *st;
	s32 cpu = pl->cpu;

	if (cpu_lent(cpu)) {
		if (lent_cpu_runs(cpu, p))
			pl->kick = SCX_KICK_IDLE;
		else
			pl->how = INSERT_WAITER;
		return;
	}
	if ((enq_flags & SCX_ENQ_WAKEUP) && wake_preempts(cpu, pl->vtime)) {
		st = stats_here();
		if (st)
			st->nr_wake_preempts++;
		pl->kick = SCX_KICK_PREEMPT;
		return;
	}
	if ((enq_flags & SCX_ENQ_LAST) || !running_here(cpu))
		pl->kick = SCX_KICK_IDLE;
}
