/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A higher class takes a CPU from us, and gives it back: ops.cpu_release and
 * ops.cpu_acquire (before 6.19; a sched_switch hook after), and the hold a
 * per-CPU kthread's short turn puts on the CPU's queue. The rules and why
 * are in preempt.h.
 */
#include "chameleon.bpf.h"

u64 released_at(s32 cpu)
{
	return cpu_valid(cpu) ? READ_ONCE(cpu_releases[CPU_IDX(cpu)].released_at) : 0;
}

/* The field RT group scheduling adds (not in the headers' kernel). */
struct sched_rt_entity___grp {
	struct rt_rq *my_q;
} __attribute__((preserve_access_index));

/*
 * The task at the head of @rq's highest RT priority queue, or 0: an address,
 * not a pointer the verifier knows (the priority array's entries are plain
 * list links), read with probe reads. A hint, read without the lock.
 */
static u64 rt_queue_head(struct rq *rq)
{
	struct sched_rt_entity___grp *se;
	u64 q, next = 0;
	int prio = rq->rt.highest_prio.curr;

	if (prio < 0 || prio >= CHAMELEON_MAX_RT_PRIO)
		return 0;
	q = (u64)rq + bpf_core_field_offset(struct rq, rt) +
	    bpf_core_field_offset(struct rt_rq, active) +
	    bpf_core_field_offset(struct rt_prio_array, queue) +
	    (u64)prio * sizeof(struct list_head);
	if (bpf_probe_read_kernel(&next, sizeof(next), (void *)q) || !next || next == q)
		return 0;
	se = (void *)(next - bpf_core_field_offset(struct sched_rt_entity, run_list));
	/* With RT group scheduling the entry may be a group's: no task. */
	if (bpf_core_field_exists(se->my_q) && BPF_CORE_READ(se, my_q))
		return 0;
	return (u64)se - bpf_core_field_offset(struct task_struct, rt);
}

/*
 * The only RT task on @rq is a per-CPU kthread (idle injection, a threaded
 * interrupt), running there or woken and about to: between its wakeup and
 * the switch, rq->curr is still what it preempts (an scx task, the idle
 * task), and the turn is as short as when it runs. A hint, read without the
 * lock.
 */
static bool pcpu_kthread_turn(struct rq *rq)
{
	struct task_struct *curr = rq->curr, *t;
	u64 addr;

	if (rq->rt.rt_nr_running != 1)
		return false;
	if (curr && curr->prio < CHAMELEON_MAX_RT_PRIO)
		return is_pcpu_kthread(curr);
	addr = rt_queue_head(rq);
	if (!addr)
		return false;
	t = (struct task_struct *)addr;
	return (BPF_CORE_READ(t, flags) & PF_KTHREAD) && BPF_CORE_READ(t, nr_cpus_allowed) == 1;
}

/*
 * A higher class holds @cpu, and a task put there (a move, an idle pick)
 * would wait as long as it runs: the kernel said so (cpu_release, no
 * cpu_acquire yet), or an RT task is queued there (the kernel says nothing
 * when one takes a CPU that was idle: no scx task ran there to be
 * released). Not a per-CPU kthread's turn while it is short
 * (chameleon_kthread_holds()): the emulation's idle injection makes its CPUs
 * slower, it does not take them away, and it takes every emulated CPU at
 * once; counted as held, those CPUs would refuse the waiters a fused
 * object's lent CPUs move out, which would then split the object at the
 * lending bound.
 */
bool cpu_held(s32 cpu)
{
	struct cpu_release *rl;
	struct rq *rq;
	u64 at;

	if (!cpu_valid(cpu))
		return false;
	rl = &cpu_releases[CPU_IDX(cpu)];
	at = READ_ONCE(rl->released_at);
	if (at)
		return !chameleon_kthread_holds(at, READ_ONCE(rl->released_kthread),
						bpf_ktime_get_ns(), CHAMELEON_RELEASE_NS);
	if (!higher_class_waits(cpu))
		return false;
	rq = bpf_per_cpu_ptr(&runqueues, cpu);
	return !rq || !pcpu_kthread_turn(rq);
}

/*
 * @cpu's queue is still held for a per-CPU kthread's turn there: nobody
 * steals from it (preempt.h). Global: stealing asks in a loop.
 */
int kthread_holds(s32 cpu)
{
	struct cpu_release *rl;
	u64 at;

	if (!cpu_valid(cpu))
		return 0;
	rl = &cpu_releases[CPU_IDX(cpu)];
	at = READ_ONCE(rl->released_at);
	return at && chameleon_kthread_holds(at, READ_ONCE(rl->released_kthread),
					     bpf_ktime_get_ns(), CHAMELEON_RELEASE_NS);
}

/* Where a task a kthread pushed off @cpu goes back into its queue (preempt.h). */
u64 resume_vtime(s32 cpu, u64 vtime)
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
 * A higher class (RT, deadline, stop) takes @cpu from us (@next: its task).
 * A kthread bound here changes nothing: kmod_proxy's idle injection (the
 * emulation makes the CPU slower, it does not take it away), the stopper, a
 * threaded interrupt: their turns are short, the object stays, and the guard
 * splits if the owner stays away for CHAMELEON_AWAY_NS. Anyone else may
 * hold the CPU for long: a fused owner gives its CPUs back. Returns whether
 * that split is due (the caller splits: where it can call what a split
 * calls, else the guard does at its next pass, preempt_split_due()). The
 * local queue goes back to enqueue either way (the caller): the kernel says
 * this once until the CPU is ours again, so an RT task that follows the
 * kthread would find the local queue full and never let it run.
 */
bool preempt_release(s32 cpu, struct task_struct *next, bool waiting)
{
	struct cpu_release *rl = &cpu_releases[CPU_IDX(cpu)];
	bool fused = cpu_fused(cpu);

	WRITE_ONCE(rl->released_kthread, next && is_pcpu_kthread(next));
	WRITE_ONCE(rl->released_at, bpf_ktime_get_ns() ?: 1);
	/*
	 * What waits for the CPU now waits for the guard's bounds. Its own
	 * queue's tasks keep its bit set themselves (queue_hint_set()), as
	 * does a role other than NATIVE, and a task put into its local queue
	 * from now on sets it (local_insert_watch()): only a local queue
	 * holding tasks now (@waiting) needs it set here.
	 */
	if (waiting)
		guard_need_set(cpu);
	if (rl->released_kthread) {
		if (fused)
			cpu_stats[CPU_IDX(cpu)].nr_kthread_keeps++;
		return false;
	}
	return fused;
}

/* A higher class other than a per-CPU kthread holds fused @cpu: split it. */
bool preempt_split_due(s32 cpu)
{
	struct cpu_release *rl;

	if (!cpu_valid(cpu))
		return false;
	rl = &cpu_releases[CPU_IDX(cpu)];
	return READ_ONCE(rl->released_at) && !READ_ONCE(rl->released_kthread) && cpu_fused(cpu);
}

/* @cpu is ours again: its queue is its own to serve. */
void preempt_acquire(s32 cpu)
{
	WRITE_ONCE(cpu_releases[CPU_IDX(cpu)].released_at, 0);
}

/*
 * An RT (or deadline) task follows a per-CPU kthread's turn on @cpu (@next):
 * the hold is no longer a kthread's. Its queue is unprotected at once, and
 * the guard splits an object there and drains the queue on the bound that
 * started with the kthread's turn. The kernel's callbacks never say this.
 */
static void preempt_followed(s32 cpu, struct task_struct *next)
{
	struct cpu_release *rl = &cpu_releases[CPU_IDX(cpu)];

	if (READ_ONCE(rl->released_at) && READ_ONCE(rl->released_kthread) &&
	    !is_pcpu_kthread(next))
		WRITE_ONCE(rl->released_kthread, 0);
}

/*
 * Every context switch: to or from a higher class (RT, deadline, stop: prio
 * below MAX_RT_PRIO), or between two others, where it reads the CPU's own
 * release word and clears it if set. On 6.19+, where
 * a local queue can be re-enqueued from any context, the agent drops
 * ops.cpu_release and ops.cpu_acquire, as the scx schedulers do there, and
 * this is the release (from anything of ours, the idle loop included: a
 * higher class taking an idle CPU into whose local queue a task was just put
 * is now seen too) and the acquire. On every kernel it sees what the
 * callbacks never say: an RT task that follows a per-CPU kthread's turn
 * (preempt_followed()), and a CPU a higher class left idle (ours again
 * before any task of ours runs there).
 */
SEC("?tp_btf/sched_switch")
int BPF_PROG(chameleon_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	bool to_high = next->prio < CHAMELEON_MAX_RT_PRIO;
	bool from_high = prev->prio < CHAMELEON_MAX_RT_PRIO;
	bool waiting;
	s32 cpu;

	cpu = bpf_get_smp_processor_id();
	if (!cpu_valid(cpu))
		return 0;
	/*
	 * Not to a higher class: the CPU is ours (a no-op unless it was
	 * held). Also between two tasks of ours: a task that left SCHED_FIFO
	 * while it ran here (the agent once attached, a PI boost ending)
	 * made no switch from a higher class, and the CPU would stay held
	 * until the next real-time turn here.
	 */
	if (!to_high) {
		if (READ_ONCE(cpu_releases[CPU_IDX(cpu)].released_at))
			preempt_acquire(cpu);
		return 0;
	}
	if (from_high) {
		preempt_followed(cpu, next);
		return 0;
	}
	/* Before 6.19 ops.cpu_release does the rest. */
	if (!__COMPAT_scx_bpf_reenqueue_local_from_anywhere())
		return 0;
	/*
	 * A split due is the guard's (preempt_split_due()): not callable here
	 * (the module's kfuncs are for struct_ops programs). Its next pass
	 * splits only if the higher class still holds the representative:
	 * most such turns (rcu_preempt at SCHED_FIFO, a threaded IRQ) end
	 * well within a guard period, and an object split at once for each
	 * of them would lose much of its fused time to turns it outlives.
	 *
	 * A CPU the higher class took from its idle loop has nothing in its
	 * local queue: no re-enqueue, no guard (on a machine at rest, the
	 * stopper's watchdog turn every few seconds on each CPU would
	 * otherwise cost a guard look per CPU per turn). The count is exact:
	 * every insert into a local queue holds its CPU's runqueue lock, as
	 * this hook does.
	 */
	waiting = scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) > 0;
	preempt_release(cpu, next, waiting);
	if (waiting)
		scx_bpf_reenqueue_local_from_anywhere();
	return 0;
}

/*
 * A task goes into @cpu's local queue (enqueue): if a higher class holds
 * @cpu now, the guard watches that queue (the hook above saw it empty, and
 * so did not). Exact where @cpu is the task's own CPU, whose runqueue lock
 * enqueue holds; the other insert, an owner's into its representative's
 * local queue, goes to a CPU whose role keeps its bit set anyway.
 */
void local_insert_watch(s32 cpu)
{
	if (cpu_valid(cpu) && READ_ONCE(cpu_releases[CPU_IDX(cpu)].released_at))
		guard_need_set(cpu);
}

/*
 * Is an RT task queued on @cpu? It runs before anything dispatch puts into
 * the local queue, and nobody tells us when that happens to a CPU that was
 * idle: before 7.1, ops.dispatch there leaves its queue alone meanwhile (the
 * task would wait in the local queue for the whole burst; in ours the others
 * steal it and the guard drains it), and no placement picks such a CPU
 * (cpu_held). The runqueue is read through the kernel's per-CPU `runqueues`
 * (every kernel has it; scx_bpf_cpu_rq() is gone from 6.19): under its lock
 * from dispatch, a hint from elsewhere. Not dl_nr_running: it counts the
 * kernel's deadline servers too.
 */
bool higher_class_waits(s32 cpu)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);

	/* rt_queued: a throttled RT queue is not queued, and we may run then. */
	return rq && rq->rt.rt_queued && rq->rt.rt_nr_running;
}

/*
 * Is an RT task runnable on @cpu but not running, the CPU given to the lower
 * classes for now: its queue throttled (RT bandwidth: rt_nr_running with
 * rt_queued clear), or the kernel's ext server active (6.19+)? Then the
 * RT task holds the CPU for most of every period: from ops.dispatch on a
 * lent CPU, its object does not have it. Not an RT task that just woke here
 * and has yet to preempt (queued, no server): its turn may be short.
 */
bool rt_hog_yields(s32 cpu)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);

	if (!rq || !rq->rt.rt_nr_running)
		return false;
	return !rq->rt.rt_queued || ext_server_serves(cpu);
}

/* The kernel's deadline server for sched_ext (6.19+; not in older kernels). */
struct rq___ext_server {
	struct sched_dl_entity ext_server;
} __attribute__((preserve_access_index));

/*
 * May ops.dispatch on @cpu fill its local queue although an RT task is
 * queued there? Yes when the kernel's deadline server for sched_ext is
 * active (6.19+): it takes the CPU from the RT class for its runtime (50 ms
 * of every second as shipped) and asks us for a task now. A server pick we
 * answer with nothing stops the server for good: it starts again only when
 * the CPU's count of sched_ext tasks goes from 0 to 1, which a task that can
 * run only here, waiting in our queue, never makes happen; it then waits
 * until the watchdog ejects us. Active, throttled or not: the pick charges
 * the server's last runtime (update_curr) before it asks us, and may
 * throttle it right there, so at the one call that must not go unanswered
 * the server reads throttled. A call that is not the server's (the balance
 * of a sched_ext task that an RT wakeup preempts) then fills the local
 * queue too, and the switch to the RT task puts it back (the sched_switch
 * hook re-enqueues a non-empty local queue). Before 6.19 the kernel has no
 * such server and never asks while an RT task runs. Called from dispatch,
 * under @cpu's rq lock.
 */
bool ext_server_serves(s32 cpu)
{
	struct rq___ext_server *rq = bpf_per_cpu_ptr(&runqueues, cpu);
	struct sched_dl_entity *se;

	if (!rq || !bpf_core_field_exists(rq->ext_server))
		return false;
	se = &rq->ext_server;
	return BPF_CORE_READ_BITFIELD(se, dl_server_active);
}

/*
 * From dispatch on @cpu while an RT task is queued there and the ext server
 * is not (as far as we read it) active: the first task of @cpu's queue that
 * can run nowhere else goes to the local queue; the rest stays, for other
 * CPUs to take. A pinned task gains nothing by waiting in our queue, and in
 * the local queue the next to give this CPU to sched_ext finds it without
 * asking us: the ext server (6.19+) is stopped for good by a pick that
 * finds nothing, and starts again only when the CPU's sched_ext tasks come
 * and go, which a pinned task that never ran does not do. Bounded: the
 * first CHAMELEON_PINNED_SCAN tasks. Returns whether it moved one.
 */
#define CHAMELEON_PINNED_SCAN	8

bool dispatch_pinned(s32 cpu)
{
	struct task_struct *p;
	u32 seen = 0;

	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (++seen > CHAMELEON_PINNED_SCAN)
			break;
		if (task_movable(p))
			continue;
		return scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0);
	}
	return false;
}

#ifndef SCHED_FIFO
#define SCHED_FIFO	1
#define SCHED_RR	2
#endif

/*
 * An RT task other than a per-CPU kthread runs on @cpu now (a hint: its
 * runqueue read without its lock). The kernel says nothing when one takes a
 * CPU that was idle; the guard drains such a CPU's queue when it sees it so
 * for CHAMELEON_RELEASE_NS, as it does a CPU the kernel said it took
 * (rt_held_long()).
 */
static bool rt_task_runs(s32 cpu)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, cpu);
	struct task_struct *curr;

	if (!rq || !rq->rt.rt_nr_running)
		return false;
	curr = rq->curr;
	if (!curr || (curr->policy != SCHED_FIFO && curr->policy != SCHED_RR))
		return false;
	return !((curr->flags & PF_KTHREAD) && curr->nr_cpus_allowed == 1);
}

/*
 * From the guard, @cpu's queue holding tasks: has an RT task (rt_task_runs)
 * held it at every pass for CHAMELEON_RELEASE_NS? Global: verified once, not
 * in each branch of the guard's loop.
 */
bool rt_held_long(s32 cpu, u64 now)
{
	struct cpu_release *rl;

	if (!cpu_valid(cpu))
		return false;
	rl = &cpu_releases[CPU_IDX(cpu)];
	if (!rt_task_runs(cpu)) {
		rl->rt_seen_at = 0;
		return false;
	}
	if (!rl->rt_seen_at) {
		rl->rt_seen_at = now;
		return false;
	}
	return chameleon_time_since(now, rl->rt_seen_at) >= CHAMELEON_RELEASE_NS;
}
