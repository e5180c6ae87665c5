/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Execution objects: fuse, split, virtual threads and taxation (Chameleon
 * §3.3, §4.3.1-§4.3.3). The lent CPUs' side (the lending bound, what they
 * run, the latency of each decision) is in lend.bpf.c.
 *
 * A tagged task that the agent gave an object (map `assignments`) is queued on
 * its representative CPU. Each time it starts running there, it tries to fuse:
 * every other CPU of the object whose virtual thread may take it (the CPU is
 * idle, or runs something with a later vtime than vruntimes[i]) is borrowed;
 * if not all can be, the largest qualifying prefix is (partial fuse); if none,
 * it runs natively. A borrowed CPU is kicked and, in its dispatch, runs
 * nothing but per-CPU kthreads (what a processor proxy would serve), so it
 * goes idle: that is what keeps the neighbour's resources for the fused task.
 *
 * While fused, the task's virtual threads are charged tax, for the time a
 * lent CPU had someone waiting (borrowing an idle CPU costs nobody anything).
 * On tick, and when a task becomes runnable on a lent CPU, a waiter whose
 * vtime is earlier than the virtual thread's splits the object once it ran
 * its minimum granularity (§4.3.2).
 *
 * Bounds (ours; CFS has no watchdog, sched_ext does):
 * - lending: a task that waits on a lent CPU for --lend-wait-ms runs,
 *   whatever the vtimes say: moved to a CPU outside any object if it may run
 *   elsewhere (guard.bpf.c), else given the CPU back (split reason "bound"),
 *   which is then not lent again for one slice, so the waiter runs;
 * - an object lives only while its owner runs on its representative: it is
 *   split when the owner blocks, is taken off by a higher class (not by a
 *   kthread bound there, such as the emulation's idle injection:
 *   cpu_release) or by another task (not a kthread: its turn is short),
 *   runs elsewhere, exits or loses its tag;
 * - the guard timer checks both every CHAMELEON_GUARD_NS even if no hook of
 *   the object's CPUs runs (an owner off its representative for
 *   CHAMELEON_AWAY_NS is split).
 *
 * Concurrency: the roles of the CPUs involved change only along role.h's
 * state machine, by CAS. Only the representative fuses (in running()): it
 * takes itself NATIVE -> FUSING, which fails if it is lent or parked, then
 * each CPU it borrows NATIVE -> LENT(rep), which fails if that CPU is anything
 * else, then itself FUSING -> REP. A split may be decided on any CPU: REP ->
 * SPLITTING is the CAS that makes exactly one CPU perform it; it gives each
 * CPU back (LENT(rep) -> NATIVE) and only then ends SPLITTING -> NATIVE, so
 * the next fuse never meets the CPUs of the last. The assignment is copied
 * once before use: the agent may replace it at any moment. Tax owed for the
 * time between a remote split and the owner's next tick/stop is charged
 * then, never lost.
 */
#include "role.bpf.h"
#include "weight.bpf.h"

/*
 * Task storage: the agent writes a task's value through a pidfd (the key of
 * a task storage map from user space), so it reaches that task and no other,
 * and the kernel frees it when the task goes. A pid that is reused can never
 * find an object meant for the task that had it before, even when the agent
 * missed the exit; and there is no table of pids to fill up.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);			/* pidfd, from user space */
	__type(value, struct chameleon_assignment);
} assignments SEC(".maps");

/*
 * Copy @p's assignment into @a under its lock (intf.h): the agent writes it
 * in place under the same lock. False if it has no object.
 */
static bool assignment_copy(struct task_struct *p, struct chameleon_assignment *a)
{
	struct chameleon_assignment *v = bpf_task_storage_get(&assignments, p, 0, 0);
	u32 i;

	if (!v)
		return false;
	bpf_spin_lock(&v->lock);
	a->pid = v->pid;
	a->nr_cpus = v->nr_cpus;
	a->generation = v->generation;
	a->tax = v->tax;
	a->flags = v->flags;
	for (i = 0; i < CHAMELEON_OBJ_MAX_CPUS; i++)
		a->cpus[i] = v->cpus[i];
	bpf_spin_unlock(&v->lock);
	return a->pid == p->pid && a->nr_cpus >= 2 && a->nr_cpus <= CHAMELEON_OBJ_MAX_CPUS;
}

/* Does the agent give task @p an object now? */
bool has_assignment(struct task_struct *p)
{
	struct chameleon_assignment *v = bpf_task_storage_get(&assignments, p, 0, 0);

	return v && READ_ONCE(v->nr_cpus) >= 2;
}


/*
 * The companion module (kmod_proxy/), if it was loaded before the scheduler:
 * a lent CPU gets a processor proxy (its device IRQs move to the
 * representative, what still interrupts it is counted) and, in emulation
 * mode, the representative of an object runs at a higher duty cycle. The
 * kfuncs only record intent under our runqueue lock; the module defers the
 * rest. __weak: without the module they resolve to nothing, and
 * bpf_ksym_exists() lets the verifier drop the calls, so the policy loads
 * and fuses the same (as with a module of another ABI: libbpf takes a weak
 * kfunc whose prototype differs for an absent one). The last argument of
 * lend, reclaim and speed is proxy_gen, the owner generation of the agent's
 * CLAIM, made before we were loaded: the module refuses the calls (-ENODEV)
 * once that ownership has ended, whoever owns the module then.
 */
extern int chameleon_proxy_lend(s32 cpu, s32 rep, u64 gen) __ksym __weak;
extern int chameleon_proxy_reclaim(s32 cpu, u64 gen) __ksym __weak;
extern int chameleon_proxy_speed(s32 cpu, u32 level, u64 gen) __ksym __weak;

/* Set by the agent before the load; .rodata: frozen once loaded. */
const volatile u64 proxy_gen;
extern u32 chameleon_proxy_abi(void) __ksym __weak;

/* The module's kfuncs are there and speak our ABI (set by chameleon_init). */
bool proxy_on;

void proxy_check_abi(void)
{
	if (bpf_ksym_exists(chameleon_proxy_abi) && bpf_ksym_exists(chameleon_proxy_lend) &&
	    bpf_ksym_exists(chameleon_proxy_reclaim) && bpf_ksym_exists(chameleon_proxy_speed))
		proxy_on = chameleon_proxy_abi() == CHAMELEON_PROXY_ABI;
}

static void proxy_lend(s32 cpu, s32 rep)
{
	if (proxy_on && bpf_ksym_exists(chameleon_proxy_lend))
		chameleon_proxy_lend(cpu, rep, proxy_gen);
}

int proxy_reclaim(s32 cpu)
{
	if (proxy_on && bpf_ksym_exists(chameleon_proxy_reclaim))
		chameleon_proxy_reclaim(cpu, proxy_gen);
	return 0;
}

/* Emulated speed of @rep: 0 native, 1 for an object of 2-3 CPUs, 2 for 4+. */
static void proxy_speed(s32 rep, u32 nr_cpus)
{
	u32 level = nr_cpus >= 4 ? 2 : nr_cpus >= 2 ? 1 : 0;

	if (proxy_on && bpf_ksym_exists(chameleon_proxy_speed))
		chameleon_proxy_speed(rep, level, proxy_gen);
}

/* Copy @p's assignment, read once: the agent may change it at any time. */
bool assignment_of(struct task_struct *p, struct chameleon_assignment *a)
{
	return assignment_copy(p, a);
}

/*
 * The representative @p belongs on, if it has an object and the placement
 * rule lets it go there now (online, in its affinity, not held by a higher
 * class, not draining, not parked or lent to another object) and it can
 * move there: not an owner away from it that cannot migrate now (preempted
 * inside migrate_disable(), its nr_cpus_allowed unchanged), which the kernel
 * would end us for putting into another CPU's local queue and no other CPU
 * could run from a queue. Else -1, and it is placed as a task without an
 * object, where it is; its next enqueue sends it to its representative.
 */
s32 task_rep(struct task_struct *p, struct task_ctx *tctx)
{
	struct chameleon_assignment a;
	s32 rep;

	if (!tctx->tagged || !assignment_copy(p, &a))
		return -1;
	rep = a.cpus[0];
	if ((rep != task_cpu_of(p) && !task_movable(p)) || !may_run_on(p, rep, PLACE_NEW))
		return -1;
	return rep;
}

/*
 * What a virtual thread competes with on @c: the running task's vtime charged
 * up to now; if nothing runs, the first waiter's (it is about to run, e.g. a
 * CPU just given back and not yet through dispatch). Returns false if the CPU
 * is truly idle: nothing runs and nothing waits.
 */
static bool cpu_competitor_vtime(s32 c, u64 now, u64 *vtime)
{
	struct cpu_run *cr = cpu_run(c);
	struct task_struct *w;

	if (cr->running) {
		*vtime = cr->curr_vtime +
			 chameleon_vtime_charge(now - cr->curr_started, cr->curr_weight);
		return true;
	}
	if (!scx_bpf_dsq_nr_queued(c))
		return false;
	w = __COMPAT_scx_bpf_dsq_peek(c);
	if (!w)
		return false;
	*vtime = w->scx.dsq_vtime;
	return true;
}

/*
 * Charge tax for fused time up to now (or up to the split, if the object was
 * split from another CPU since). Runs on the representative with @p current.
 * Only lent CPUs that had someone waiting are charged: an idle neighbour
 * lends for free, so borrowing it leaves no debt to be punished for later.
 */
int charge_tax(struct task_struct *p __arg_trusted, struct task_ctx *tctx, s32 cpu, u64 now)
{
	struct rep_ctx *rc = rep_ctx(cpu);
	u64 end, delta, charge;
	u32 i;
	s32 c;

	if (!rc || !tctx || rc->owner != p->pid)
		return 0;
	end = cpu_fused(cpu) ? now : rc->split_at;
	if (!chameleon_vtime_before(rc->charged_until, end))
		return 0;
	delta = end - rc->charged_until;
	rc->charged_until = end;
	charge = chameleon_tax_charge(delta, run_weight(p, tctx), rc->tax);
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		if (scx_bpf_dsq_nr_queued(c))
			tctx->vruntimes[i] += charge;
	}
	tctx->fused_ns += delta;
	return 0;
}

/*
 * Give the borrowed CPUs back. Any CPU may call it; the REP -> SPLITTING CAS
 * makes exactly one caller do the work, and the representative may fuse
 * again only once it is done (NATIVE is published last). Each released CPU
 * is kicked so that it serves its queue. Returns whether it split.
 */
int split(s32 rep, u32 reason)
{
	struct rep_ctx *rc = rep_ctx(rep);
	struct chameleon_cpu_stats *st = stats_here();
	u64 t0 = bpf_ktime_get_ns();
	u32 i, pending, nr, seq;
	s32 c;

	if (!rc || !role_cas(rep, CHAMELEON_RE_SPLIT_BEGIN, 0))
		return 0;
	seq = begin_decision(rep, t0);
	nr = rc->nr_cpus;
	rc->reason = reason;
	rc->split_at = t0;
	/*
	 * Taken now: by the time the report goes out (when the lent CPUs are
	 * back) the next fuse may have moved fused_at past split_at.
	 */
	rc->split_fused_ns = t0 - rc->fused_at;
	rc->decision_at = t0;
	rc->pending_kind = CHAMELEON_EV_SPLIT;
	rc->decision_acc = 0;
	for_each_lent(i, c, rc->cpus, nr) {
		/*
		 * Cleared while the CPU is still ours: once given back, the
		 * next borrower records its own waiters' start.
		 */
		WRITE_ONCE(cpu_lend(c)->lend_wait_since, 0);
		WRITE_ONCE(cpu_lend(c)->lend_pinned, 0);
		if (!role_cas(c, CHAMELEON_RE_GIVE_BACK, rep))
			continue;
		if (!(rc->flags & CHAMELEON_ASSIGN_KWORK))
			proxy_reclaim(c);
		if (cpu_online(c))
			rc->decision_acc |= 1U << i;
	}
	pending = rc->decision_acc;
	if (rc->flags & CHAMELEON_ASSIGN_KWORK)
		proxy_reclaim(rep);
	proxy_speed(rep, 0);
	/* Kicks only queue IPIs; the cost is the decision itself. */
	rc->decision_cost = bpf_ktime_get_ns() - t0;
	publish_pending(rep, pending, SCX_KICK_IDLE, seq);
	if (st) {
		st->nr_split++;
		if (reason == CHAMELEON_SPLIT_BOUND)
			st->nr_bound_splits++;
	}
	if (!pending)
		emit_object(rep, rc->decision_cost, 0, seq);
	role_cas(rep, CHAMELEON_RE_SPLIT_DONE, 0);
	return 1;
}

/* Split the object @tctx's task last fused on, if it still owns it. */
void split_owned(struct task_ctx *tctx, s32 pid, u32 reason)
{
	struct rep_ctx *rc;
	s32 rep = tctx->fused_rep - 1;

	rc = rep_ctx(rep);
	if (!rc)
		return;
	tctx->fused_rep = 0;
	if (rc->owner == pid)
		split(rep, reason);
}

/*
 * Positions of object @a (bit i: cpus[i]) that @tctx's virtual threads may
 * take at @now; a CPU already lent to @rep counts as taken. Only a NATIVE,
 * online CPU not owed to its waiters may be borrowed: its role is checked
 * again by the CAS that borrows it.
 */
u32 borrowable(struct task_ctx *tctx, struct chameleon_assignment *a, s32 rep, u64 now)
{
	u32 i, ok = 0, nr;
	s32 c;

	if (!tctx || !a)
		return 0;
	nr = a->nr_cpus;
	for_each_lent(i, c, a->cpus, nr) {
		u32 w = role_word(c);
		u64 other = 0;
		bool busy;

		if (w == chameleon_role_lent(rep)) {
			ok |= 1U << i;
			continue;
		}
		if (w != CHAMELEON_ROLE_NATIVE ||
		    chameleon_vtime_before(now, cpu_lend(c)->lend_block_until))
			continue;
		busy = cpu_competitor_vtime(c, now, &other);
		if (chameleon_may_borrow(cpu_online(c), !busy, tctx->vruntimes[i], other,
					 a->flags & CHAMELEON_ASSIGN_HOLD))
			ok |= 1U << i;
	}
	return ok;
}

/* Give back the CPUs borrowed in positions [1, @upto) after a lost race. */
static void unborrow(struct chameleon_assignment *a, s32 rep, u32 upto)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, a->cpus, upto)
		role_cas(c, CHAMELEON_RE_GIVE_BACK, rep);
}

/*
 * The owner of a partial object (§4.3.1: the largest prefix that qualified)
 * runs on @cpu again: if more of its CPUs qualify now, split so that the
 * fuse that follows takes them. Not before the minimum granularity, so a
 * CPU that frees and fills again does not make the object flap.
 */
static void grow_partial(struct task_ctx *tctx, struct chameleon_assignment *a,
			 s32 cpu, s32 pid, u64 now)
{
	struct rep_ctx *rc = rep_ctx(cpu);

	if (!rc || !cpu_fused(cpu) || rc->owner != pid ||
	    rc->generation != a->generation || rc->nr_cpus >= a->nr_cpus ||
	    a->nr_cpus > CHAMELEON_OBJ_MAX_CPUS || chameleon_time_since(now, rc->fused_at) < min_gran_ns)
		return;
	if (chameleon_fuse_size(a->nr_cpus, borrowable(tctx, a, cpu, now)) > rc->nr_cpus)
		split(cpu, CHAMELEON_SPLIT_GROW);
}

/*
 * @p starts running on @cpu, its representative: fuse as much of its object
 * @a (a private copy) as its virtual threads allow (§4.3.1).
 */
int try_fuse(struct task_struct *p __arg_trusted, struct task_ctx *tctx,
	     struct chameleon_assignment *a, s32 cpu, u64 t0)
{
	struct rep_ctx *rc = rep_ctx(cpu);
	struct chameleon_cpu_stats *st = stats_here();
	u32 i, ok, size, pending = 0, nr, seq;
	s32 c;

	if (!rc || !tctx || !a)
		return 0;
	nr = a->nr_cpus;
	if (nr > CHAMELEON_OBJ_MAX_CPUS || !role_cas(cpu, CHAMELEON_RE_FUSE_BEGIN, 0))
		return 0;

	ok = borrowable(tctx, a, cpu, t0);
	size = chameleon_fuse_size(nr, ok);
	if (size < 2) {
		if (st)
			st->nr_fuse_denied++;
		role_cas(cpu, CHAMELEON_RE_FUSE_ABORT, 0);
		return 0;
	}

	bpf_for(i, 1, CHAMELEON_OBJ_MAX_CPUS) {
		if (i >= size)
			break;
		c = a->cpus[obj_idx(i)];
		if (role_word(c) == chameleon_role_lent(cpu))
			continue;
		if (!role_cas(c, CHAMELEON_RE_LEND, cpu)) {
			unborrow(a, cpu, i);
			role_cas(cpu, CHAMELEON_RE_FUSE_ABORT, 0);
			return 0;
		}
	}

	seq = begin_decision(cpu, t0);
	rc->nr_cpus = size;
	rc->nr_requested = nr;
	rc->generation = a->generation;
	rc->tax = a->tax;
	rc->flags = a->flags;
	rc->owner = p->pid;
	rc->owner_cgid = task_cgroup_id(p);
	rc->fused_at = t0;
	rc->charged_until = t0;
	rc->owner_off_at = 0;
	rc->decision_at = t0;
	__builtin_memcpy(rc->cpus, a->cpus, sizeof(rc->cpus));
	bpf_for(i, size, CHAMELEON_OBJ_MAX_CPUS)
		rc->cpus[obj_idx(i)] = -1;
	tctx->fused_rep = cpu + 1;

	/*
	 * Kick every borrowed CPU, idle or not: one that looked idle may have
	 * picked a task since we looked. Only the busy ones are waited for, and
	 * their tasks (and any already queued) start the lending bound.
	 */
	rc->decision_acc = 0;
	for_each_lent(i, c, a->cpus, size) {
		bool busy = cpu_run(c)->running;

		WRITE_ONCE(cpu_lend(c)->lend_wait_since,
			   busy || scx_bpf_dsq_nr_queued(c) ? t0 : 0);
		if (busy)
			rc->decision_acc |= 1U << i;
	}
	pending = rc->decision_acc;
	rc->pending_kind = size < nr ? CHAMELEON_EV_PARTIAL_FUSE : CHAMELEON_EV_FUSE;
	rc->decision_cost = bpf_ktime_get_ns() - t0;
	role_cas(cpu, CHAMELEON_RE_FUSE_DONE, 0);
	publish_pending(cpu, pending, SCX_KICK_PREEMPT, seq);
	if (a->flags & CHAMELEON_ASSIGN_KWORK) {
		/* The sibling takes the IRQs: the representative is what is "lent". */
		proxy_lend(cpu, a->cpus[1]);
	} else {
		for_each_lent(i, c, a->cpus, size)
			proxy_lend(c, cpu);
	}
	proxy_speed(cpu, size);
	if (st) {
		if (size < nr)
			st->nr_partial++;
		else
			st->nr_fuse++;
	}
	if (!pending)
		emit_object(cpu, rc->decision_cost, 0, seq);
	return 1;
}

/*
 * Place the virtual threads of a task that becomes runnable, or whose object
 * changed, at the clocks of the CPUs they would borrow.
 */
int place_vthreads(struct task_ctx *tctx, struct chameleon_assignment *a)
{
	u32 i;
	s32 c;

	if (!tctx || !a)
		return 0;
	for_each_lent(i, c, a->cpus, a->nr_cpus) {
		u64 *vr = &tctx->vruntimes[i];

		if (tctx->assign_gen != a->generation)
			*vr = cpu_run(c)->vclock;
		else
			*vr = chameleon_vthread_place(*vr, cpu_run(c)->vclock);
	}
	tctx->assign_gen = a->generation;
	return 0;
}

/*
 * ops.running on @cpu, for objects: @p starts there. Only kthreads a lent
 * CPU serves run on one (lent_cpu_runs()); anything else got there past the
 * fuse and is sent away. An object lives on its representative only, and
 * is its owner's: another task that takes it (not a kthread, whose turn is
 * short: the guard splits if the owner stays away) ends it. The owner of an
 * object tries to fuse (§4.3.1); away from its representative it runs short
 * slices (CHAMELEON_SHORT_SLICE_NS).
 */
int object_running(struct task_struct *p __arg_trusted, s32 cpu)
{
	struct task_ctx *tctx = task_ctx(p);
	struct chameleon_assignment a;
	struct rep_ctx *rc = rep_ctx(cpu);
	u64 now;

	if (!tctx || !rc)
		return 0;
	now = bpf_ktime_get_ns();
	if (cpu_lent(cpu) && !lent_cpu_runs(cpu, p)) {
		/*
		 * A task inside migrate_disable() is put back on this CPU's
		 * local queue by the kernel without asking us: a kick would
		 * preempt it again and again. It keeps a short slice instead.
		 */
		if (task_migration_disabled(p))
			scx_bpf_task_set_slice(p, p->scx.slice < min_gran_ns ? p->scx.slice : min_gran_ns);
		else
			kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
	if (tctx->fused_rep && tctx->fused_rep - 1 != cpu)
		split_owned(tctx, p->pid, CHAMELEON_SPLIT_MIGRATE);
	if (cpu_fused(cpu) && rc->owner != p->pid && !(p->flags & PF_KTHREAD))
		split(cpu, CHAMELEON_SPLIT_PREEMPT);
	/* Tax and fused time accrue only while the owner runs (stopping charged the rest). */
	if (rc->owner == p->pid) {
		rc->charged_until = now;
		rc->owner_off_at = 0;
	}
	if (!tctx->tagged || !assignment_of(p, &a))
		return 0;
	if (a.cpus[0] != cpu) {
		if (p->scx.slice > CHAMELEON_SHORT_SLICE_NS)
			scx_bpf_task_set_slice(p, CHAMELEON_SHORT_SLICE_NS);
		return 0;
	}
	if (a.nr_cpus >= 2) {
		if (tctx->assign_gen != a.generation)
			place_vthreads(tctx, &a);
		grow_partial(tctx, &a, cpu, p->pid, now);
		try_fuse(p, tctx, &a, cpu, now);
		if (cpu_fused(cpu))
			perf_set(cpu, SCX_CPUPERF_ONE);
	}
	return 0;
}

/*
 * ops.tick on @cpu whose object @p owns: charge tax; split if the node
 * manager took the object away or changed it, a waiter on a lent CPU reached
 * the lending bound, or one is due by its vtime (§4.3.2).
 */
int object_tick(struct task_struct *p __arg_trusted, s32 cpu)
{
	struct chameleon_assignment a;
	struct task_ctx *tctx = task_ctx(p);
	struct rep_ctx *rc = rep_ctx(cpu);
	s32 pid = p->pid;
	u64 now;

	if (!tctx || !rc || rc->owner != pid)
		return 0;
	now = bpf_ktime_get_ns();
	charge_tax(p, tctx, cpu, now);
	if (!cpu_fused(cpu))
		return 0;
	if (!assignment_copy(p, &a) || a.generation != rc->generation)
		return split(cpu, CHAMELEON_SPLIT_RETAG);
	/*
	 * A retag may change the tax or the class alone: from now on. Not
	 * into or out of kwork, whose fuse gave the module the other CPU: the
	 * split must hand back what the fuse lent.
	 */
	if ((rc->flags ^ a.flags) & CHAMELEON_ASSIGN_KWORK)
		return split(cpu, CHAMELEON_SPLIT_RETAG);
	/* Written if changed: other CPUs read this line at every placement. */
	if (rc->tax != a.tax)
		rc->tax = a.tax;
	if (rc->flags != a.flags)
		rc->flags = a.flags;
	if (lend_due(cpu, now, lend_wait_ns + 2 * CHAMELEON_GUARD_NS, &rc->tick_acc))
		return split(cpu, CHAMELEON_SPLIT_BOUND);
	if (!(rc->flags & CHAMELEON_ASSIGN_HOLD) && waiter_due(cpu, tctx, now))
		return split(cpu, CHAMELEON_SPLIT_TICK);
	return 0;
}

/*
 * A task other than a pcpu kthread was queued on lent @cpu: its wait starts
 * the lending bound, and the object splits now if its vtime is due (§4.3.2,
 * "when a task becomes runnable on a borrowed CPU"). The owner's context is
 * not at hand on this CPU, so its virtual thread is read through the task.
 */
int waiter_on_lent(s32 cpu, struct task_struct *waiter __arg_trusted)
{
	struct cpu_lend *cl;
	struct task_struct *owner;
	struct task_ctx *octx;
	struct rep_ctx *rc;
	s32 rep = lent_to(cpu);
	u64 now = bpf_ktime_get_ns();
	int pos;

	if (!cpu_valid(cpu))
		return 0;
	cl = cpu_lend(cpu);
	if (!cl->lend_wait_since)
		WRITE_ONCE(cl->lend_wait_since, now);
	rc = rep_ctx(rep);
	if (!rc || !cpu_fused(rep))
		return 0;
	pos = obj_pos(rc, cpu);
	if (pos < 0)
		return 0;
	owner = bpf_task_from_pid(rc->owner);
	if (!owner)
		/* Its owner is gone: nothing keeps the CPU lent. */
		return split(rep, CHAMELEON_SPLIT_EXIT);
	octx = rc->flags & CHAMELEON_ASSIGN_HOLD ? NULL :
		task_ctx(owner);
	if (octx && chameleon_must_split(chameleon_time_since(now, rc->fused_at), min_gran_ns, true,
					 waiter->scx.dsq_vtime, octx->vruntimes[obj_idx(pos)]))
		split(rep, CHAMELEON_SPLIT_WAKE);
	bpf_task_release(owner);
	return 0;
}

/*
 * From dispatch on lent @cpu: does its object end now? When an RT task that
 * holds this CPU gives it to the lower classes for a while (rt_hog_yields():
 * the kernel's ext server is active, or the RT queue is throttled): the
 * object cannot have the CPU, and a dispatch that gave nothing would waste
 * the only time a task that can run here only gets (a server given nothing
 * stops, and starts again only when the CPU's sched_ext tasks come and go).
 * Returns whether it split.
 */
bool lent_split_due(s32 cpu)
{
	s32 rep = lent_to(cpu);

	if (!cpu_valid(rep) || !rt_hog_yields(cpu))
		return false;
	return split(rep, CHAMELEON_SPLIT_PREEMPT);
}
