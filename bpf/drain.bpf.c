/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Draining a queue: its tasks moved to CPUs the rule lets them on, each
 * rebased to its new CPU's clock and placed as enqueue would place it. The
 * guard drains what a CPU's role forbids there or what a CPU does not serve
 * (guard.bpf.c), hotplug what a CPU going away leaves (hotplug.bpf.c).
 */
#include "role.bpf.h"

/* Tasks one guard run moves from one queue: the walk stays short. */
#define CHAMELEON_GUARD_MOVES	8

/*
 * Move queued @p (the iterator @it stands on it) to @to's queue, its vtime
 * rebased to @to's clock and placed as enqueue would place it; wake @to.
 */
static bool move_queued(struct bpf_iter_scx_dsq *it, struct task_struct *p, s32 to)
{
	struct task_ctx *tctx = task_ctx(p);
	u64 vtime, *from;

	if (!tctx || !cpu_valid(to))
		return false;
	from = vclock_of(tctx->vcpu);
	vtime = from ? chameleon_vtime_rebase(p->scx.dsq_vtime, *from, cpu_run(to)->vclock) :
		       cpu_run(to)->vclock;
	/*
	 * Once moved, @to may run it before this CPU gets on: running() must
	 * find it rebased already (moving_to), not rebase it a second time.
	 */
	WRITE_ONCE(tctx->moving_to, to + 1);
	scx_bpf_dsq_move_set_vtime(it, queue_vtime(to, vtime));
	if (!scx_bpf_dsq_move_vtime(it, p, to, 0)) {
		WRITE_ONCE(tctx->moving_to, 0);
		return false;
	}
	queue_hint_set(to);
	tctx->vcpu = to;
	WRITE_ONCE(tctx->moving_to, 0);
	kick_cpu(to, SCX_KICK_IDLE);
	return true;
}

/*
 * Move tasks out of @cpu's queue, at most CHAMELEON_GUARD_MOVES (bounded
 * walk) but for MOVE_ALL, which empties it in one pass. MOVE_FORBIDDEN: the movable tasks its role does not let run there
 * (may_run_on), to another CPU they may run on (pick_other); on a
 * representative all but its owner and kthreads, on a lent CPU all but the
 * kthreads it serves, on a parked CPU all that may run elsewhere.
 * MOVE_MOVABLE (an online CPU that stopped serving its queue): every movable
 * task; what can run only there stays, for its own dispatch (the global
 * queue would be no better: a CPU consumes it only when its local queue is
 * empty). MOVE_ALL (the CPU is going offline): every task, the whole queue
 * in one pass (the kernel's hotplug waits on the tasks there; the walk is
 * bounded by the queue's length when it starts). In both, for a movable
 * task the rule lets on no other CPU now (the others all fused,
 * lent, held or draining: a full machine losing a CPU) the nearest object
 * it may use is split (pick_rep_to_split()) and the task goes to its
 * representative: the unserved queue would keep it for good. A rescue needs
 * this as much as a drain: a CPU between leaving the active mask and
 * ops.cpu_offline is still online to us but never dispatches, and its
 * hotplug thread waits in synchronize_rcu() for rcu_preempt, queued there.
 * With no such object it stays for the next pass. What can run only on a
 * dying CPU goes to the kernel's global queue, from which only that CPU can
 * take it. Returns how many it moved.
 */
/*
 * Tasks moved by the current move_queue() call. In memory rather than a
 * local: the verifier then does not walk the loop once per value of the
 * count. Only the guard timer calls move_queue(), one run at a time.
 */
u32 guard_moved;
/* ... and whether it passed over a task that can run on that CPU only. */
u32 guard_pinned;

u32 move_queue(s32 cpu, u32 mode)
{
	struct task_struct *p, *t;
	s32 to;

	/* A timer is no RCU section of itself; kernels before 7.0 want one here. */
	WRITE_ONCE(guard_moved, 0);
	WRITE_ONCE(guard_pinned, 0);
	bpf_rcu_read_lock();
	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (mode != MOVE_ALL && READ_ONCE(guard_moved) >= CHAMELEON_GUARD_MOVES)
			break;
		if (mode != MOVE_ALL && !task_movable(p)) {
			if (mode == MOVE_FORBIDDEN && !may_run_on(p, cpu, PLACE_STAY))
				WRITE_ONCE(guard_pinned, 1);
			continue;
		}
		if (mode == MOVE_FORBIDDEN && may_run_on(p, cpu, PLACE_STAY))
			continue;
		to = -1;
		if (task_movable(p)) {
			/* The pickers want a trusted task: this one, by pid. */
			t = bpf_task_from_pid(p->pid);
			if (t) {
				to = pick_other(t, cpu);
				if (to < 0 && mode != MOVE_FORBIDDEN) {
					to = pick_rep_to_split(t, cpu);
					if (to >= 0)
						split(to, CHAMELEON_SPLIT_BOUND);
				}
				bpf_task_release(t);
			}
		}
		/*
		 * The global queue only for a task that can run on this CPU
		 * only: the kernel lets no other CPU take it from there.
		 */
		if ((to >= 0 && move_queued(BPF_FOR_EACH_ITER, p, to)) ||
		    (mode == MOVE_ALL && !task_movable(p) &&
		     scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_GLOBAL, 0)))
			WRITE_ONCE(guard_moved, READ_ONCE(guard_moved) + 1);
	}
	bpf_rcu_read_unlock();
	return READ_ONCE(guard_moved);
}

/* Did the last move_queue() pass over a task that can run on that CPU only? */
u32 move_queue_pinned(void)
{
	return READ_ONCE(guard_pinned);
}

/*
 * Move at most @max tasks (and at most CHAMELEON_GUARD_MOVES) out of LLC
 * @l's queue (llc_queue.bpf.c), tail first (the longest waiter of a stream
 * of wakeups is there), each to a CPU it may run on as placed from the CPU
 * it last ran on (pick_other()), else to that CPU's queue, where the
 * per-CPU bounds serve it. The guard calls it when the LLC is unfit (a CPU
 * there left NATIVE or went offline) or the queue's tail waited
 * CHAMELEON_LLC_STARVE_NS. Returns how many it moved.
 */
u32 move_llc_queue(u32 l, u32 max)
{
	struct task_struct *p, *t;
	s32 to, home;

	if (l >= nr_llcs)
		return 0;
	WRITE_ONCE(guard_moved, 0);
	bpf_rcu_read_lock();
	bpf_for_each(scx_dsq, p, CHAMELEON_LLC_Q0 + l, SCX_DSQ_ITER_REV) {
		if (READ_ONCE(guard_moved) >= max || READ_ONCE(guard_moved) >= CHAMELEON_GUARD_MOVES)
			break;
		home = task_cpu_of(p);
		to = -1;
		t = bpf_task_from_pid(p->pid);
		if (t) {
			to = pick_other(t, home);
			bpf_task_release(t);
		}
		if (to < 0 && cpu_online(home))
			to = home;
		if (to >= 0 && move_queued(BPF_FOR_EACH_ITER, p, to))
			WRITE_ONCE(guard_moved, READ_ONCE(guard_moved) + 1);
	}
	bpf_rcu_read_unlock();
	return READ_ONCE(guard_moved);
}
