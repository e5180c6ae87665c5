/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guard timer: every CHAMELEON_GUARD_NS, whatever runs where, it enforces
 * the bounds that no hook of the CPUs concerned may be there to enforce (an
 * RT task holds them, the owner of an object stopped), keeps the CPUs of a
 * fused object its owner's, and counts broken invariants. Off the scheduling
 * path, so a walk of the CPUs is fine here.
 *
 * The last line of the bounded-wait guarantee is here too: a task that has
 * waited in a queue for CHAMELEON_STARVE_NS runs next on that CPU, whatever
 * its vtime. The vtime cap bounds how far ahead of a CPU's clock a task is
 * placed, but the clock advances only as the tasks ahead of it run, and every
 * task that wakes or is forked is placed just behind the clock, ahead of it:
 * under a stream of new tasks a light task at the cap would wait for as long
 * as the stream lasts. The guard looks at the tail of each CPU's queue (the
 * largest vtime, where a starved light task ends up) and, if it has been
 * runnable for longer than the bound by the kernel's own account
 * (p->scx.runnable_at, what the watchdog reads), names it; that CPU's next
 * dispatch moves that one task to its local queue first.
 */
#include "role.bpf.h"

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC	1
#endif

struct guard {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct guard);
} guard_timer SEC(".maps");

u64 guard_ran_at;	/* when guard_fn last ran (guard_watch) */
u64 guard_period;	/* the period it set then */
u64 nr_guard_runs;	/* passes */
u64 nr_guard_cpus;	/* CPUs the passes looked at (guard_need), all passes */
u64 nr_guard_sweep_finds; /* CPUs the sweep found in need, their bit clear */

/*
 * The sweep: besides the CPUs whose bit is set, each pass looks at this many
 * more in turn and sets the bit of any that needs the guard. A bit is set by
 * an enqueue before the kernel inserts the task, so a clear that counted the
 * queue in between leaves a queued task unseen. Its CPU was kicked and
 * serves it; what stops a CPU serving (a higher class, hotplug, a drain)
 * sets the bit itself; the sweep is the last resort, within nr_cpus /
 * CHAMELEON_GUARD_SWEEP passes. A constant, so that an idle pass costs the
 * same on any machine.
 */
#define CHAMELEON_GUARD_SWEEP	4

u32 sweep_at;	/* the next CPU the sweep looks at */

/*
 * A CPU that dispatched this recently serves its queue itself
 * (chameleon_guard_served()): a quarter of the rescue's bound, so that the
 * passes before a rescue is due look at the CPU whole.
 */
#define CHAMELEON_GUARD_SERVED_NS	(CHAMELEON_RESCUE_NS / 4)
/*
 * A served CPU's tail is looked at once every this many passes: the 1 s
 * starve bound is then kept within 80 ms, and a pass under load costs
 * nr_cpus / 8 tail walks, not nr_cpus.
 */
#define CHAMELEON_GUARD_TAIL_EVERY	8
/*
 * Accumulators in memory for the guard's loops and those it calls, where one
 * in a register would make each turn a new state for the verifier
 * (rep_ctx.tick_acc): guard_loop()'s, and the sweep's or lend_due()'s (never
 * one inside the other). One guard run at a time.
 */
u32 guard_kept, guard_acc;

/*
 * Name a starved tail task of CPU @c's queue. On a lent CPU the lending
 * bound serves its waiters instead; the kernel's account of the tail's wait
 * backs up our record of when that wait began, so that a wait one path
 * failed to record still ends the lend (exec_object.h). A tail that waited
 * past the bound on a CPU whose role has not let it run there for as long
 * is a broken invariant: the moves, the lending bound and the drains should
 * have served it.
 */
/*
 * How long @c has had the role it has now, as far as it forbids tasks: a
 * fused representative since its fuse, a lent CPU since its representative's
 * fuse; 0 for the others (a parked CPU's queue is moved out by the guard,
 * what stays may run there).
 */
static u64 role_for(s32 c, u64 now)
{
	u32 w = role_word(c);
	s32 rep = chameleon_role_kind(w) == CHAMELEON_ROLE_REP ? c : chameleon_role_with(w);
	struct rep_ctx *rc = rep_ctx(rep);

	return rc && rc->fused_at ? chameleon_time_since(now, rc->fused_at) : 0;
}

int starve_check(s32 c, u64 now, u64 now_j)
{
	struct task_struct *p;
	struct cpu_run *cr;
	bool lent;

	if (!cpu_valid(c))
		return 0;
	cr = cpu_run(c);
	lent = cpu_lent(c);
	/*
	 * Named and not yet served: kick again. Only that CPU's own dispatch
	 * serves the named task, and a kick that found it busy, or one lost to
	 * hotplug, would otherwise be the last.
	 */
	if (READ_ONCE(cr->starved_pid) && !lent)
		kick_cpu(c, SCX_KICK_IDLE);
	if (chameleon_guard_skips(scx_bpf_dsq_nr_queued(c), cr->starved_pid, lent))
		return 0;
	/* Outside ops, older kernels want the DSQ walked under RCU. */
	bpf_rcu_read_lock();
	bpf_for_each(scx_dsq, p, c, SCX_DSQ_ITER_REV) {
		u64 waited = jiffies_to_ns(chameleon_time_since(now_j, BPF_CORE_READ(p, scx.runnable_at)));

		if (waited > CHAMELEON_STARVE_NS && !may_run_on(p, c, PLACE_STAY) &&
		    role_for(c, now) > CHAMELEON_STARVE_NS)
			__sync_fetch_and_add(&invariants.queue_forbidden, 1);
		if (lent) {
			struct cpu_lend *cl = cpu_lend(c);

			if (!lent_cpu_runs(c, p))
				WRITE_ONCE(cl->lend_wait_since,
					   chameleon_lend_wait_start(now, cl->lend_wait_since, waited));
		} else if (waited > CHAMELEON_STARVE_NS) {
			WRITE_ONCE(cr->starved_pid, p->pid);
			kick_cpu(c, SCX_KICK_IDLE);
		}
		break;
	}
	bpf_rcu_read_unlock();
	return 0;
}

/* From ops.dispatch on @cpu: run the task the guard named, if still queued here. */
bool dispatch_starved(s32 cpu)
{
	struct cpu_run *cr = cpu_run(cpu);
	struct task_struct *p;
	s32 pid = READ_ONCE(cr->starved_pid);
	bool moved = false;

	if (!pid)
		return false;
	WRITE_ONCE(cr->starved_pid, 0);
	bpf_for_each(scx_dsq, p, cpu, SCX_DSQ_ITER_REV) {
		if (p->pid != pid)
			continue;
		moved = scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0);
		break;
	}
	if (moved)
		__sync_fetch_and_add(&nr_starved, 1);
	return moved;
}

/*
 * How long the owner of a fused object has not been running on it: since
 * it last stopped there still runnable (an injected idle period, a slice
 * end), or since the fuse if it never stopped.
 */
static u64 owner_away_ns(struct rep_ctx *rc, u64 now)
{
	u64 since = rc->owner_off_at;

	if (!since || chameleon_vtime_before(since, rc->fused_at))
		since = rc->fused_at;
	return chameleon_time_since(now, since);
}

/*
 * Keep fused objects' CPUs their owners'. Tasks queued on a representative
 * (there before the fuse, or with nowhere else to go then) would each take it
 * in their vtime turn and end the object: they go elsewhere. Waiters on a
 * lent CPU that reached the lending bound and may run elsewhere go there too,
 * instead of splitting the object: what the bound promises them is to run,
 * not to run there. A waiter that can run on the lent CPU only still splits
 * it (lend_due, after this). Parked CPUs' queues are emptied the same way.
 */
int guard_queue(s32 cpu, u64 now)
{
	u32 kind;

	if (!cpu_valid(cpu))
		return 0;
	kind = role_kind(cpu);
	if (kind != CHAMELEON_ROLE_REP && kind != CHAMELEON_ROLE_LENT &&
	    kind != CHAMELEON_ROLE_PARKED)
		return 0;
	if (!scx_bpf_dsq_nr_queued(cpu)) {
		/*
		 * A lent CPU's waiters all gone: the next one starts a new
		 * wait, not the old one's, which the tick would find due at
		 * once.
		 */
		if (kind == CHAMELEON_ROLE_LENT && cpu_lend(cpu)->lend_wait_since) {
			WRITE_ONCE(cpu_lend(cpu)->lend_wait_since, 0);
			WRITE_ONCE(cpu_lend(cpu)->lend_pinned, 0);
		}
		return 0;
	}
	if (kind == CHAMELEON_ROLE_LENT &&
	    !chameleon_lend_due(now, cpu_lend(cpu)->lend_wait_since, true, lend_wait_ns))
		return 0;
	move_queue(cpu, MOVE_FORBIDDEN);
	if (kind != CHAMELEON_ROLE_LENT)
		return 0;
	/* Whom the bound now waits for: a pinned waiter, or movable ones (lend_due). */
	WRITE_ONCE(cpu_lend(cpu)->lend_pinned, move_queue_pinned());
	if (!scx_bpf_dsq_nr_queued(cpu))
		WRITE_ONCE(cpu_lend(cpu)->lend_wait_since, 0);
	return 0;
}

/*
 * Objects whose owner no longer runs on its representative are split, at
 * once if a higher class took it (preempt_split_due()); so are those whose
 * waiter that can run nowhere else reached the lending bound. Such an
 * object that the split leaves fused is a broken invariant. A CPU lent to a
 * representative that holds no object (a broken invariant, role.h) is
 * given back.
 */
int guard_object(s32 cpu, u64 now)
{
	struct rep_ctx *rc = rep_ctx(cpu);
	u32 w;
	s32 rep;

	if (!rc)
		return 0;
	w = role_word(cpu);
	if (chameleon_role_kind(w) == CHAMELEON_ROLE_REP) {
		u64 away = cpu_run(cpu)->curr_pid != rc->owner ? owner_away_ns(rc, now) : 0;
		u32 seq = READ_ONCE(rc->seq);

		/*
		 * An object whose owner is away that no split ends: the same
		 * decision still fused after the split was asked for.
		 */
		if (preempt_split_due(cpu)) {
			/* A higher class took it (the sched_switch hook cannot split). */
			split(cpu, CHAMELEON_SPLIT_PREEMPT);
		} else if (away > CHAMELEON_AWAY_NS) {
			if (!split(cpu, CHAMELEON_SPLIT_AWAY) && cpu_fused(cpu) &&
			    READ_ONCE(rc->seq) == seq)
				__sync_fetch_and_add(&invariants.owner_gone, 1);
		} else if (lend_due(cpu, now, lend_wait_ns, &guard_acc)) {
			split(cpu, CHAMELEON_SPLIT_BOUND);
		}
		return 0;
	}
	rep = chameleon_role_with(w);
	if (rep >= 0 && cpu_valid(rep) && !chameleon_role_lent_ok(w, role_word(rep)) &&
	    role_word(cpu) == w && role_cas(cpu, CHAMELEON_RE_GIVE_BACK, rep)) {
		__sync_fetch_and_add(&invariants.lent_to_non_rep, 1);
		proxy_reclaim(cpu);
		kick_cpu(cpu, SCX_KICK_IDLE);
	}
	return 0;
}

/* Has @c anything the guard bounds? (What sets its bit, read from the source.) */
static bool guard_needs(s32 c)
{
	struct cpu_hotplug *h = &cpu_hps[CPU_IDX(c)];

	return scx_bpf_dsq_nr_queued(c) || scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | c) ||
	       role_word(c) != CHAMELEON_ROLE_NATIVE || READ_ONCE(h->drain) ||
	       READ_ONCE(h->dying) || READ_ONCE(cpu_run(c)->starved_pid);
}

/*
 * @c needs nothing more: its bit is cleared, then it is looked at again, so
 * that what set the bit in between is either seen here or leaves it set.
 * Whether it stays set.
 */
static bool guard_release(s32 c)
{
	u32 idx = CPU_IDX(c);
	u64 bit = 1ULL << (idx & 63);

	__sync_fetch_and_and(&guard_need[idx / 64].bits, ~bit);
	if (!guard_needs(c)) {
		hotplug_guard_released(c);
		return false;
	}
	guard_need_set(c);
	return true;
}

/* chameleon_lowest_bit() as a call, so that guard_next() is one path. */
int guard_bit(u64 word)
{
	return chameleon_lowest_bit(word);
}

/*
 * The first CPU at or above @from whose guard_need bit is set, -1 if none.
 * The pass's loops take their CPU from this call, and pass it only to
 * calls: a CPU the verifier tracked across the turns of a loop (used there
 * to index memory, or computed there from the bits) would make each turn a
 * new state to verify. Global: verified once.
 */
int guard_next(s32 from)
{
	u32 nr_words = (nr_cpus + 63) / 64, w;

	if (from < 0 || from >= nr_cpus)
		return -1;
	bpf_for(w, from / 64, nr_words) {
		u64 bits = READ_ONCE(guard_need[w & (CHAMELEON_GUARD_WORDS - 1)].bits);

		if (w == from / 64)
			bits = bits >> (from & 63) << (from & 63);
		if (bits)
			return w * 64 + guard_bit(bits);
	}
	return -1;
}

/*
 * Clear @c's bit if it needs nothing more; whether it keeps it. Global: no
 * caller's loop tracks @c through its accesses.
 */
int guard_release_cpu(s32 c)
{
	return cpu_valid(c) && (guard_needs(c) || guard_release(c));
}

/*
 * Does @c serve its own queue (chameleon_guard_served())? Then a pass leaves
 * it but for its tail, on its turn. What the guard timed for it while it
 * served (an RT task seen, a local queue lingering) starts afresh: neither
 * can be, one of our tasks running there. Its queue counts as seen no later
 * than its last dispatch, so that the rescue's time runs from that dispatch
 * (chameleon_unserved_j()) if it stops dispatching, as if every pass had
 * looked.
 */
int guard_served(s32 c, u64 now_j)
{
	struct cpu_hotplug *h;
	struct cpu_release *rl;
	struct cpu_run *cr;

	if (!cpu_valid(c))
		return 0;
	h = &cpu_hps[CPU_IDX(c)];
	cr = cpu_run(c);
	if (!chameleon_guard_served(role_word(c) == CHAMELEON_ROLE_NATIVE, READ_ONCE(cr->running),
				    READ_ONCE(h->online), READ_ONCE(h->drain) || READ_ONCE(h->dying),
				    READ_ONCE(cr->starved_pid),
				    jiffies_to_ns(chameleon_unserved_j(now_j, READ_ONCE(cr->dispatched_j), 0)),
				    CHAMELEON_GUARD_SERVED_NS))
		return 0;
	if (!h->queued_seen_j)
		h->queued_seen_j = READ_ONCE(cr->dispatched_j) ?: 1;
	rl = &cpu_releases[CPU_IDX(c)];
	if (rl->rt_seen_at)
		rl->rt_seen_at = 0;
	if (rl->local_seen_at)
		rl->local_seen_at = 0;
	return 1;
}

/* Guard's steps for CPU @c after its queue's (guard_queue): calls only (guard_next()). */
int guard_cpu(s32 c, u64 now, u64 now_j)
{
	guard_object(c, now);
	starve_check(c, now, now_j);
	hotplug_guard_cpu(c, now, now_j);
	hotplug_dying(c);
	return 0;
}

/*
 * The sweep (CHAMELEON_GUARD_SWEEP): sets the bit of the next CPUs in turn
 * that need the guard. Whether it set any. Global: verified once.
 */
int guard_sweep(void)
{
	u32 i, n = chameleon_sweep_len(nr_cpus, CHAMELEON_GUARD_SWEEP);

	guard_acc = 0;
	bpf_for(i, 0, n) {
		u32 c = READ_ONCE(sweep_at);
		u32 idx = CPU_IDX(c);

		WRITE_ONCE(sweep_at, c + 1 < nr_cpus ? c + 1 : 0);
		if (!cpu_valid(c) || (READ_ONCE(guard_need[idx / 64].bits) & (1ULL << (idx & 63))))
			continue;
		if (guard_needs(c)) {
			guard_need_set(c);
			__sync_fetch_and_add(&nr_guard_sweep_finds, 1);
			guard_acc = 1;
		}
	}
	return guard_acc;
}

/* A tail waiting this long leaves its LLC queue for a CPU's (guard_llc()). */
#define CHAMELEON_LLC_STARVE_NS	(CHAMELEON_STARVE_NS / 2)

/*
 * The guard's look at LLC @l's queue: its bit cleared if it is empty (and
 * counted again); while the LLC is unfit, its tasks moved out; a tail that
 * waited CHAMELEON_LLC_STARVE_NS moved to a CPU's queue
 * (move_llc_queue()). Whether the bit stays. Global: verified once, @l a
 * scalar.
 */
int guard_llc(u32 l, u64 now_j)
{
	u64 bit = 1ULL << (l & (CHAMELEON_MAX_LLCS - 1)), waited = 0;
	s32 q = CHAMELEON_LLC_Q0 + (l & (CHAMELEON_MAX_LLCS - 1));
	struct task_struct *p;

	if (l >= nr_llcs)
		return 0;
	if (!scx_bpf_dsq_nr_queued(q)) {
		__sync_fetch_and_and(&llc_need, ~bit);
		if (!scx_bpf_dsq_nr_queued(q))
			return 0;
		__sync_fetch_and_or(&llc_need, bit);
	}
	if (READ_ONCE(llc_run(l)->nr_unfit)) {
		move_llc_queue(l, CHAMELEON_MAX_LLCS);
		return 1;
	}
	bpf_rcu_read_lock();
	bpf_for_each(scx_dsq, p, q, SCX_DSQ_ITER_REV) {
		waited = jiffies_to_ns(chameleon_time_since(now_j, BPF_CORE_READ(p, scx.runnable_at)));
		break;
	}
	bpf_rcu_read_unlock();
	if (waited > CHAMELEON_LLC_STARVE_NS)
		move_llc_queue(l, 1);
	return 1;
}

/*
 * The guard's pass over the LLC queues whose llc_need bit is set: one word
 * read when none is. Whether any bit stays set.
 */
int guard_llcs(u64 now_j)
{
	u64 bits;
	u32 i;
	int kept = 0;

	if (!llc_queues)
		return 0;
	bpf_for(i, 0, CHAMELEON_MAX_LLCS) {
		bits = READ_ONCE(llc_need) >> i;
		if (!bits)
			break;
		if ((bits & 1) && guard_llc(i, now_j))
			kept = 1;
	}
	return kept;
}

enum guard_step {
	GUARD_QUEUES,	/* release what needs nothing, else its queue (guard_queue) */
	GUARD_CPUS,	/* objects, starved tasks, hotplug (guard_cpu) */
	GUARD_RELEASE,	/* release what the steps before left needing nothing */
};

/*
 * One step of a pass over the CPUs whose guard_need bit is set; whether any
 * CPU keeps its bit. Global, the step an argument: one loop to verify, not
 * one per step.
 */
int guard_loop(u32 step, u64 now, u64 now_j)
{
	s32 c = -1;
	u32 i;

	guard_kept = 0;
	bpf_for(i, 0, nr_cpus) {
		c = guard_next(c + 1);
		if (c < 0)
			break;
		if (step == GUARD_QUEUES) {
			__sync_fetch_and_add(&nr_guard_cpus, 1);
			/* Most often, on a machine at rest: a queued task already served. */
			if (guard_release_cpu(c))
				guard_queue(c, now);
		} else if (step == GUARD_CPUS) {
			/* (Not inside guard_cpu(): before 7.1, one call deeper is too deep.) */
			if (!guard_served(c, now_j))
				guard_cpu(c, now, now_j);
			else if (chameleon_guard_tail_turn(c, nr_guard_runs, CHAMELEON_GUARD_TAIL_EVERY))
				starve_check(c, now, now_j);
		} else if (guard_release_cpu(c)) {
			guard_kept = 1;
		}
	}
	return guard_kept;
}

/*
 * One pass over the CPUs whose guard_need bit is set: those that need
 * nothing more lose it at once; the others' queues first (guard_queue),
 * then their objects (guard_object), starved tasks (starve_check), hotplug
 * and unserved queues (hotplug_guard_cpu, hotplug_dying), of a CPU that
 * serves its own queue only its tail, one pass in
 * CHAMELEON_GUARD_TAIL_EVERY (guard_served()); the bits of CPUs
 * left needing nothing are cleared, and the sweep looks at a few more.
 * Queues before objects: a representative's lending bound (guard_object) is
 * checked after its lent CPUs' waiters that may run elsewhere were moved
 * (guard_queue), whatever the CPUs' order. A bit set during the pass is
 * served by the steps after it, and whole by the next pass. Whether any bit
 * is left set.
 */
static __always_inline bool guard_pass(u64 now, u64 now_j)
{
	bool kept;

	guard_loop(GUARD_QUEUES, now, now_j);
	guard_loop(GUARD_CPUS, now, now_j);
	kept = guard_loop(GUARD_RELEASE, now, now_j);
	if (guard_sweep())
		kept = true;
	if (guard_llcs(now_j))
		kept = true;
	return kept;
}

/*
 * Every CHAMELEON_GUARD_NS, a pass (guard_pass) over the CPUs that need the
 * guard; every CHAMELEON_GUARD_IDLE_NS instead when none is left needing it
 * (nothing queued, ours or a local queue; every CPU NATIVE; nothing
 * draining). Its cost follows the CPUs that need it, not nr_cpus.
 */
static int guard_fn(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = bpf_ktime_get_ns();

	/* The exit path and its dump, tested on demand (--test-error-after-ms). */
	if (test_error_after_ns && now - init_at >= test_error_after_ns) {
		scx_bpf_error("test-only error, %llu ms after init (--test-error-after-ms)",
			      (now - init_at) / 1000000);
		return 0;
	}
	u64 period = CHAMELEON_GUARD_NS;

	/*
	 * On a CPU going offline it does nothing (may_kick) and so counts as
	 * late: a tick elsewhere moves it there (guard_watch). Left here, it
	 * would not kick the dying CPU that the kernel's own hotplug thread
	 * waits in the local queue of.
	 */
	if (!may_kick())
		goto out;
	if (!guard_pass(now, bpf_jiffies64()) && !READ_ONCE(nr_to_drain))
		period = CHAMELEON_GUARD_IDLE_NS;
	WRITE_ONCE(guard_period, period);
	WRITE_ONCE(guard_ran_at, now);
	__sync_fetch_and_add(&nr_guard_runs, 1);
out:
	bpf_timer_start(timer, period, 0);
	return 0;
}

s32 guard_start(void)
{
	struct guard *g;
	u32 key = 0;
	s32 ret;

	g = bpf_map_lookup_elem(&guard_timer, &key);
	if (!g) {
		scx_bpf_error("no guard timer");
		return -ENOENT;
	}
	ret = bpf_timer_init(&g->timer, &guard_timer, CLOCK_MONOTONIC);
	if (ret) {
		scx_bpf_error("guard timer init: %d", ret);
		return ret;
	}
	bpf_timer_set_callback(&g->timer, guard_fn);
	WRITE_ONCE(guard_period, CHAMELEON_GUARD_NS);
	WRITE_ONCE(guard_ran_at, bpf_ktime_get_ns());
	return bpf_timer_start(&g->timer, CHAMELEON_GUARD_NS, 0);
}

/*
 * Run the guard at once: a CPU going offline may not kick (may_kick()), and
 * the CPUs its splits gave back would otherwise idle until the next pass.
 * The timer armed here moves with the CPU's other timers when it dies.
 */
void guard_soon(void)
{
	struct guard *g;
	u32 key = 0;

	g = bpf_map_lookup_elem(&guard_timer, &key);
	if (g)
		bpf_timer_start(&g->timer, 0, 0);
}

/*
 * From ops.tick: a guard late by CHAMELEON_GUARD_LATE_NS past its period
 * (guard_period: CHAMELEON_GUARD_IDLE_NS while nothing is queued) is restarted here,
 * which moves its timer to this CPU. The timer runs in softirq context on
 * the CPU that armed it; there an RT task that never sleeps leaves the
 * softirqs that overrun to ksoftirqd, an scx task that does not run while
 * the RT task does, and every bound the guard enforces would wait with it
 * (seen on 6.18: the guard's CPU taken by an RT hog, a task stranded 5 s).
 * One CPU wins the restart (the CAS); the others see a fresh time.
 */
void guard_watch(u64 now)
{
	u64 at = READ_ONCE(guard_ran_at);
	struct guard *g;
	u32 key = 0;

	if (!at || chameleon_time_since(now, at) < READ_ONCE(guard_period) + CHAMELEON_GUARD_LATE_NS ||
	    !may_kick())
		return;
	if (!__sync_bool_compare_and_swap(&guard_ran_at, at, now))
		return;
	g = bpf_map_lookup_elem(&guard_timer, &key);
	if (g && !bpf_timer_start(&g->timer, 0, 0))
		__sync_fetch_and_add(&nr_guard_restarts, 1);
}
