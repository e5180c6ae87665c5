/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU vtime queues: each CPU's queue is a user DSQ whose id is the CPU
 * number, ordered by virtual time against that CPU's own clock (cpu_run:
 * vclock). A task's vtime is rebased when it changes queue, floored and
 * capped when it joins one; a CPU's dispatch takes its own head, keeps the
 * task that just ran if it is still first, or steals.
 */
#include "weight.bpf.h"

/* Each CPU's steal order (intf.h), filled by the agent; sized to nr_cpus at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct chameleon_steal_order);
} steal_orders SEC(".maps");

/* @cpu's steal order and its length (*@nr, bounded), or NULL. */
struct chameleon_steal_order *steal_order(s32 cpu, u32 *nr)
{
	struct chameleon_steal_order *o;
	u32 key = cpu;

	*nr = 0;
	if (!cpu_valid(cpu))
		return NULL;
	o = bpf_map_lookup_elem(&steal_orders, &key);
	if (o)
		*nr = o->nr < CHAMELEON_MAX_CPUS ? o->nr : CHAMELEON_MAX_CPUS;
	return o;
}

/*
 * A task queued in front of its CPU's queue after a kthread's turn there
 * (enqueue, preempt.h) got the vtime that put it there on loan: it runs, or
 * is queued again, with its own. Otherwise each injected idle period would
 * forgive it the run before it, and it would win its CPU again and again.
 */
void repay_resume_lag(struct task_struct *p, struct task_ctx *tctx)
{
	tctx->vtime_owed += tctx->resume_lag;
	tctx->resume_lag = 0;
}

/*
 * Rebase @p's vtime onto @cpu's clock if it was last charged against another
 * clock (a CPU's, or an LLC queue's: vclock_of()). Called wherever the task
 * lands on a new CPU or its queue.
 */
void rebase_to(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	s32 from = tctx->vcpu;
	u64 vtime, *fc;

	if (from == cpu || !cpu_valid(cpu))
		return;
	/* The guard moved it here and rebased it on the way (move_queued). */
	if (READ_ONCE(tctx->moving_to) == cpu + 1) {
		tctx->vcpu = cpu;
		return;
	}
	fc = vclock_of(from);
	if (fc)
		vtime = chameleon_vtime_rebase(task_vtime(p, tctx), *fc, cpu_run(cpu)->vclock);
	else
		vtime = cpu_run(cpu)->vclock;
	task_vtime_set(p, tctx, vtime);
	tctx->vcpu = cpu;
}

/*
 * A vtime on @cpu's clock as a task joins its queue: with one slice of
 * credit at most, and capped so that it waits no longer than
 * CHAMELEON_WAIT_BOUND_NS behind the task running there. Every enqueue,
 * wakeup or not: a task whose vtime is never floored carries its deficit
 * from queue to queue (a migration rebases it, keeping it).
 */
u64 queue_vtime(s32 cpu, u64 vtime)
{
	struct cpu_run *cr = cpu_run(cpu);

	vtime = chameleon_vtime_floor(vtime, cr->vclock, slice_ns);
	return chameleon_vtime_cap(vtime, cr->vclock, CHAMELEON_WAIT_BOUND_NS,
				   cr->running ? cr->curr_weight : 0);
}

/*
 * A waking task was just queued on @cpu at @vtime: does it take the CPU from
 * the task running there (chameleon_wake_preempts())? Only on a CPU of no
 * object (NATIVE): a representative runs its owner and a lent CPU what it
 * serves, each by its own rules (exec_object.bpf.c, lend.bpf.c). The running
 * task's start, vtime and weight are read as its CPU last wrote them; a stale
 * read costs one early or late switch, never a lost task.
 */
bool wake_preempts(s32 cpu, u64 vtime)
{
	struct cpu_run *cr = cpu_run(cpu);

	if (!wake_gran_ns || !READ_ONCE(cr->running) ||
	    role_word(cpu) != CHAMELEON_ROLE_NATIVE)
		return false;
	return chameleon_wake_preempts(vtime, READ_ONCE(cr->curr_vtime),
				       chameleon_time_since(bpf_ktime_get_ns(),
							    READ_ONCE(cr->curr_started)),
				       READ_ONCE(cr->curr_weight), wake_gran_ns);
}

/*
 * @cpu's dispatch found its queue empty (@nr queued, 0): its hint is cleared,
 * then the queue counted once more, so that a task put there in between
 * (whose putter sets the hint after the insert) is either counted here or
 * leaves the hint set. Returns the count.
 */
u64 queue_hint_clear(s32 cpu, u64 nr)
{
	if (nr || !cpu_valid(cpu) || !queue_hint(cpu))
		return nr;
	__sync_val_compare_and_swap(&cpu_queues[CPU_IDX(cpu)].may_hold, 1, 0);
	nr = scx_bpf_dsq_nr_queued(cpu);
	if (nr)
		queue_hint_set(cpu);
	return nr;
}

/*
 * May another CPU take work from @victim's queue? Only if it may hold any
 * (queue_hint(): a read, where the queue's count is a hash lookup of the
 * queue). Not from a fused representative's: its owner waits there (taken
 * elsewhere, its object ends), and the guard moves everyone else out within
 * a guard period. Not from a CPU a kthread holds for a moment (preempt.h).
 */
static bool stealable(s32 victim, s32 cpu)
{
	return cpu_valid(victim) && victim != cpu && queue_hint(victim) &&
	       !cpu_fused(victim) && !kthread_holds(victim);
}

/*
 * Steal the head of another CPU's queue: the SMT siblings first, then a
 * window of CHAMELEON_STEAL_SCAN - siblings other CPUs in topology order from
 * a rotating start (steal_orders). Bounded per dispatch, and every queue,
 * including an offline CPU's, is visited within a few dispatches. Only
 * while a CPU's role is taken (dispatch_cpu()): tasks pushed off a
 * representative, or waiting on a lent CPU, were not placed where an idle
 * CPU would take them. Others do not depend on it: enqueue hands a task to
 * an idle CPU, balance_pull() evens long queues, and the guard bounds every
 * wait.
 */
int steal(s32 cpu)
{
	struct chameleon_steal_order *o;
	struct cpu_run *cr;
	u32 i, nr, near;
	int k;
	s32 victim;

	o = steal_order(cpu, &nr);
	if (!o)
		return 0;
	cr = cpu_run(cpu);
	near = o->nr_near;
	bpf_for(i, 0, CHAMELEON_STEAL_SCAN) {
		k = chameleon_steal_pick(i, nr, near, cr->steal_start);
		if (k < 0)
			break;
		victim = o->cpus[k & (CHAMELEON_MAX_CPUS - 1)];
		if (!stealable(victim, cpu))
			continue;
		/* An empty queue moves nothing: no count first. */
		if (scx_bpf_dsq_move_to_local(victim, 0)) {
			cpu_stats[CPU_IDX(cpu)].nr_stolen++;
			return 1;
		}
	}
	/* Next time, the window after this one. */
	if (near < CHAMELEON_STEAL_SCAN)
		cr->steal_start += CHAMELEON_STEAL_SCAN - near;
	return 0;
}

/*
 * Balance between CPUs: a CPU-bound task never wakes to be placed again, so
 * queues made uneven by hotplug or affinity changes would stay uneven, and
 * with no role taken an idle CPU does not steal (dispatch_cpu()). A
 * dispatch, at most once per slice on each CPU, busy or about to idle,
 * compares its queue (@mine tasks) with one other CPU's, in steal order,
 * rotating, and takes the head of one long enough (chameleon_pull_worth()).
 * O(1). Once per slice is enough for the uneven
 * queues it is for, which last as long as their CPU-bound tasks do; each
 * pull moves a task off a busy CPU and takes that CPU's runqueue lock, too
 * dear for every dispatch of a wakeup-heavy load. Timed in jiffies (a load,
 * where a clock read is a helper call at every dispatch with a queue): a
 * slice rounded up to the tick.
 */
int balance_pull(s32 cpu, u64 mine)
{
	struct chameleon_steal_order *o;
	struct cpu_run *cr;
	u32 nr, k;
	s32 victim;
	u64 now_j;

	cr = cpu_run(cpu);
	now_j = bpf_jiffies64();
	if (jiffies_to_ns(now_j - cr->balanced_j) < slice_ns)
		return 0;
	cr->balanced_j = now_j;
	o = steal_order(cpu, &nr);
	if (!o || !nr)
		return 0;
	k = cr->balance_idx;
	if (k >= nr)
		k = 0;
	cr->balance_idx = k + 1;
	victim = o->cpus[cpu_idx(k)];
	/* A lent CPU's waiters are the lending bound's. */
	if (!stealable(victim, cpu) || cpu_lent(victim) ||
	    !chameleon_pull_worth(scx_bpf_dsq_nr_queued(victim), mine))
		return 0;
	if (!scx_bpf_dsq_move_to_local(victim, 0))
		return 0;
	cpu_stats[CPU_IDX(cpu)].nr_stolen++;
	return 1;
}

/*
 * How long the head of a CPU's queue may wait while the task before it runs
 * on: as long as weights of up to 20 : 1 need (the lighter task waits 20
 * slices), well within CHAMELEON_WAIT_BOUND_NS.
 */
#define CHAMELEON_KEEP_WAIT_NS	(100ULL * 1000 * 1000)

/*
 * @prev, still runnable, used up its slice here: the kernel asks for the
 * next task before it puts @prev back into our queue, so the queue's head
 * would run next whatever @prev's vtime, and tasks sharing a CPU would take
 * turns whatever their weights. @prev runs on, with a new slice, if nothing
 * queued here is ahead of it (its vtime charged up to now) and the head has
 * not waited CHAMELEON_KEEP_WAIT_NS by the kernel's account. On a fused
 * representative (@held) only its owner is kept. Its run so far by the clock:
 * p->se.sum_exec_runtime is as of the last tick here, and a wakeup preemption
 * comes between ticks (the time since would be forgiven, and the waker kept
 * waiting).
 */
bool keep_prev(s32 cpu, struct task_struct *prev __arg_trusted __arg_nullable, bool held)
{
	struct task_struct *head;
	struct task_ctx *tctx;
	u64 v;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED) || task_cpu_of(prev) != cpu ||
	    (held && READ_ONCE(reps[CPU_IDX(cpu)].owner) != prev->pid))
		return false;
	tctx = task_ctx(prev);
	if (!tctx || !tctx->started_at || scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu))
		return false;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (!head)
		return false;
	v = task_vtime(prev, tctx) +
	    chameleon_vtime_charge(bpf_ktime_get_ns() - tctx->started_at, run_weight(prev, tctx));
	if (!chameleon_vtime_before(v, head->scx.dsq_vtime) ||
	    jiffies_to_ns(bpf_jiffies64() - BPF_CORE_READ(head, scx.runnable_at)) >=
	    CHAMELEON_KEEP_WAIT_NS)
		return false;
	scx_bpf_task_set_slice(prev, slice_ns);
	return true;
}

/* Both of @cpu's queues hold no task that would run before @vtime there. */
bool owner_next(s32 cpu, u64 vtime)
{
	struct task_struct *head;

	/* Nor ahead of a task the guard found starved here (dispatch runs it). */
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) || READ_ONCE(cpu_run(cpu)->starved_pid))
		return false;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	return !head || !chameleon_vtime_before(head->scx.dsq_vtime, vtime);
}

/*
 * @prev used up its slice on @cpu and nothing else is to run there: it runs
 * on with a new slice (the kernel keeps a runnable @prev that has a slice
 * after dispatch), instead of going through enqueue(SCX_ENQ_LAST), an idle
 * round trip and a self-IPI at every slice end. What stopping() and
 * running() would have done between the two slices is done here: its vtime
 * charged and the CPU's clock moved on, an owner's tax charged, a CPU owed
 * to its waiters released. A tagged task runs on this way only as the owner
 * of a whole fused object: otherwise its next start tries to fuse (or to
 * grow a partial object), so it goes through enqueue as before; so does a
 * task on a slow CPU of a hybrid machine, which enqueue may move.
 */
bool renew(struct task_struct *p __arg_trusted, s32 cpu)
{
	struct task_ctx *tctx = task_ctx(p);
	struct cpu_run *cr = cpu_run(cpu);
	struct rep_ctx *rc = &reps[CPU_IDX(cpu)];
	u64 now = bpf_ktime_get_ns(), delta;
	bool owner;

	/* On a slow CPU it may belong on a fast one: enqueue decides (fast.bpf.c). */
	if (!tctx || wants_fast(p, cpu))
		return false;
	owner = READ_ONCE(rc->owner) == p->pid && cpu_fused(cpu);
	if (tctx->tagged && !(owner && rc->nr_cpus >= rc->nr_requested))
		return false;
	if (tctx->started_at) {
		delta = p->se.sum_exec_runtime - tctx->exec_at;
		tctx->run_ns += delta;
		cpu_stats[CPU_IDX(cpu)].busy_ns += delta;
		tctx->vtime_owed += chameleon_vtime_charge(delta, run_weight(p, tctx));
	}
	tctx->started_at = now;
	tctx->exec_at = p->se.sum_exec_runtime;
	cr->curr_vtime = task_vtime(p, tctx);
	cr->vclock = chameleon_vtime_advance(cr->vclock, cr->curr_vtime);
	tctx->weight = task_weight_at(p, tctx, now);
	cr->curr_weight = tctx->weight;
	cr->curr_started = now;
	lend_owed_served(cpu, p);
	if (owner)
		charge_tax(p, tctx, cpu, now);
	scx_bpf_task_set_slice(p, slice_ns);
	return true;
}
