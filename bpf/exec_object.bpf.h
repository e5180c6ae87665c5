/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Execution objects in the BPF policy: fuse, split, taxation (Chameleon §3.3,
 * §4.3.1-§4.3.3). Included once, by main.bpf.c, after the per-CPU state.
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
 * While fused, the task's virtual threads are charged tax. On tick, and when
 * a task becomes runnable on a borrowed CPU, a waiter whose vtime is earlier
 * than the virtual thread's splits the object once it ran its minimum
 * granularity. Blocking, being preempted on the representative, exiting,
 * losing the object or a CPU going offline split it too.
 *
 * Concurrency: only the representative CPU fuses (in running()). A split may
 * be decided on any CPU; the FUSED -> NATIVE transition is a compare-and-swap
 * on the representative's state, so exactly one CPU performs it. Borrowing a
 * CPU is a compare-and-swap on its borrowed_by, so two objects never share
 * one. Tax owed for the time between a remote split and the owner's next
 * tick/stop is charged then (charged_until/split_at), never lost.
 */

/* Set by the agent before load. */
const volatile u64 min_gran_ns = 1000ULL * 1000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CHAMELEON_MAX_TAGS);
	__type(key, u64);			/* cgroup id */
	__type(value, struct chameleon_tag);
} tags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CHAMELEON_MAX_ASSIGNED);
	__type(key, s32);			/* pid */
	__type(value, struct chameleon_assignment);
} assignments SEC(".maps");

enum rep_state {
	REP_NATIVE	= 0,
	REP_FUSED	= 1,
};

/* The object a representative CPU is running fused (valid while FUSED). */
struct rep_ctx {
	u32	state;			/* enum rep_state, changed by CAS */
	u32	nr_cpus;		/* fused CPUs, cpus[0] = this CPU */
	u32	nr_requested;		/* CPUs of the whole object */
	u32	reason;			/* of the last split */
	s32	owner;			/* pid of the fused task */
	u32	pending;		/* borrowed positions not yet idle / back */
	u32	pending_kind;		/* event to emit when pending drains */
	u32	generation;		/* of the assignment it was fused from */
	u64	owner_cgid;
	u64	decision_at;		/* of the fuse or split in flight */
	u64	decision_cost;
	u32	local_max;		/* slowest borrowed CPU's own work, ns */
	u32	pad;
	u64	fused_at;
	u64	split_at;
	u64	charged_until;		/* tax charged up to here */
	s32	cpus[CHAMELEON_OBJ_MAX_CPUS];
};

struct rep_ctx reps[CHAMELEON_MAX_CPUS];

/* Per CPU: representative + 1 of the object borrowing it, 0 if none. */
s32 borrowed_by[CHAMELEON_MAX_CPUS];
/* Per CPU: representative + 1 whose fuse/split waits for this CPU, 0 if none. */
s32 pending_for[CHAMELEON_MAX_CPUS];
/*
 * Per CPU: when its dispatch for the pending fuse/split began, while it waits
 * for the switch that completes it (0: not dispatched yet).
 */
u64 local_from[CHAMELEON_MAX_CPUS];

/*
 * Walk the lent positions of an object: i = 1 .. nr - 1 with c = cpus[i],
 * skipping invalid CPU ids. bpf_for keeps the loop bounded for the verifier.
 */
#define for_each_lent(i, c, cpus, nr)					\
	bpf_for(i, 1, CHAMELEON_OBJ_MAX_CPUS)				\
		if (i < (nr) && cpu_valid((c) = (cpus)[i]))

static struct rep_ctx *rep_ctx(s32 cpu)
{
	return cpu_valid(cpu) ? &reps[CPU_IDX(cpu)] : NULL;
}

static bool cpu_borrowed(s32 cpu)
{
	return cpu_valid(cpu) && borrowed_by[CPU_IDX(cpu)] != 0;
}

static struct chameleon_assignment *task_assignment(struct task_struct *p,
						    struct task_ctx *tctx)
{
	s32 pid = p->pid;

	if (!tctx->tagged)
		return NULL;
	return bpf_map_lookup_elem(&assignments, &pid);
}

/* Position of @cpu in @rc's object, or -1. */
static int obj_pos(struct rep_ctx *rc, s32 cpu)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		if (c == cpu)
			return i;
	}
	return -1;
}

static void emit_object(u32 kind, s32 rep, struct rep_ctx *rc, u64 latency,
			u32 flags)
{
	struct chameleon_event *ev = event_reserve(kind, rep);
	u32 i;

	if (!ev)
		return;
	ev->pid = rc->owner;
	ev->cgroup_id = rc->owner_cgid;
	ev->ts_ns = rc->decision_at;
	ev->latency_ns = latency;
	ev->cost_ns = rc->decision_cost;
	ev->local_ns = rc->local_max;
	ev->level = rc->nr_requested;
	ev->nr_cpus = rc->nr_cpus;
	ev->flags = flags;
	if (kind == CHAMELEON_EV_SPLIT) {
		ev->reason = rc->reason;
		ev->run_ns = rc->split_at - rc->fused_at;
	}
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS)
		ev->cpus[i] = i < rc->nr_cpus ? rc->cpus[i] : -1;
	bpf_ringbuf_submit(ev, 0);
}

/* Keep the largest local time of an object's CPUs (they report concurrently). */
static void note_local(struct rep_ctx *rc, u64 ns)
{
	u32 v = ns > 0xffffffffULL ? 0xffffffffU : (u32)ns, cur, i;

	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		cur = rc->local_max;
		if (cur >= v || __sync_bool_compare_and_swap(&rc->local_max, cur, v))
			break;
	}
}

/*
 * A CPU that a fuse or split waited for is done, after @local ns of its own
 * work: clear its bit, and if it was the last one, report the decision with
 * its end-to-end latency and the slowest CPU's local time.
 */
static void pending_done(s32 cpu, u64 local)
{
	struct rep_ctx *rc;
	s32 rep = pending_for[CPU_IDX(cpu)] - 1;
	int pos;
	u32 bit, old;

	pending_for[CPU_IDX(cpu)] = 0;
	local_from[CPU_IDX(cpu)] = 0;
	rc = rep_ctx(rep);
	if (!rc)
		return;
	pos = obj_pos(rc, cpu);
	if (pos < 0)
		return;
	bit = 1U << pos;
	if (!(rc->pending & bit))
		return;
	note_local(rc, local);
	old = __sync_fetch_and_and(&rc->pending, ~bit);
	if ((old & bit) && !(old & ~bit))
		emit_object(rc->pending_kind, rep, rc,
			    bpf_ktime_get_ns() - rc->decision_at, 0);
}

/*
 * @cpu, which a fuse or split waits for, ran its dispatch from @t0 (the first
 * thing it does once the kick arrives). Its own part of the work ends with
 * the switch that follows: a lent CPU is done when the task it was running
 * is put (stopping(), then it idles); a CPU given back when the next task
 * runs (running()). If there is nothing to switch (the task already left, or
 * nothing was dispatched), it is done now. Timed locally: what bare metal
 * would see on that CPU, without the emulator's IPI delay.
 */
static void pending_dispatched(s32 cpu, u64 t0, bool dispatched)
{
	struct rep_ctx *rc = rep_ctx(pending_for[CPU_IDX(cpu)] - 1);
	bool lent = rc && rc->pending_kind != CHAMELEON_EV_SPLIT;

	if (lent ? cpu_ctxs[CPU_IDX(cpu)].running : dispatched) {
		local_from[CPU_IDX(cpu)] = t0;
		return;
	}
	pending_done(cpu, bpf_ktime_get_ns() - t0);
}

/* A task stops (@stopping) or starts on @cpu: the switch a pending CPU awaited? */
static void pending_switched(s32 cpu, bool stopping)
{
	struct rep_ctx *rc;
	u64 t0 = local_from[CPU_IDX(cpu)];

	if (!t0 || !pending_for[CPU_IDX(cpu)])
		return;
	rc = rep_ctx(pending_for[CPU_IDX(cpu)] - 1);
	if (rc && (rc->pending_kind != CHAMELEON_EV_SPLIT) == stopping)
		pending_done(cpu, bpf_ktime_get_ns() - t0);
}

/*
 * A new decision on @rc while the previous one still waits for some CPUs:
 * report the previous one now, its latency marked as a lower bound.
 */
static void supersede(s32 rep, struct rep_ctx *rc, u64 now)
{
	if (__sync_fetch_and_and(&rc->pending, 0))
		emit_object(rc->pending_kind, rep, rc, now - rc->decision_at,
			    CHAMELEON_EVF_SUPERSEDED);
}

/*
 * What a virtual thread competes with on @c: the running task's vtime charged
 * up to now; if nothing runs, the first waiter's (it is about to run, e.g. a
 * CPU just given back and not yet through dispatch). Returns false if the CPU
 * is truly idle: nothing runs and nothing waits.
 */
static bool cpu_competitor_vtime(s32 c, struct cpu_ctx *cc, u64 now, u64 *vtime)
{
	struct task_struct *w;

	if (cc->running) {
		*vtime = cc->curr_vtime +
			 chameleon_vtime_charge(now - cc->curr_started, cc->curr_weight);
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
 */
static void charge_tax(struct task_struct *p, struct task_ctx *tctx,
		       struct rep_ctx *rc, u64 now)
{
	u64 end = rc->state == REP_FUSED ? now : rc->split_at;
	u64 delta, charge;
	u32 i;
	s32 c;

	if (rc->owner != p->pid || !chameleon_vtime_before(rc->charged_until, end))
		return;
	delta = end - rc->charged_until;
	rc->charged_until = end;
	charge = chameleon_tax_charge(delta, p->scx.weight, tctx->tax);
	for_each_lent(i, c, rc->cpus, rc->nr_cpus)
		tctx->vruntimes[i] += charge;
	tctx->fused_ns += delta;
}

/*
 * Give the borrowed CPUs back. Any CPU may call it; the CAS makes exactly one
 * caller do the work. Each released CPU is kicked so that it serves its queue.
 */
static void split(s32 rep, u32 reason)
{
	struct rep_ctx *rc = rep_ctx(rep);
	struct chameleon_cpu_stats *st = stats_here();
	u64 t0 = bpf_ktime_get_ns();
	u32 i, pending = 0;
	s32 c;

	if (!rc || !__sync_bool_compare_and_swap(&rc->state, REP_FUSED, REP_NATIVE))
		return;
	supersede(rep, rc, t0);
	rc->reason = reason;
	rc->split_at = t0;
	rc->decision_at = t0;
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		borrowed_by[CPU_IDX(c)] = 0;
		if (cpu_ctxs[CPU_IDX(c)].online) {
			pending |= 1U << i;
			local_from[CPU_IDX(c)] = 0;
			pending_for[CPU_IDX(c)] = rep + 1;
		}
	}
	rc->pending_kind = CHAMELEON_EV_SPLIT;
	rc->local_max = 0;
	/* Kicks only queue IPIs; the cost is the decision itself. */
	rc->decision_cost = bpf_ktime_get_ns() - t0;
	rc->pending = pending;
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		if (pending & (1U << i))
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
	}
	if (st)
		st->nr_split++;
	if (!pending)
		emit_object(CHAMELEON_EV_SPLIT, rep, rc, rc->decision_cost, 0);
}

/* Put back CPUs borrowed in positions [1, upto) after a lost race. */
static void unborrow(struct chameleon_assignment *a, u32 upto)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, a->cpus, upto)
		borrowed_by[CPU_IDX(c)] = 0;
}

/*
 * @p starts running on @cpu, its representative: fuse as much of its object
 * as its virtual threads allow (§4.3.1).
 */
static void try_fuse(struct task_struct *p, struct task_ctx *tctx,
		     struct chameleon_assignment *a, s32 cpu)
{
	struct rep_ctx *rc = rep_ctx(cpu);
	struct chameleon_cpu_stats *st = stats_here();
	u64 t0 = bpf_ktime_get_ns();
	u32 i, ok = 0, size, pending = 0, nr = a->nr_cpus;
	s32 c;

	if (!rc || rc->state != REP_NATIVE || nr > CHAMELEON_OBJ_MAX_CPUS)
		return;

	for_each_lent(i, c, a->cpus, nr) {
		struct cpu_ctx *cc = &cpu_ctxs[CPU_IDX(c)];
		u64 other = 0;
		bool busy;

		if (borrowed_by[CPU_IDX(c)])
			continue;
		busy = cpu_competitor_vtime(c, cc, t0, &other);
		if (chameleon_may_borrow(cc->online, !busy, tctx->vruntimes[i], other))
			ok |= 1U << i;
	}
	size = chameleon_fuse_size(nr, ok);
	if (size < 2) {
		if (st)
			st->nr_fuse_denied++;
		return;
	}

	bpf_for(i, 1, CHAMELEON_OBJ_MAX_CPUS) {
		if (i >= size)
			break;
		c = a->cpus[i];
		if (!cpu_valid(c) ||
		    !__sync_bool_compare_and_swap(&borrowed_by[CPU_IDX(c)], 0, cpu + 1)) {
			unborrow(a, i);
			return;
		}
	}

	supersede(cpu, rc, t0);
	rc->nr_cpus = size;
	rc->nr_requested = nr;
	rc->generation = a->generation;
	rc->owner = p->pid;
	rc->owner_cgid = task_cgroup_id(p);
	rc->fused_at = t0;
	rc->charged_until = t0;
	rc->decision_at = t0;
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS)
		rc->cpus[i] = i < size ? a->cpus[i] : -1;

	/*
	 * Kick every borrowed CPU, idle or not: one that looked idle may have
	 * picked a task since we looked. Only the busy ones are waited for.
	 */
	for_each_lent(i, c, a->cpus, size) {
		if (cpu_ctxs[CPU_IDX(c)].running) {
			pending |= 1U << i;
			local_from[CPU_IDX(c)] = 0;
			pending_for[CPU_IDX(c)] = cpu + 1;
		}
	}
	rc->pending_kind = size < nr ? CHAMELEON_EV_PARTIAL_FUSE : CHAMELEON_EV_FUSE;
	rc->local_max = 0;
	rc->decision_cost = bpf_ktime_get_ns() - t0;
	rc->pending = pending;
	rc->state = REP_FUSED;
	for_each_lent(i, c, a->cpus, size)
		scx_bpf_kick_cpu(c, SCX_KICK_PREEMPT);
	if (st) {
		if (size < nr)
			st->nr_partial++;
		else
			st->nr_fuse++;
	}
	if (!pending)
		emit_object(rc->pending_kind, cpu, rc, rc->decision_cost, 0);
}

/*
 * Must the object of representative @rep split for a waiter on one of its
 * borrowed CPUs? @owner is the fused task's context.
 */
static bool waiter_due(struct rep_ctx *rc, struct task_ctx *owner, u64 now)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct task_struct *w = __COMPAT_scx_bpf_dsq_peek(c);

		if (chameleon_must_split(now - rc->fused_at, min_gran_ns, w != NULL,
					 w ? w->scx.dsq_vtime : 0,
					 owner->vruntimes[i & (CHAMELEON_OBJ_MAX_CPUS - 1)]))
			return true;
	}
	return false;
}

/*
 * A task was queued on borrowed @cpu: split now if it is due (§4.3.2, "when a
 * task becomes runnable on a borrowed CPU"). The owner's context is not at
 * hand on this CPU, so its virtual thread's vtime is read through the task.
 */
static void check_waiter_on_borrowed(s32 cpu, struct task_struct *waiter)
{
	struct task_struct *owner;
	struct task_ctx *octx;
	struct rep_ctx *rc;
	s32 rep = borrowed_by[CPU_IDX(cpu)] - 1;
	int pos;
	u64 now = bpf_ktime_get_ns();

	rc = rep_ctx(rep);
	if (!rc || rc->state != REP_FUSED)
		return;
	pos = obj_pos(rc, cpu);
	if (pos < 0)
		return;
	owner = bpf_task_from_pid(rc->owner);
	if (!owner)
		return;
	octx = bpf_task_storage_get(&task_ctxs, owner, 0, 0);
	if (octx && chameleon_must_split(now - rc->fused_at, min_gran_ns, true,
					 waiter->scx.dsq_vtime,
					 octx->vruntimes[pos & (CHAMELEON_OBJ_MAX_CPUS - 1)]))
		split(rep, CHAMELEON_SPLIT_WAKE);
	bpf_task_release(owner);
}

/*
 * A borrowed CPU dispatches: only per-CPU kthreads bound to it run (work a
 * processor proxy would take over); everything else waits or is stolen.
 */
static bool dispatch_borrowed(s32 cpu)
{
	struct chameleon_cpu_stats *st = stats_here();
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (!is_pcpu_kthread(p))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			if (st)
				st->nr_proxy_served++;
			return true;
		}
		break;
	}
	return false;
}

/*
 * Place the virtual threads of a task that becomes runnable, or whose object
 * changed, at the clocks of the CPUs they would borrow.
 */
static void place_vthreads(struct task_ctx *tctx, struct chameleon_assignment *a)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, a->cpus, a->nr_cpus) {
		if (tctx->assign_gen != a->generation)
			tctx->vruntimes[i] = cpu_ctxs[CPU_IDX(c)].vclock;
		else
			tctx->vruntimes[i] = chameleon_vthread_place(tctx->vruntimes[i],
								     cpu_ctxs[CPU_IDX(c)].vclock);
	}
	tctx->assign_gen = a->generation;
	tctx->tax = a->tax;
}
