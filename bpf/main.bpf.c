/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_chameleon: the sched_ext policy. This file holds the ops; the state
 * they share is base.bpf.c's, and each concept lives in a unit of its own,
 * each calling only the units below it (chameleon.bpf.h lists them bottom
 * first). An op finds out what to do from the concept units and does it.
 *
 * Design
 * ------
 * Every CPU has its own queue (a user DSQ whose id is the CPU number) ordered
 * by virtual time, and its own virtual clock (queue.bpf.c). This is the
 * cluster-scheduling substrate of Chameleon (§3.3): execution objects and the
 * virtual threads that decide when a task may borrow a neighbour compare a
 * task's place in a borrowed CPU's queue with what runs there, so each CPU
 * needs its own ordered queue and clock.
 *
 * With --llc-queues (experimental, off by default: bench/README.md), a task
 * that may run on any CPU of its LLC and has nothing tying it to one
 * (untagged, no object, no kthread) waits instead in its LLC's queue, one
 * vtime queue with its own clock shared by the LLC's CPUs
 * (llc_queue.bpf.c): a CPU whose own queue is empty takes the LLC's next
 * task where it would otherwise probe and migrate from other CPUs' queues.
 * Only while every CPU of the LLC is NATIVE and online: objects, lending
 * and parking weigh and move tasks in per-CPU queues, so an LLC with an
 * object queues per CPU, and the guard moves what its queue held.
 *
 * A CPU has one role (role.h): NATIVE, a representative of an object
 * (FUSING, REP, SPLITTING), LENT to one, or PARKED. The role changes only by
 * CAS along a written state machine, and one rule built on it says who may
 * run where (may_run_on(), role.bpf.h): every op below places tasks by it.
 *
 * - select_cpu: the CPU the task last ran on if idle, else the kernel's
 *   default idle search; a CPU the rule refuses is passed over for another
 *   idle one. A task that found an idle CPU is handed to it; for one that
 *   found none, enqueue does not search again. A sync wakeup by a task that
 *   wakes many in turn (sync_flags()) may queue the wakee behind its waker,
 *   as the kernel's search answers, one wakee at a time
 *   (chameleon_sync_behind_waker()); a pipe's two ends keep a CPU each.
 *   On a machine of several NUMA nodes the kernel keeps idle CPUs per node;
 *   every search looks in the task's node, and in the others only when one
 *   of them has an idle CPU (idle_pick_in(), idle_beyond()).
 * - a task's wake and sleep (wake.bpf.c): its tag checked, its virtual
 *   threads placed, the agent told if needed; the sleep in
 *   stopping(!runnable), the wake in the first op that places it after
 *   (select_cpu's direct insert, else enqueue), with no ops.runnable.
 * - enqueue (place_task(), place.bpf.c, decides; the op inserts and
 *   kicks): a task with an object goes to its representative; one whose
 *   CPU the rule refuses, elsewhere; otherwise, an idle CPU it may run on
 *   takes it now (idle handoff: into that CPU's local queue where the kernel
 *   can take it back out of one a higher class holds, 7.1+, else into that
 *   CPU's own queue, and the CPU is kicked: it cannot miss the task). Else
 *   it joins its LLC's queue or its CPU's, vtime rebased, floored and
 *   capped (CHAMELEON_WAIT_BOUND_NS).
 * - dispatch: a lent CPU runs only what it serves (lend.bpf.c), a parked one
 *   what can run nowhere else (park.bpf.c); others the task the guard named
 *   starved, the head of their queue, the previous task if still first, the
 *   head of their LLC's queue (or of another LLC's), or another CPU's:
 *   while any CPU's role is taken, the first head found in a window of
 *   queues (steal()); else, once a slice, the head of one queue of two or
 *   more (balance_pull(), queue.bpf.c). A fused representative takes from
 *   none of them.
 * - running/tick/stopping: advance the CPU's clock; charge delta * 100 /
 *   weight (weight.bpf.c: nice with cgroup cpu.weight); objects fuse, pay
 *   tax and split (exec_object.bpf.c).
 * - cpu_release/cpu_acquire (before 6.19; after, a sched_switch hook in
 *   their place): a higher class took the CPU (preempt.bpf.c); its local
 *   queue goes back to enqueue.
 * - cpu_online/cpu_offline: objects split, queues drained (hotplug.bpf.c,
 *   drain.bpf.c).
 *
 * Bounded waits: every runnable task runs within a bound by construction: on
 * an ordinary queue the vtime cap, and whatever the vtimes say, 1 s (the
 * guard's starved task; an LLC queue's tail that waited half that goes to a
 * CPU's queue); on a lent CPU the lending bound (--lend-wait-ms); an
 * object lives only while its owner runs on its representative; a queue its
 * CPU stops serving (a higher class, hotplug) is drained by the guard; no
 * movable task is put into another CPU's local queue where the kernel could
 * not take it back out (before 7.1). A guard timer (guard.bpf.c) enforces
 * them even if no hook of those CPUs runs, and counts broken invariants
 * (intf.h, struct chameleon_invariants). timeout_ms is set well above.
 *
 * SCX_OPS_ENQ_LAST is set so that a task preempted on a lent CPU comes back
 * through enqueue() instead of silently continuing to run there;
 * SCX_OPS_ENQ_EXITING so that an exiting task is queued by us too, not left
 * in a local queue a higher class may hold.
 *
 * Userspace (the agent) reads per-CPU counters from .bss and events from a
 * ring buffer (events.bpf.c); nothing on the scheduling path waits for it.
 * If the agent dies, the struct_ops link closes and the kernel moves every
 * task back to the fair class: nothing is stranded by design.
 */
#include "role.bpf.h"
#include "weight.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

u64 nr_cpu_online_events, nr_cpu_offline_events;

/*
 * @p becomes runnable on @cpu: the first op that places it since it joined
 * or since stopping(!runnable) calls this (tctx->awake): select_cpu's direct
 * insert (direct(), which ops.enqueue does not follow) or ops.enqueue. The
 * kernel's ops.runnable would come first, but it is one more struct_ops call
 * and task-storage lookup per wake, for what the op after it can do with the
 * context at hand. Its tag checked, its counts, and for a tagged task its
 * virtual threads placed or its object asked for again; one the agent was
 * told sleeps is reported awake (asking again if its object was freed).
 * Inlined: the ops' call chains below it are as deep as verifiers before
 * 7.0 allow (8 frames).
 */
static __always_inline void task_wakes(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	struct chameleon_assignment a;
	bool held;

	tctx->awake = 1;
	tag_check(p, tctx);
	count_untagged(p, tctx, true);
	cg_count(tctx, true);
	if (!tctx->tagged)
		return;
	held = assignment_of(p, &a);
	if (held)
		place_vthreads(tctx, &a);
	else
		redemand_if_lost(p, tctx);
	if (tctx->sleep_told) {
		tctx->sleep_told = 0;
		emit(CHAMELEON_EV_WAKE, cpu, p, !held);
	}
}

/*
 * select_cpu found @cpu idle for @p: hand it over (direct()), with its wake
 * if the insert is direct (no ops.enqueue follows one). Global: its three
 * call sites would each verify task_wakes() where inserts are direct (7.1+).
 */
int wake_direct(struct task_struct *p __arg_trusted, s32 cpu)
{
	struct task_ctx *tctx = task_ctx(p);

	if (tctx && !tctx->awake && local_handoff())
		task_wakes(p, tctx, cpu);
	direct(p, tctx);
	return 0;
}

/*
 * The flags select_cpu searches with: SCX_WAKE_SYNC kept only for a waker
 * that wakes many tasks in turn (chameleon_wake_record()). The wakee of one
 * that wakes a single partner back and forth (a pipe's ends) keeps a CPU
 * of its own: queued behind its waker each time, the two would share one
 * CPU and switch at every message while others idle.
 */
static __always_inline u64 sync_flags(struct task_struct *p, u64 wake_flags)
{
	struct task_ctx *wctx;

	if (!(wake_flags & SCX_WAKE_SYNC))
		return wake_flags;
	wctx = task_ctx(bpf_get_current_task_btf());
	if (!wctx)
		return wake_flags & ~SCX_WAKE_SYNC;
	chameleon_wake_record(&wctx->wake_rec, wctx->last_wakee != p->pid);
	wctx->last_wakee = p->pid;
	return wctx->wake_rec.many ? wake_flags : wake_flags & ~SCX_WAKE_SYNC;
}

s32 BPF_STRUCT_OPS(chameleon_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	bool is_idle = false;
	s32 cpu;

	/* A task with an object belongs on its representative. */
	cpu = tctx ? task_rep(p, tctx) : -1;
	if (cpu >= 0) {
		if (may_run_on(p, cpu, PLACE_NEW) && scx_bpf_test_and_clear_cpu_idle(cpu))
			wake_direct(p, cpu);
		return cpu;
	}

	/* Hybrid: an idle fast CPU before a slow last one (fast.bpf.c). */
	if (wants_fast(p, prev_cpu)) {
		cpu = pick_idle_fast(p);
		if (cpu >= 0) {
			wake_direct(p, cpu);
			cpu_stats[CPU_IDX(bpf_get_smp_processor_id())].nr_fast_moves++;
			return cpu;
		}
	}

	/*
	 * The CPU it last ran on, if idle: its caches are warm, and it is
	 * what the fair class picks first too. Most wakeups of a task that
	 * sleeps and wakes often end here, without the whole idle search.
	 * (The kernel's search alone prefers a whole idle core on SMT, and
	 * would split a pipe's two tasks across cores.) A CPU one of our
	 * tasks runs on is not idle: no probe there (a stale read costs the
	 * probe, or leaves @prev_cpu to the kernel's search, which looks at
	 * it too).
	 */
	if (!READ_ONCE(cpu_run(prev_cpu)->running) && may_run_on(p, prev_cpu, PLACE_NEW) &&
	    scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		wake_direct(p, prev_cpu);
		return prev_cpu;
	}

	wake_flags = sync_flags(p, wake_flags);
	cpu = select_idle_near(p, prev_cpu, wake_flags, &is_idle);
	/*
	 * A sync wakeup kept (sync_flags()): the kernel's search answers with
	 * the waker's CPU, not idle, when nothing waits in its local queue and
	 * the node has idle CPUs. The wakee then queues behind its waker
	 * (enqueue), where it runs when the waker sleeps, its data in the
	 * cache the waker just wrote it into: not handed to another CPU to
	 * run alone and sleep again at once, one wakeup and migration a message.
	 */
	if ((wake_flags & SCX_WAKE_SYNC) && cpu == bpf_get_smp_processor_id()) {
		/* One wakee at a time behind it (chameleon_sync_behind_waker()). */
		if (chameleon_sync_behind_waker(queue_hint(cpu) ? scx_bpf_dsq_nr_queued(cpu) : 0))
			is_idle = false;
		else
			cpu = select_idle_near(p, prev_cpu, wake_flags & ~SCX_WAKE_SYNC, &is_idle);
	}
	/*
	 * Found idle but not to be used now (a role changed since the
	 * search, a higher class holds it, a kthread's search found a lent
	 * CPU): another idle one. With none, its previous CPU, as when the
	 * search finds nothing; enqueue moves it where the rule allows. Not
	 * the refused CPU: a task queued on a lent CPU waits there as a
	 * waiter of the object, which a kthread's wakeup would then split.
	 */
	if (is_idle && !may_run_on(p, cpu, PLACE_PICKED)) {
		s32 other;

		idle_refused(cpu);
		other = pick_idle(p);

		if (other >= 0) {
			cpu = other;
		} else {
			cpu = prev_cpu;
			is_idle = false;
		}
	}
	if (is_idle)
		wake_direct(p, cpu);
	else if (tctx)
		tctx->wake_busy = 1;
	return cpu;
}

void BPF_STRUCT_OPS(chameleon_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = task_cpu_of(p);
	struct task_ctx *tctx = task_ctx(p);
	struct placement pl = {};
	s64 kick;

	/*
	 * enable() gave every task a context and the agent refuses machines
	 * with more CPUs than the arrays hold: neither can happen. (Not the
	 * global queue: any CPU would take it from there, whatever its role.)
	 */
	if (!tctx || !cpu_valid(cpu)) {
		scx_bpf_error("enqueue: pid %d has %s (cpu %d)", p->pid,
			      tctx ? "an invalid CPU" : "no task context", cpu);
		return;
	}
	/*
	 * Its wake, if select_cpu did not insert it (task_wakes()); else a
	 * re-enqueue, where a retag reaches a task that never sleeps.
	 */
	if (!tctx->awake) {
		task_wakes(p, tctx, cpu);
	} else {
		tag_check(p, tctx);
		count_untagged(p, tctx, true);
		cg_count(tctx, true);
	}

	place_task(p, tctx, cpu, enq_flags, &pl);
	cpu = pl.cpu;
	switch (pl.how) {
	case INSERT_HANDOFF_FAST:
		cpu_stats[CPU_IDX(bpf_get_smp_processor_id())].nr_fast_moves++;
		/* fallthrough */
	case INSERT_HANDOFF:
		handoff(p, tctx, cpu, enq_flags);
		return;
	case INSERT_LOCAL:
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
		local_insert_watch(cpu);
		break;
	case INSERT_LOCAL_ON_VTIME:
		scx_bpf_task_set_dsq_vtime(p, pl.vtime);
		/* fallthrough */
	case INSERT_LOCAL_ON:
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_ns, enq_flags);
		local_insert_watch(cpu);
		break;
	case INSERT_FRONT:
		scx_bpf_dsq_insert_vtime(p, cpu, 0, pl.vtime, enq_flags);
		queue_hint_set(cpu);
		break;
	default:
		/* Its LLC's queue, if it may run anywhere there (llc_queue.bpf.c). */
		kick = llc_enqueue(p, tctx, cpu, pl.vtime, enq_flags);
		if (kick >= 0) {
			pl.kick = kick;
			break;
		}
		scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, pl.vtime, enq_flags);
		queue_hint_set(cpu);
		/* Whom its arrival wakes is read with the task in the queue. */
		place_queued(p, enq_flags, &pl);
		if (pl.how == INSERT_WAITER)
			waiter_on_lent(cpu, p);
		break;
	}
	if (pl.kick)
		kick_cpu(cpu, pl.kick);
}

/* Fill @cpu's local queue; whether it got a task. */
static bool dispatch_cpu(s32 cpu, struct task_struct *prev)
{
	u32 kind = role_kind(cpu);
	bool held;
	u64 mine;

	/*
	 * A lent CPU runs only the kthreads it serves (processor-proxy work),
	 * unless its object ends now (an RT task that holds it gives it to us
	 * for a while: lent_split_due()). If another decision on the object
	 * is in flight, the CPU is still lent: what can run only here takes
	 * it all the same (dispatch_pinned()), as it would once the split
	 * lands, rather than this turn going to nobody.
	 */
	if (kind == CHAMELEON_ROLE_LENT) {
		if (!lent_split_due(cpu)) {
			perf_set(cpu, 0);
			return dispatch_lent(cpu);
		}
		kind = role_kind(cpu);
		if (kind == CHAMELEON_ROLE_LENT)
			return dispatch_lent(cpu) || dispatch_pinned(cpu);
	}
	if (kind == CHAMELEON_ROLE_PARKED)
		return dispatch_parked(cpu);
	/*
	 * Before 7.1 a task put into a local queue an RT task holds would wait
	 * there the whole burst (preempt.bpf.c): decline, unless the kernel's
	 * ext server is active and this is its turn (a server answered with
	 * nothing stops for good); what can run only here goes to the local
	 * queue all the same (dispatch_pinned()).
	 */
	if (!local_handoff() && higher_class_waits(cpu) && !ext_server_serves(cpu))
		return dispatch_pinned(cpu);
	if (dispatch_starved(cpu))
		return true;
	/*
	 * A fused representative takes nothing from the others: its owner is
	 * in its queue (it stopped, runnable) or the object ends within a
	 * guard period; a task taken from elsewhere would run first and end
	 * the object.
	 */
	held = kind == CHAMELEON_ROLE_REP;
	mine = queue_hint_clear(cpu, scx_bpf_dsq_nr_queued(cpu));
	if (mine) {
		if (keep_prev(cpu, prev, held))
			return true;
		if (!held && balance_pull(cpu, mine))
			return true;
		if (scx_bpf_dsq_move_to_local(cpu, 0)) {
			cpu_stats[CPU_IDX(cpu)].nr_dispatched++;
			return true;
		}
		if (!held)
			hotplug_unrunnable(cpu);
	}
	/*
	 * Its LLC's queue (llc_queue.bpf.c), else another CPU's. With no
	 * object, lend or park anywhere, once a slice the head of one queue
	 * of two or more (balance_pull()): every waiting task was placed
	 * when it woke or its slice ended, where an idle CPU would have
	 * taken it, and stealing at every dispatch only runs a just-queued
	 * wakee alone, which empties its pipe and sleeps again: a wakeup and
	 * a migration per message rather than a batch (bench/README.md).
	 * With roles taken, tasks are pushed off representatives and wait
	 * on CPUs that will not serve them soon: every idle dispatch steals.
	 */
	if (!held && (llc_take(cpu, prev) ||
		      (READ_ONCE(nr_not_native) ? steal(cpu) : balance_pull(cpu, 0))))
		return true;
	/*
	 * Nothing else to run: the task that used up its slice here runs on,
	 * its tag checked first (a task now tagged goes through enqueue).
	 */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && task_cpu_of(prev) == cpu &&
	    may_run_on(prev, cpu, PLACE_STAY)) {
		tag_check_renewed(prev);
		return renew(prev, cpu);
	}
	/*
	 * The kernel's ext server gives us this CPU under an RT task and our
	 * rules found nothing: the head of its queue takes it. A server given
	 * nothing stops, and what can run only here would wait for the RT
	 * task to end.
	 */
	if (scx_bpf_dsq_nr_queued(cpu) && higher_class_waits(cpu) && ext_server_serves(cpu))
		return scx_bpf_dsq_move_to_local(cpu, 0);
	return false;
}

void BPF_STRUCT_OPS(chameleon_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 t0, now_j;
	bool got;

	if (!cpu_valid(cpu))
		return;
	/* A fuse or split waits for this CPU: time its side of the work. */
	t0 = cpu_lend(cpu)->pending_for ? bpf_ktime_get_ns() : 0;
	/*
	 * This queue is served (hotplug_guard rescues one that is not, after
	 * CHAMELEON_RESCUE_NS): jiffies are precise enough for that and cost
	 * a load, where a clock read is a helper call at every dispatch. The
	 * guard reads it: written once a jiffy, not at every dispatch.
	 */
	now_j = bpf_jiffies64();
	if (cpu_run(cpu)->dispatched_j != now_j)
		WRITE_ONCE(cpu_run(cpu)->dispatched_j, now_j);
	got = dispatch_cpu(cpu, prev);
	if (t0)
		pending_dispatched(cpu, t0, got);
}

void BPF_STRUCT_OPS(chameleon_running, struct task_struct *p)
{
	s32 cpu = task_cpu_of(p);
	struct task_ctx *tctx = task_ctx(p);
	struct cpu_run *cr;
	u64 now, vtime;

	if (!tctx || !cpu_valid(cpu))
		return;
	cr = cpu_run(cpu);
	now = bpf_ktime_get_ns();

	repay_resume_lag(p, tctx);
	/* A stolen task arrives with the victim CPU's clock. */
	rebase_to(p, tctx, cpu);
	vtime = task_vtime(p, tctx);
	cr->vclock = chameleon_vtime_advance(cr->vclock, vtime);
	cr->curr_vtime = vtime;
	tctx->weight = task_weight_at(p, tctx, now);
	cr->curr_weight = tctx->weight;
	cr->curr_started = now;
	cr->curr_pid = p->pid;
	cr->running = 1;
	tctx->started_at = now;
	tctx->exec_at = p->se.sum_exec_runtime;
	if (cpu_lend(cpu)->local_from)
		pending_switched(cpu, false);
	lend_owed_turn(cpu, p);
	/* Objects: only where one is, or may be (exec_object.bpf.c). */
	if (tctx->tagged || tctx->fused_rep || role_word(cpu) != CHAMELEON_ROLE_NATIVE)
		object_running(p, cpu);
}

void BPF_STRUCT_OPS(chameleon_tick, struct task_struct *p)
{
	s32 cpu = task_cpu_of(p);
	u64 now = bpf_ktime_get_ns();

	if (!cpu_valid(cpu))
		return;
	guard_watch(now);
	perf_update(cpu, now);
	if (READ_ONCE(reps[CPU_IDX(cpu)].owner) == p->pid) {
		object_tick(p, cpu);
		return;
	}
	/* On a slow CPU while a fast one idles: enqueue moves it. */
	if (wants_fast(p, cpu) && fast_cpu_idles(p))
		scx_bpf_task_set_slice(p, 0);
}

void BPF_STRUCT_OPS(chameleon_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = task_cpu_of(p), pid = p->pid;
	struct task_ctx *tctx = task_ctx(p);
	struct cpu_run *cr;
	struct rep_ctx *rc;
	u64 delta, now;

	if (!tctx)
		return;
	/* Whatever else is skipped below, a sleep leaves the counts. */
	if (!runnable) {
		task_leaves(p, tctx, cpu);
		cg_count(tctx, false);
	}
	if (!tctx->started_at || !cpu_valid(cpu))
		return;
	cr = cpu_run(cpu);
	delta = p->se.sum_exec_runtime - tctx->exec_at;
	tctx->started_at = 0;
	tctx->run_ns += delta;
	tctx->vtime_owed += chameleon_vtime_charge(delta, run_weight(p, tctx));
	cpu_stats[CPU_IDX(cpu)].busy_ns += delta;
	cr->running = 0;
	cr->curr_pid = 0;
	if (cpu_lend(cpu)->local_from)
		pending_switched(cpu, true);
	lend_owed_served(cpu, p);

	rc = &reps[CPU_IDX(cpu)];
	if (rc->owner == pid) {
		/*
		 * The object lives while its owner runs here. It blocked or
		 * is being moved (a property change dequeues it): give the
		 * CPUs back now. Otherwise the next task decides: another of
		 * ours splits it in running(), a higher class in
		 * cpu_release(), and the owner itself carries on fused.
		 */
		now = bpf_ktime_get_ns();
		if (!runnable)
			split(cpu, CHAMELEON_SPLIT_SLEEP);
		else
			rc->owner_off_at = now;
		charge_tax(p, tctx, cpu, now);
	}
	/*
	 * A CPU-bound task never wakes: a lost DEMAND is retried here, once
	 * per loss and at most every CHAMELEON_REDEMAND_NS. A task that holds
	 * an object did not lose its DEMAND: it is marked up to date.
	 */
	if (tctx->tagged && demand_lost(tctx)) {
		if (has_assignment(p))
			tctx->demand_drops = READ_ONCE(nr_demand_dropped);
		else
			redemand_if_lost(p, tctx);
	}
}

/* Allocate the task's context where sleeping is allowed (fork, attach). */
s32 BPF_STRUCT_OPS(chameleon_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = task_ctx_create(p);
	if (!tctx)
		return -ENOMEM;
	/* The cgroup it joins: its cpu.weight (enable() keeps it). */
	tctx->wcg = bpf_core_field_exists(args->cgroup) ? weight_cgroup_id(args->cgroup) : 0;
	return 0;
}

void BPF_STRUCT_OPS(chameleon_enable, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx) {
		scx_bpf_error("pid %d has no task context after init_task", p->pid);
		return;
	}
	life_enable(p, tctx);
}

void BPF_STRUCT_OPS(chameleon_disable, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);

	if (tctx)
		life_disable(p, tctx);
}

void BPF_STRUCT_OPS(chameleon_exit_task, struct task_struct *p,
		    struct scx_exit_task_args *args)
{
	struct task_ctx *tctx = task_ctx(p);

	if (tctx)
		life_exit(p, tctx);
}

/*
 * A new cgroup (or one there when we load) gets its cpu.weight, and inherits
 * its parent's tag in force (it has none of its own yet); the agent may
 * overwrite it with the cgroup's own tag later.
 */
s32 BPF_STRUCT_OPS(chameleon_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	struct cgroup *parent;
	u64 id = cgrp->kn->id, pid;

	if (cgrp->level < 1)
		return 0;
	cg_weight_init(cgrp, args->weight);
	parent = bpf_cgroup_ancestor(cgrp, cgrp->level - 1);
	if (!parent)
		return 0;
	pid = parent->kn->id;
	bpf_cgroup_release(parent);
	tag_inherit(id, pid);
	return 0;
}

/* A removed cgroup's tag and weight are dropped. */
void BPF_STRUCT_OPS(chameleon_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;

	tag_drop(id);
	cg_weight_exit(id);
}

void BPF_STRUCT_OPS(chameleon_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	cg_weight_set(cgrp, weight);
}

void BPF_STRUCT_OPS(chameleon_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	cg_weight_move(p, to);
}

void BPF_STRUCT_OPS(chameleon_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	if (cpu_valid(cpu) && preempt_release(cpu, args->task, true))
		split(cpu, CHAMELEON_SPLIT_PREEMPT);
	scx_bpf_reenqueue_local();
}

void BPF_STRUCT_OPS(chameleon_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	if (cpu_valid(cpu))
		preempt_acquire(cpu);
}

void BPF_STRUCT_OPS(chameleon_cpu_online, s32 cpu)
{
	if (cpu_valid(cpu))
		hotplug_cpu_back(cpu);
	__sync_fetch_and_add(&nr_cpu_online_events, 1);
	emit(CHAMELEON_EV_CPU_ONLINE, cpu, NULL, true);
}

void BPF_STRUCT_OPS(chameleon_cpu_offline, s32 cpu)
{
	if (cpu_valid(cpu)) {
		struct cpu_run *cr = cpu_run(cpu);
		s32 rep = lent_to(cpu);

		cr->running = 0;
		cr->curr_pid = 0;
		/* Offline first: the splits below wait for online CPUs only. */
		hotplug_cpu_gone(cpu);
		/* A lent CPU leaving splits its object, and so does its representative. */
		if ((rep >= 0 && split(rep, CHAMELEON_SPLIT_OFFLINE)) |
		    split(cpu, CHAMELEON_SPLIT_OFFLINE))
			guard_soon();
		cpu_lend(cpu)->pending_for = 0;
		cpu_lend(cpu)->local_from = 0;
	}
	__sync_fetch_and_add(&nr_cpu_offline_events, 1);
	emit(CHAMELEON_EV_CPU_OFFLINE, cpu, NULL, true);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(chameleon_init)
{
	const struct cpumask *online;
	u32 cpu;
	s32 ret;

	if (nr_cpus > CHAMELEON_MAX_CPUS) {
		scx_bpf_error("%u CPUs, at most %d supported", nr_cpus, CHAMELEON_MAX_CPUS);
		return -E2BIG;
	}
	init_at = bpf_ktime_get_ns();
	online = scx_bpf_get_online_cpumask();
	bpf_for(cpu, 0, nr_cpus) {
		if (cpu < CHAMELEON_MAX_CPUS) {
			cpu_hps[CPU_IDX(cpu)].online = bpf_cpumask_test_cpu(cpu, online);
			if (!cpu_hps[CPU_IDX(cpu)].online)
				llc_unfit_add(cpu, 1);
		}
	}
	scx_bpf_put_cpumask(online);
	proxy_check_abi();
	ret = roles_init();
	if (ret)
		return ret;
	ret = fast_init();
	if (ret)
		return ret;

	bpf_for(cpu, 0, nr_cpus) {
		ret = scx_bpf_create_dsq(cpu, -1);
		if (ret) {
			scx_bpf_error("cannot create queue of CPU %u: %d", cpu, ret);
			return ret;
		}
	}
	if (llc_queues) {
		bpf_for(cpu, 0, nr_llcs) {
			ret = scx_bpf_create_dsq(CHAMELEON_LLC_Q0 + cpu, -1);
			if (ret) {
				scx_bpf_error("cannot create queue of LLC %u: %d", cpu, ret);
				return ret;
			}
		}
	}
	return guard_start();
}

void BPF_STRUCT_OPS(chameleon_exit, struct scx_exit_info *ei)
{
	u32 cpu;

	UEI_RECORD(uei, ei);
	/*
	 * No lend outlives the policy. A lent CPU's IRQs would otherwise stay
	 * on its representative until the agent sees the exit and resets the
	 * module, or the module cleans up after the agent's file: later, when
	 * the kernel ejects the policy on its own (an error, the watchdog,
	 * SysRq-S), or never if the agent is stuck. Every CPU, not only those
	 * our role words call lent: after an error exit they may be wrong. The
	 * module answers -ENOENT for a CPU that is not lent.
	 */
	bpf_for(cpu, 0, nr_cpus)
		proxy_reclaim(cpu);
	/* The agent sleeps on the ring buffer: it sees the exit now. */
	events_wake_agent();
}

void BPF_STRUCT_OPS(chameleon_dump, struct scx_dump_ctx *dctx)
{
	dump_all();
}

void BPF_STRUCT_OPS(chameleon_dump_cpu, struct scx_dump_ctx *dctx, s32 cpu, bool idle)
{
	dump_one_cpu(cpu, idle);
}

void BPF_STRUCT_OPS(chameleon_dump_task, struct scx_dump_ctx *dctx, struct task_struct *p)
{
	dump_one_task(p);
}

SCX_OPS_DEFINE(chameleon_ops,
	       .select_cpu	= (void *)chameleon_select_cpu,
	       .enqueue		= (void *)chameleon_enqueue,
	       .dispatch	= (void *)chameleon_dispatch,
	       .running		= (void *)chameleon_running,
	       .stopping	= (void *)chameleon_stopping,
	       .tick		= (void *)chameleon_tick,
	       .init_task	= (void *)chameleon_init_task,
	       .enable		= (void *)chameleon_enable,
	       .disable		= (void *)chameleon_disable,
	       .exit_task	= (void *)chameleon_exit_task,
	       .cgroup_init	= (void *)chameleon_cgroup_init,
	       .cgroup_exit	= (void *)chameleon_cgroup_exit,
	       .cgroup_move	= (void *)chameleon_cgroup_move,
	       .cgroup_set_weight = (void *)chameleon_cgroup_set_weight,
	       .cpu_acquire	= (void *)chameleon_cpu_acquire,
	       .cpu_release	= (void *)chameleon_cpu_release,
	       .cpu_online	= (void *)chameleon_cpu_online,
	       .cpu_offline	= (void *)chameleon_cpu_offline,
	       .dump		= (void *)chameleon_dump,
	       .dump_cpu	= (void *)chameleon_dump_cpu,
	       .dump_task	= (void *)chameleon_dump_task,
	       .init		= (void *)chameleon_init,
	       .exit		= (void *)chameleon_exit,
	       /*
		* Our own bounds (lending, vtime cap, guard timer) keep waits
		* well under a second; a third of the kernel's default still
		* leaves room for TCG and thousands of queued tasks.
		*/
	       .timeout_ms	= 10000,	/* the agent sets --watchdog-timeout-ms */
	       /*
		* SCX_OPS_ENQ_EXITING: by default the kernel puts an exiting
		* task straight into its CPU's local queue, and puts it back
		* there when cpu_release() re-enqueues that queue: behind an RT
		* task holding the CPU it waited as long as the RT task ran.
		*/
	       /*
		* SCX_OPS_ENQ_MIGRATION_DISABLED: otherwise the kernel puts a
		* task inside migrate_disable() straight into its CPU's local
		* queue with a fresh slice, and a CPU kept busy that way never
		* reaches ops.dispatch nor consumes the global queue: what
		* waits in our queues there waits for good. Enqueue keeps such
		* a task on its CPU (task_movable()).
		*/
	       .flags		= SCX_OPS_ENQ_LAST | SCX_OPS_ENQ_EXITING |
				  SCX_OPS_ENQ_MIGRATION_DISABLED,
	       .name		= "chameleon");
