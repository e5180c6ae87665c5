/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Execution objects in the BPF policy: fuse, split, taxation (Chameleon §3.3,
 * §4.3.1-§4.3.3) and the bounds that keep them from stranding anyone.
 * Included once, by main.bpf.c, after the per-CPU state.
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
 *   elsewhere (guard.bpf.h), else given the CPU back (split reason "bound"),
 *   which is then not lent again for one slice, so the waiter runs;
 * - an object lives only while its owner runs on its representative: it is
 *   split when the owner blocks, is taken off by a higher class (not by a
 *   kthread bound there, such as the emulation's idle injection:
 *   cpu_release) or by another task (not a kthread: its turn is short),
 *   runs elsewhere, exits or loses its tag;
 * - a guard timer checks both every CHAMELEON_GUARD_NS even if no hook of
 *   the object's CPUs runs (an owner off its representative that long is
 *   split), and frees a CPU whose lender is gone (guard.bpf.h).
 *
 * A fused representative is its owner's: no other task is placed there
 * while another CPU will do (held_from(): the idle search, enqueue, the
 * steal and balance pull skip it), and what is queued there is moved out
 * by the guard. Otherwise the object's owner shares it by vtime with the
 * tasks the objects displaced, and each one's turn ends the object.
 *
 * Concurrency: only the representative CPU fuses (in running()). A split may
 * be decided on any CPU; FUSED -> SPLITTING is a compare-and-swap on the
 * representative's state, so exactly one CPU performs it, and the state
 * becomes NATIVE (allowing the next fuse) only once the borrowed CPUs are
 * released. Borrowing a CPU is a compare-and-swap on its borrowed_by, so two
 * objects never share one. The assignment is copied once before use: the
 * agent may replace it at any moment. Tax owed for the time between a remote
 * split and the owner's next tick/stop is charged then, never lost.
 */

/* Set by the agent before load. */
const volatile u64 min_gran_ns = 1000ULL * 1000;
const volatile u64 lend_wait_ns = 50ULL * 1000 * 1000;

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC	1
#endif

/* Period of the guard timer: well inside the lending bound. */
#define CHAMELEON_GUARD_NS	(10ULL * 1000 * 1000)

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
	REP_SPLITTING	= 2,	/* a split is releasing the CPUs; no fuse yet */
	/*
	 * try_fuse() is borrowing CPUs. Without it the guard timer saw CPUs
	 * borrowed by a NATIVE representative, took them for a dead lender's
	 * and freed them: the object then ran FUSED for seconds without its
	 * CPU (fuse_tax: 4.9 s fused while B ran on CPU 1, no waiter queued
	 * for the bounds to see).
	 */
	REP_FUSING	= 3,
};

/* The object a representative CPU is running fused (valid while FUSED). */
struct rep_ctx {
	u32	state;			/* enum rep_state, changed by CAS */
	u32	nr_cpus;		/* fused CPUs, cpus[0] = this CPU */
	u32	nr_requested;		/* CPUs of the whole object */
	u32	reason;			/* of the last split */
	s32	owner;			/* pid of the fused task */
	u32	seq;			/* of the decision (fuse or split) in flight */
	u32	pending_kind;		/* event to emit when pending drains */
	u32	flags;			/* enum chameleon_assign_flags of the object */
	u64	pending;		/* seq << 32 | positions not yet idle / back */
	u32	generation;		/* of the assignment it was fused from */
	u32	tax;			/* hundredths, refreshed from the assignment */
	u64	owner_cgid;
	u64	decision_at;		/* of the fuse or split in flight */
	u64	decision_cost;
	u64	fused_at;
	u64	split_at;
	u64	split_fused_ns;		/* how long the object the last split ended lived */
	u64	charged_until;		/* tax charged up to here */
	u64	owner_off_at;		/* the owner stopped, runnable (0: it runs) */
	s32	cpus[CHAMELEON_OBJ_MAX_CPUS];
} __attribute__((aligned(CHAMELEON_CACHELINE)));

struct rep_ctx reps[CHAMELEON_MAX_CPUS];

/*
 * An object position, masked where the verifier sees it: bpf_for's bound is
 * compiled as (i - 1) <= 6, and verifiers before 7.0 do not carry that back
 * to i, so cpus[i] and vruntimes[i] were refused as unbounded on 6.16/6.18.
 * barrier_var() keeps clang from dropping the mask as redundant.
 */
static __always_inline u32 obj_idx(u32 i)
{
	barrier_var(i);
	return i & (CHAMELEON_OBJ_MAX_CPUS - 1);
}

/*
 * Walk the lent positions of an object: i = 1 .. nr - 1 with c = cpus[i],
 * skipping invalid CPU ids. bpf_for keeps the loop bounded for the verifier.
 */
#define for_each_lent(i, c, cpus, nr)					\
	bpf_for(i, 1, CHAMELEON_OBJ_MAX_CPUS)				\
		if ((i) = obj_idx(i), (i) < (nr) && cpu_valid((c) = (cpus)[i]))

static struct rep_ctx *rep_ctx(s32 cpu)
{
	return cpu_valid(cpu) ? &reps[CPU_IDX(cpu)] : NULL;
}

static bool cpu_borrowed(s32 cpu)
{
	return cpu_valid(cpu) && cpu_ctx(cpu)->borrowed_by != 0;
}

/*
 * @cpu is the representative of a fused object that @p does not own. Its
 * owner runs there, or is about to, and another task that runs there ends
 * the object (running()): not a CPU to place @p on while another will do.
 * Parallel threads placed on the representatives by the idle search, the
 * steal and the balance pull took them from their owners 73-157 times per
 * Fig. 7 run (bench/report-fig7.md). Not for a kthread: its turn is short
 * and ends nothing, and the representative is the nearest CPU for one a
 * lent CPU does not serve. Sent instead to a CPU outside the objects, an
 * unbound kworker waited there 3.1 s once (proxy_stress: the module's fuzz,
 * that CPU held by idle injection) and the kernel's watchdog work with it.
 */
static bool held_from(s32 cpu, struct task_struct *p)
{
	struct rep_ctx *rc = rep_ctx(cpu);

	return rc && !(p->flags & PF_KTHREAD) && READ_ONCE(rc->state) == REP_FUSED &&
	       rc->owner != p->pid;
}

/*
 * The companion module (kmod_proxy/), if it was loaded before the scheduler:
 * a lent CPU gets a processor proxy (its device IRQs move to the
 * representative, what still interrupts it is counted) and, in emulation
 * mode, the representative of an object runs at a higher duty cycle. The
 * kfuncs only record intent under our runqueue lock; the module defers the
 * rest. __weak: without the module they resolve to nothing, and
 * bpf_ksym_exists() lets the verifier drop the calls, so the policy loads
 * and fuses the same.
 */
extern int chameleon_proxy_lend(s32 cpu, s32 rep) __ksym __weak;
extern int chameleon_proxy_reclaim(s32 cpu) __ksym __weak;
extern int chameleon_proxy_speed(s32 cpu, u32 level) __ksym __weak;
extern u32 chameleon_proxy_abi(void) __ksym __weak;

/* The module's kfuncs are there and speak our ABI (set by chameleon_init). */
bool proxy_on;

static void proxy_check_abi(void)
{
	if (bpf_ksym_exists(chameleon_proxy_abi) && bpf_ksym_exists(chameleon_proxy_lend) &&
	    bpf_ksym_exists(chameleon_proxy_reclaim) && bpf_ksym_exists(chameleon_proxy_speed))
		proxy_on = chameleon_proxy_abi() == CHAMELEON_PROXY_ABI;
}

static void proxy_lend(s32 cpu, s32 rep)
{
	if (proxy_on && bpf_ksym_exists(chameleon_proxy_lend))
		chameleon_proxy_lend(cpu, rep);
}

static void proxy_reclaim(s32 cpu)
{
	if (proxy_on && bpf_ksym_exists(chameleon_proxy_reclaim))
		chameleon_proxy_reclaim(cpu);
}

/* Emulated speed of @rep: 0 native, 1 for an object of 2-3 CPUs, 2 for 4+. */
static void proxy_speed(s32 rep, u32 nr_cpus)
{
	u32 level = nr_cpus >= 4 ? 2 : nr_cpus >= 2 ? 1 : 0;

	if (proxy_on && bpf_ksym_exists(chameleon_proxy_speed))
		chameleon_proxy_speed(rep, level);
}

/*
 * Copy @p's assignment: the agent may replace the map value at any time
 * (a preallocated element is reused), so it is read once, here.
 */
static bool assignment_of(struct task_struct *p, struct chameleon_assignment *a)
{
	struct chameleon_assignment *v;
	s32 pid = p->pid;

	v = bpf_map_lookup_elem(&assignments, &pid);
	if (!v)
		return false;
	__builtin_memcpy(a, v, sizeof(*a));
	return a->nr_cpus <= CHAMELEON_OBJ_MAX_CPUS;
}

/* The representative @p belongs on, if it has an object it may run there; else -1. */
static s32 task_rep(struct task_struct *p, struct task_ctx *tctx)
{
	struct chameleon_assignment *a;
	s32 pid = p->pid, rep;

	if (!tctx->tagged)
		return -1;
	a = bpf_map_lookup_elem(&assignments, &pid);
	if (!a)
		return -1;
	rep = a->cpus[0];
	/* An offline representative's queue is not served. */
	if (!cpu_valid(rep) || !cpu_ctx(rep)->online ||
	    !bpf_cpumask_test_cpu(rep, p->cpus_ptr))
		return -1;
	return rep;
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

/* The slowest of @rc's lent CPUs that finished their part of decision @seq. */
static u32 object_local_max(struct rep_ctx *rc, u32 seq)
{
	u32 i, max = 0;
	s32 c;

	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);

		if (cc->local_seq == seq && cc->local_ns > max)
			max = cc->local_ns;
	}
	return max;
}

/*
 * Report decision @seq of @rc. A decision bumps rc->seq before it writes any
 * field, so if the number is still @seq after the fields were read, they all
 * belong to @seq; if not, the report is marked superseded (mixed, a bound).
 */
static void emit_object(s32 rep, struct rep_ctx *rc, u64 latency, u32 flags,
			u32 seq)
{
	u32 i, kind = rc->pending_kind;
	struct chameleon_event *ev = event_reserve(kind, rep);

	if (!ev)
		return;
	ev->pid = rc->owner;
	ev->cgroup_id = rc->owner_cgid;
	ev->ts_ns = rc->decision_at;
	ev->latency_ns = latency;
	ev->cost_ns = rc->decision_cost;
	ev->local_ns = object_local_max(rc, seq);
	ev->level = rc->nr_requested;
	ev->nr_cpus = rc->nr_cpus;
	if (kind == CHAMELEON_EV_SPLIT) {
		ev->reason = rc->reason;
		ev->run_ns = rc->split_fused_ns;
	}
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS)
		ev->cpus[i] = i < rc->nr_cpus ? rc->cpus[i] : -1;
	if (READ_ONCE(rc->seq) != seq)
		flags |= CHAMELEON_EVF_SUPERSEDED;
	ev->flags = flags;
	/* Nothing the agent acts on: seen at its next loop. */
	event_submit(ev, false);
}

/*
 * Decision numbers tie a waited-for CPU to the one decision it works for: a
 * CPU finishing late for a superseded decision must neither clear a bit of
 * the next one nor lend it its time.
 */
static u64 pending_word(u32 seq, u32 low)
{
	return (u64)seq << 32 | low;
}

static s32 pending_rep(u64 pending_for)
{
	return (s32)(u32)pending_for - 1;
}

/*
 * A CPU that a fuse or split waited for is done, after @local ns of its own
 * work: record its time under the decision's number, clear its bit, and if it
 * was the last one, report the decision with its end-to-end latency and the
 * slowest CPU's local time.
 */
static void pending_done(s32 cpu, u64 local)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);
	u64 want = cc->pending_for, old;
	u32 seq = want >> 32, bit, i;
	s32 rep = pending_rep(want);
	struct rep_ctx *rc;
	int pos;

	cc->pending_for = 0;
	cc->local_from = 0;
	rc = rep_ctx(rep);
	if (!rc)
		return;
	pos = obj_pos(rc, cpu);
	if (pos < 0)
		return;
	bit = 1U << pos;
	cc->local_ns = local > 0xffffffffULL ? 0xffffffffU : (u32)local;
	cc->local_seq = seq;
	/* Each failed attempt means another CPU of the object cleared its bit. */
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		old = rc->pending;
		if ((u32)(old >> 32) != seq || !(old & bit))
			return;
		if (__sync_bool_compare_and_swap(&rc->pending, old, old & ~(u64)bit)) {
			if (!((u32)old & ~bit))
				emit_object(rep, rc, bpf_ktime_get_ns() - rc->decision_at,
					    0, seq);
			return;
		}
	}
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
	struct cpu_ctx *cc = cpu_ctx(cpu);
	struct rep_ctx *rc = rep_ctx(pending_rep(cc->pending_for));
	bool lent = rc && rc->pending_kind != CHAMELEON_EV_SPLIT;
	u64 now;

	/*
	 * A dispatch already under way when the decision was taken (it was
	 * waited for by an earlier, superseded one) works for it from then on.
	 */
	if (rc && chameleon_vtime_before(t0, rc->decision_at))
		t0 = rc->decision_at;
	if (lent ? cc->running : dispatched) {
		cc->local_from = t0;
		return;
	}
	now = bpf_ktime_get_ns();
	pending_done(cpu, now > t0 ? now - t0 : 0);
}

/* A task stops (@stopping) or starts on @cpu: the switch a pending CPU awaited? */
static void pending_switched(s32 cpu, bool stopping)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);
	struct rep_ctx *rc;
	u64 t0 = cc->local_from;

	if (!t0 || !cc->pending_for)
		return;
	rc = rep_ctx(pending_rep(cc->pending_for));
	if (rc && (rc->pending_kind != CHAMELEON_EV_SPLIT) == stopping)
		pending_done(cpu, bpf_ktime_get_ns() - t0);
}

/*
 * Start a new decision on @rc and return its number. Numbered first, so that
 * a late report of the previous one sees it superseded; if the previous one
 * still waits for some CPUs, report it now, its latency a lower bound.
 */
static u32 begin_decision(s32 rep, struct rep_ctx *rc, u64 now)
{
	u32 prev = rc->seq;

	WRITE_ONCE(rc->seq, prev + 1);
	barrier();
	if ((u32)__sync_fetch_and_and(&rc->pending, ~0xffffffffULL))
		emit_object(rep, rc, now - rc->decision_at,
			    CHAMELEON_EVF_SUPERSEDED, prev);
	return prev + 1;
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
 * Only lent CPUs that had someone waiting are charged: an idle neighbour
 * lends for free, so borrowing it leaves no debt to be punished for later.
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
	charge = chameleon_tax_charge(delta, task_weight(p, tctx), rc->tax);
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		if (scx_bpf_dsq_nr_queued(c))
			tctx->vruntimes[i] += charge;
	}
	tctx->fused_ns += delta;
}

/*
 * Decision @seq on @rep waits for @pending (positions in rc->cpus): publish
 * that, then tell those CPUs and kick every lent CPU with @kick_flags. The
 * word is published before any CPU learns it waits, so none can finish
 * before its bit exists.
 */
static void publish_pending(s32 rep, struct rep_ctx *rc, u32 pending,
			    u64 kick_flags, u32 seq)
{
	u32 i;
	s32 c;

	rc->pending = pending_word(seq, pending);
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);

		if (pending & (1U << i)) {
			cc->local_from = 0;
			cc->pending_for = pending_word(seq, rep + 1);
		} else if (kick_flags == SCX_KICK_IDLE) {
			continue;
		}
		scx_bpf_kick_cpu(c, kick_flags);
	}
}

/*
 * Give the borrowed CPUs back. Any CPU may call it; the CAS makes exactly one
 * caller do the work, and the representative may fuse again only once it is
 * done (NATIVE is published last). Each released CPU is kicked so that it
 * serves its queue.
 */
static void split(s32 rep, u32 reason)
{
	struct rep_ctx *rc = rep_ctx(rep);
	struct chameleon_cpu_stats *st = stats_here();
	u64 t0 = bpf_ktime_get_ns();
	u32 i, pending = 0, nr, seq;
	s32 c;

	if (!rc || !__sync_bool_compare_and_swap(&rc->state, REP_FUSED, REP_SPLITTING))
		return;
	seq = begin_decision(rep, rc, t0);
	nr = rc->nr_cpus;
	rc->reason = reason;
	rc->split_at = t0;
	/*
	 * Taken now: by the time the report goes out (when the lent CPUs are
	 * back) the next fuse may have moved fused_at past split_at (a
	 * superseded report read 2^64 - 5 ms).
	 */
	rc->split_fused_ns = t0 - rc->fused_at;
	rc->decision_at = t0;
	rc->pending_kind = CHAMELEON_EV_SPLIT;
	for_each_lent(i, c, rc->cpus, nr) {
		struct cpu_ctx *cc = cpu_ctx(c);

		__sync_bool_compare_and_swap(&cc->borrowed_by, rep + 1, 0);
		cc->lend_wait_since = 0;
		if (!(rc->flags & CHAMELEON_ASSIGN_KWORK))
			proxy_reclaim(c);
		if (cc->online)
			pending |= 1U << i;
	}
	if (rc->flags & CHAMELEON_ASSIGN_KWORK)
		proxy_reclaim(rep);
	proxy_speed(rep, 0);
	/* Kicks only queue IPIs; the cost is the decision itself. */
	rc->decision_cost = bpf_ktime_get_ns() - t0;
	publish_pending(rep, rc, pending, SCX_KICK_IDLE, seq);
	if (st) {
		st->nr_split++;
		if (reason == CHAMELEON_SPLIT_BOUND)
			st->nr_bound_splits++;
	}
	if (!pending)
		emit_object(rep, rc, rc->decision_cost, 0, seq);
	__sync_bool_compare_and_swap(&rc->state, REP_SPLITTING, REP_NATIVE);
}

/* Split the object @tctx's task last fused on, if it still owns it. */
static void split_owned(struct task_ctx *tctx, s32 pid, u32 reason)
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

/* Put back CPUs borrowed in positions [1, upto) after a lost race. */
static void unborrow(struct chameleon_assignment *a, s32 rep, u32 upto)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, a->cpus, upto)
		__sync_bool_compare_and_swap(&cpu_ctx(c)->borrowed_by, rep + 1, 0);
}

/*
 * Positions of object @a (bit i: cpus[i]) that @tctx's virtual threads may
 * take at @now; a CPU already lent to @rep counts as taken.
 */
static __noinline u32 borrowable(struct task_ctx *tctx,
				 struct chameleon_assignment *a, s32 rep, u64 now)
{
	u32 i, ok = 0, nr = a->nr_cpus;
	s32 c;

	for_each_lent(i, c, a->cpus, nr) {
		struct cpu_ctx *cc = cpu_ctx(c);
		u64 other = 0;
		bool busy;

		if (cc->borrowed_by == rep + 1) {
			ok |= 1U << i;
			continue;
		}
		/* Lent elsewhere, parked, a representative itself, or owed to its waiters. */
		if (cc->borrowed_by || cc->parked || reps[CPU_IDX(c)].state != REP_NATIVE ||
		    chameleon_vtime_before(now, cc->lend_block_until))
			continue;
		busy = cpu_competitor_vtime(c, cc, now, &other);
		if (chameleon_may_borrow(cc->online, !busy, tctx->vruntimes[i], other,
					 a->flags & CHAMELEON_ASSIGN_HOLD))
			ok |= 1U << i;
	}
	return ok;
}

/*
 * The owner of a partial object (§4.3.1: the largest prefix that qualified)
 * runs on @cpu again: if more of its CPUs qualify now, split so that the
 * fuse that follows takes them. Not before the minimum granularity, so a
 * CPU that frees and fills again does not make the object flap.
 */
static void grow_partial(struct task_ctx *tctx, struct chameleon_assignment *a,
			 s32 cpu, s32 pid)
{
	struct rep_ctx *rc = rep_ctx(cpu);
	u64 now = bpf_ktime_get_ns();

	if (!rc || rc->state != REP_FUSED || rc->owner != pid ||
	    rc->generation != a->generation || rc->nr_cpus >= a->nr_cpus ||
	    a->nr_cpus > CHAMELEON_OBJ_MAX_CPUS || now - rc->fused_at < min_gran_ns)
		return;
	if (chameleon_fuse_size(a->nr_cpus, borrowable(tctx, a, cpu, now)) > rc->nr_cpus)
		split(cpu, CHAMELEON_SPLIT_GROW);
}

/*
 * @p starts running on @cpu, its representative: fuse as much of its object
 * @a (a private copy) as its virtual threads allow (§4.3.1).
 */
static void try_fuse(struct task_struct *p, struct task_ctx *tctx,
		     struct chameleon_assignment *a, s32 cpu)
{
	struct rep_ctx *rc = rep_ctx(cpu);
	struct chameleon_cpu_stats *st = stats_here();
	u64 t0 = bpf_ktime_get_ns();
	u32 i, ok, size, pending = 0, nr = a->nr_cpus, seq;
	s32 c;

	if (!rc || nr > CHAMELEON_OBJ_MAX_CPUS ||
	    !__sync_bool_compare_and_swap(&rc->state, REP_NATIVE, REP_FUSING))
		return;

	ok = borrowable(tctx, a, cpu, t0);
	size = chameleon_fuse_size(nr, ok);
	if (size < 2) {
		if (st)
			st->nr_fuse_denied++;
		rc->state = REP_NATIVE;
		return;
	}

	bpf_for(i, 1, CHAMELEON_OBJ_MAX_CPUS) {
		if (i >= size)
			break;
		c = a->cpus[i];
		if (!cpu_valid(c) ||
		    !__sync_bool_compare_and_swap(&cpu_ctx(c)->borrowed_by, 0, cpu + 1)) {
			unborrow(a, cpu, i);
			rc->state = REP_NATIVE;
			return;
		}
	}

	seq = begin_decision(cpu, rc, t0);
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
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS)
		rc->cpus[i] = i < size ? a->cpus[i] : -1;
	tctx->fused_rep = cpu + 1;

	/*
	 * Kick every borrowed CPU, idle or not: one that looked idle may have
	 * picked a task since we looked. Only the busy ones are waited for, and
	 * their tasks (and any already queued) start the lending bound.
	 */
	for_each_lent(i, c, a->cpus, size) {
		struct cpu_ctx *cc = cpu_ctx(c);

		cc->lend_wait_since = cc->running || scx_bpf_dsq_nr_queued(c) ? t0 : 0;
		if (cc->running)
			pending |= 1U << i;
	}
	rc->pending_kind = size < nr ? CHAMELEON_EV_PARTIAL_FUSE : CHAMELEON_EV_FUSE;
	rc->decision_cost = bpf_ktime_get_ns() - t0;
	rc->state = REP_FUSED;
	publish_pending(cpu, rc, pending, SCX_KICK_PREEMPT, seq);
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
		emit_object(cpu, rc, rc->decision_cost, 0, seq);
}

/*
 * Has a waiter on one of @rc's lent CPUs waited @bound_ns (the lending
 * bound; the tick's backstop is later, so that the guard timer first moves
 * the waiters that may run elsewhere: guard.bpf.h)? Those CPUs are then not
 * lent again for a slice, so that the waiter runs.
 */
static bool lend_due(s32 rep, struct rep_ctx *rc, u64 now, u64 bound_ns)
{
	bool due = false;
	u32 i;
	s32 c;

	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);

		if (chameleon_lend_due(now, cc->lend_wait_since,
				       scx_bpf_dsq_nr_queued(c) > 0, bound_ns)) {
			cc->lend_block_until = now + slice_ns;
			cc->lend_owed_by = rep + 1;
			due = true;
		}
	}
	return due;
}

/*
 * A task stops on a CPU that a bound split gave back to its waiters: one of
 * them had its turn (the CPU serves only pcpu kthreads while lent, so anyone
 * else is such a waiter). The CPU may be lent again, and the representative,
 * if its owner runs there natively, is kicked so that the owner fuses now
 * rather than at the end of its own slice: with a 4 ms tick and 5 ms slices
 * that came up to 12 ms after the split, for a waiter owed 5 ms.
 */
static void lend_owed_served(struct cpu_ctx *cc, struct task_struct *p)
{
	s32 rep = cc->lend_owed_by - 1;
	struct rep_ctx *rc;

	if (is_pcpu_kthread(p))
		return;
	cc->lend_owed_by = 0;
	cc->lend_block_until = 0;
	rc = rep_ctx(rep);
	if (rc && rc->state == REP_NATIVE && cpu_ctx(rep)->curr_pid == rc->owner)
		scx_bpf_kick_cpu(rep, SCX_KICK_PREEMPT);
}

/*
 * Must the object of representative @rep split for a waiter on one of its
 * borrowed CPUs (§4.3.2)? @owner is the fused task's context.
 */
static bool waiter_due(struct rep_ctx *rc, struct task_ctx *owner, u64 now)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct task_struct *w = __COMPAT_scx_bpf_dsq_peek(c);

		if (chameleon_must_split(now - rc->fused_at, min_gran_ns, w != NULL,
					 w ? w->scx.dsq_vtime : 0,
					 owner->vruntimes[i]))
			return true;
	}
	return false;
}

/*
 * A task other than a pcpu kthread was queued on lent @cpu: its wait starts
 * the lending bound, and the object splits now if its vtime is due (§4.3.2,
 * "when a task becomes runnable on a borrowed CPU"). The owner's context is
 * not at hand on this CPU, so its virtual thread is read through the task.
 */
static void waiter_on_lent(s32 cpu, struct task_struct *waiter)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);
	struct task_struct *owner;
	struct task_ctx *octx;
	struct rep_ctx *rc;
	s32 rep = cc->borrowed_by - 1;
	int pos;
	u64 now = bpf_ktime_get_ns();

	if (!cc->lend_wait_since)
		cc->lend_wait_since = now;
	rc = rep_ctx(rep);
	if (!rc || rc->state != REP_FUSED)
		return;
	pos = obj_pos(rc, cpu);
	if (pos < 0)
		return;
	owner = bpf_task_from_pid(rc->owner);
	if (!owner) {
		/* Its owner is gone: nothing keeps the CPU lent. */
		split(rep, CHAMELEON_SPLIT_EXIT);
		return;
	}
	octx = rc->flags & CHAMELEON_ASSIGN_HOLD ? NULL : bpf_task_storage_get(&task_ctxs, owner, 0, 0);
	if (octx && chameleon_must_split(now - rc->fused_at, min_gran_ns, true,
					 waiter->scx.dsq_vtime,
					 octx->vruntimes[pos & (CHAMELEON_OBJ_MAX_CPUS - 1)]))
		split(rep, CHAMELEON_SPLIT_WAKE);
	bpf_task_release(owner);
}

/*
 * The kernel-work sibling of @cpu's object (SMT class kwork, intf.h) if
 * @cpu is its fused representative, else -1.
 */
static s32 kwork_sibling(s32 cpu)
{
	struct rep_ctx *rc = &reps[CPU_IDX(cpu)];

	if (READ_ONCE(rc->state) != REP_FUSED || !(rc->flags & CHAMELEON_ASSIGN_KWORK) ||
	    rc->nr_cpus < 2)
		return -1;
	return rc->cpus[1];
}

/* Is @cpu lent as an object's kernel-work context? */
static bool kwork_lent(s32 cpu)
{
	s32 rep = READ_ONCE(cpu_ctx(cpu)->borrowed_by) - 1;

	return cpu_valid(rep) && (reps[CPU_IDX(rep)].flags & CHAMELEON_ASSIGN_KWORK);
}

/*
 * Who runs on lent @cpu: per-CPU kthreads bound to it (work a processor
 * proxy would take over), and any kthread on a kernel-work context; the
 * rest waits or is stolen. One rule for dispatch, enqueue and running():
 * a kthread that dispatch let in and running() preempted at once came back
 * to the same queue (kwork: rcu_preempt preempted 7,553 times in 5 s, 15
 * times its own sleeps).
 */
static bool lent_cpu_runs(s32 cpu, struct task_struct *p)
{
	return is_pcpu_kthread(p) || ((p->flags & PF_KTHREAD) && kwork_lent(cpu));
}

/* A borrowed CPU dispatches the first task in its queue it runs. */
static bool dispatch_borrowed(s32 cpu)
{
	struct chameleon_cpu_stats *st = stats_here();
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (!lent_cpu_runs(cpu, p))
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
		u64 *vr = &tctx->vruntimes[i];

		if (tctx->assign_gen != a->generation)
			*vr = cpu_ctx(c)->vclock;
		else
			*vr = chameleon_vthread_place(*vr, cpu_ctx(c)->vclock);
	}
	tctx->assign_gen = a->generation;
}
