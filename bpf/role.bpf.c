/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU role word (role.h), and the one placement rule built on it
 * (may_run_on(), role.bpf.h).
 *
 * Every decision about where a task may run asks may_run_on(): select_cpu,
 * enqueue, stealing, the guard's moves and the drains. A CPU's role says who
 * it runs:
 * - NATIVE, FUSING, SPLITTING: anyone (a representative is FUSING or
 *   SPLITTING only for the few instructions of a fuse or split);
 * - REP: its owner, and per-CPU kthreads bound there, whose turn is short
 *   and ends nothing; a kthread that may run elsewhere goes elsewhere (an
 *   unbound kworker's run could keep the owner off past the guard's bound);
 *   any other task would take the representative from its owner and end
 *   the object (running());
 * - LENT: only the kthreads a processor proxy would serve there (per-CPU
 *   ones, any kthread on a kernel-work context);
 * - PARKED: only what can run nowhere else.
 * A task that is to be put somewhere new (PLACE_NEW) also needs the CPU
 * online, not held by a higher class (cpu_held), whose queue it would wait
 * in for as long as the higher class runs, and not draining (its queue is
 * unserved: the guard would move it back out, two drains in turn). The CPU
 * a task is already queued on keeps it (PLACE_STAY) while its role allows
 * it, online or not: the drains see to queues of CPUs that stopped serving
 * them. PLACE_PICKED is PLACE_NEW for a CPU an idle search of the task's
 * cpus_ptr gave, which is allowed by construction (one kfunc call less on
 * every wakeup).
 *
 * Here too the idle searches over the CPUs the roles leave placeable:
 * select_idle_near() select_cpu's, pick_idle() an idle CPU a task may run
 * on (its idle bit taken); direct() hands select_cpu's find over. The
 * placement built on them is place.bpf.c's.
 */
#include "role.bpf.h"

/*
 * The CPUs whose role lets anyone run there (NATIVE, FUSING, SPLITTING):
 * where an idle search for a task looks (pick_idle(), select_cpu). The
 * kernel's search takes the idle bit of the CPU it hands out; handed a
 * representative, a lent or a parked CPU, which we refuse, the bit would
 * stay taken and the CPU idle unseen by every later search. A copy of the
 * role words, written after each change (role_cas()), so a search may race
 * a change: may_run_on() still judges what it found, and a refused CPU gets
 * its bit back (idle_refused()).
 */
private(ROLE) struct bpf_cpumask __kptr *placeable;

/*
 * @cpu's role word went from @old to @new (role_cas()). If its kind
 * changed: its bit in `placeable`, and its LLC's count of CPUs that are not
 * NATIVE (word 0; only an LLC of NATIVE CPUs takes tasks into its queue,
 * llc_queue.bpf.c): +1 leaving NATIVE, -1 back, without a branch
 * ((w | -w) >> 31 is 1 for a word other than 0). The guard bounds every
 * role but NATIVE (its objects, lending, parking). Global, and called on
 * every successful CAS: the words are unknown here, verified once, where
 * role_cas()'s paths each know their own (chameleon_role_step()'s answer
 * per event) and would verify this again for each.
 */
int role_changed(s32 cpu, u32 old, u32 new)
{
	struct bpf_cpumask *m;

	if (new != CHAMELEON_ROLE_NATIVE)
		guard_need_set(cpu);
	if (chameleon_role_kind(old) == chameleon_role_kind(new))
		return 0;
	__sync_fetch_and_add(&nr_not_native,
			     (s32)((new | -new) >> 31) - (s32)((old | -old) >> 31));
	if (llc_queues && cpu_valid(cpu))
		__sync_fetch_and_add(&llc_run(llc_of(cpu))->nr_unfit,
				     (s32)((new | -new) >> 31) - (s32)((old | -old) >> 31));
	bpf_rcu_read_lock();
	m = placeable;
	if (m) {
		if (chameleon_role_placeable(chameleon_role_kind(new)))
			bpf_cpumask_set_cpu(cpu, m);
		else
			bpf_cpumask_clear_cpu(cpu, m);
	}
	bpf_rcu_read_unlock();
	return 0;
}

/* At load: every CPU NATIVE, all placeable. */
s32 roles_init(void)
{
	struct bpf_cpumask *m;
	u32 cpu;

	m = bpf_cpumask_create();
	if (!m)
		return -ENOMEM;
	bpf_for(cpu, 0, nr_cpus)
		bpf_cpumask_set_cpu(cpu, m);
	m = bpf_kptr_xchg(&placeable, m);
	if (m)
		bpf_cpumask_release(m);
	return 0;
}

/*
 * The one placement rule: may @p run on @cpu now (@why: enum
 * chameleon_place)? The roles' rules are this unit's header's.
 */
bool may_run_on(struct task_struct *p __arg_trusted, s32 cpu, u32 why)
{
	if (!cpu_valid(cpu))
		return false;
	/*
	 * An idle search of p->cpus_ptr gives only CPUs in it, and a task
	 * allowed on every possible CPU may run on any: no kfunc call for
	 * either (most tasks are the second).
	 */
	if (why != PLACE_PICKED && p->nr_cpus_allowed < nr_cpus) {
		bool allowed;

		/* An RCU pointer, read here as in a timer (older verifiers). */
		bpf_rcu_read_lock();
		allowed = bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
		bpf_rcu_read_unlock();
		if (!allowed)
			return false;
	}
	if (why != PLACE_STAY && (!cpu_online(cpu) || cpu_held(cpu) ||
				 READ_ONCE(cpu_hps[CPU_IDX(cpu)].drain)))
		return false;
	switch (role_kind(cpu)) {
	case CHAMELEON_ROLE_REP:
		return is_pcpu_kthread(p) || READ_ONCE(reps[CPU_IDX(cpu)].owner) == p->pid;
	case CHAMELEON_ROLE_LENT:
		return lent_cpu_runs(cpu, p);
	case CHAMELEON_ROLE_PARKED:
		return !task_movable(p);
	}
	return true;
}

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
	if (!__sync_bool_compare_and_swap(&cpu_roles[CPU_IDX(cpu)].word, old, new))
		return false;
	role_changed(cpu, old, new);
	return true;
}

/*
 * An idle search handed out @cpu (its idle bit taken) and we do not put the
 * task there. Refused for a moment (a placeable CPU: a race with a role
 * change, a higher class holding it): wake it, so that it takes the idle
 * loop again and the kernel sets its bit; without this it idles unseen by
 * later searches until some other event wakes it. A representative, lent or
 * parked CPU is refused until its role changes, and the change kicks it
 * (publish_pending() for a split, park's unpark): woken now it would only
 * idle again, and under a full load every kthread's whole-machine search
 * would pull each idle lent CPU out of idle.
 */
void idle_refused(s32 cpu)
{
	if (chameleon_role_placeable(role_kind(cpu)))
		kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * Does an idle search for @p look among the placeable CPUs only? Not for a
 * kthread: a lent CPU runs the kthreads it serves (a kernel-work sibling
 * takes the movable ones), so the whole machine is its to search.
 */
static __always_inline bool search_placeable(struct task_struct *p)
{
	return !(p->flags & PF_KTHREAD);
}

/*
 * An idle CPU for @p, its idle bit taken, or -1: from the placeable CPUs
 * where @p may run on any CPU, else from its affinity (the one search the
 * kernel offers without a mask of our own).
 */
static s32 pick_idle_from(struct task_struct *p)
{
	struct bpf_cpumask *m = placeable;
	s32 near = scx_bpf_task_cpu(p);

	if (m && search_placeable(p) && p->nr_cpus_allowed >= nr_cpus)
		return idle_pick_in(cast_mask(m), near);
	return idle_pick_in(p->cpus_ptr, near);
}

/*
 * select_cpu's search of the idle CPUs near @prev_cpu, in the placeable set
 * where the kernel takes a mask (6.16+: scx_bpf_select_cpu_and), else the
 * kernel's default search. Sets @is_idle when the CPU returned is idle and
 * its bit taken.
 */
s32 select_idle_near(struct task_struct *p __arg_trusted, s32 prev_cpu, u64 wake_flags,
		     bool *is_idle)
{
	struct bpf_cpumask *m;
	s32 cpu = -1, far;

	if (!is_idle)
		return prev_cpu;
	*is_idle = false;
	if (__COMPAT_HAS_scx_bpf_select_cpu_and && search_placeable(p)) {
		bpf_rcu_read_lock();
		m = placeable;
		if (m && idle_per_node) {
			/* In @prev_cpu's node, then as idle_pick_in() widens. */
			cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, cast_mask(m),
						     SCX_PICK_IDLE_IN_NODE);
			far = cpu < 0 ? idle_beyond(scx_bpf_cpu_node(prev_cpu)) : -1;
			if (far >= 0 && p->nr_cpus_allowed >= nr_cpus)
				cpu = scx_bpf_pick_idle_cpu_node(cast_mask(m), far,
								 SCX_PICK_IDLE_IN_NODE);
			if (far >= 0 && cpu < 0)
				cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags,
							     cast_mask(m), 0);
		} else if (m) {
			cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, cast_mask(m), 0);
		}
		bpf_rcu_read_unlock();
		if (cpu >= 0)
			*is_idle = true;
		return cpu >= 0 ? cpu : prev_cpu;
	}
	return scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, is_idle);
}

/*
 * An idle CPU @p may run on, its idle bit taken, or -1. Searched among the
 * placeable CPUs; one passed over (a race with a role change, a CPU a higher
 * class holds, or one outside the placeable set in a restricted affinity)
 * gets its bit back. Bounded.
 */
s32 pick_idle(struct task_struct *p __arg_trusted)
{
	s32 cpu = -1, c;
	u32 i;

	/* p->cpus_ptr is an RCU pointer: the guard calls this from a timer. */
	bpf_rcu_read_lock();
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		c = pick_idle_from(p);
		if (c < 0)
			break;
		if (may_run_on(p, c, PLACE_PICKED)) {
			cpu = c;
			break;
		}
		idle_refused(c);
	}
	bpf_rcu_read_unlock();
	return cpu;
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
