/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guard timer: every CHAMELEON_GUARD_NS, whatever runs where, it enforces
 * the bounds that no hook of the CPUs concerned may be there to enforce (an
 * RT task holds them, the owner of an object stopped), and keeps the CPUs of
 * a fused object its owner's. Off the scheduling path, so a walk of the CPUs
 * is fine here. Included by main.bpf.c after everything it calls.
 */

struct guard {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct guard);
} guard_timer SEC(".maps");

/*
 * How long the owner of a FUSED object has not been running on it: since
 * it last stopped there still runnable (an injected idle period, a slice
 * end), or since the fuse if it never stopped. Not exact when it stopped
 * and got back since (the guard then sees a running owner anyway).
 */
static u64 owner_away_ns(struct rep_ctx *rc, u64 now)
{
	u64 since = rc->owner_off_at;

	if (!since || chameleon_vtime_before(since, rc->fused_at))
		since = rc->fused_at;
	return now - since;
}

/* Tasks one guard run moves from one queue: the walk stays short. */
#define CHAMELEON_GUARD_MOVES	8

/*
 * Move @p, where the iterator @it stands in @from's queue, to @to's queue:
 * its vtime rebased to @to's clock and placed as enqueue would place it.
 * Wakes @to if it idles.
 */
static bool move_queued(struct bpf_iter_scx_dsq *it, struct task_struct *p, s32 to)
{
	struct task_ctx *tctx = task_ctx(p);
	u64 vtime;

	if (!tctx || !cpu_valid(to))
		return false;
	vtime = cpu_valid(tctx->vcpu) ?
		chameleon_vtime_rebase(p->scx.dsq_vtime, cpu_ctx(tctx->vcpu)->vclock,
				       cpu_ctx(to)->vclock) :
		cpu_ctx(to)->vclock;
	scx_bpf_dsq_move_set_vtime(it, queue_vtime(to, vtime));
	if (!scx_bpf_dsq_move_vtime(it, p, to, 0))
		return false;
	tctx->vcpu = to;
	scx_bpf_kick_cpu(to, SCX_KICK_IDLE);
	return true;
}

/*
 * Send the tasks queued on @cpu that may run elsewhere to the nearest CPU
 * outside any object: on a representative (@rep) all but the object's
 * @owner and kthreads (whose turn is short, running() keeps the object
 * through it); on a lent CPU all but the kthreads it serves (lent_cpu_runs).
 */
static void move_out(s32 cpu, s32 owner, bool rep)
{
	struct task_struct *p;
	s32 to;

	/* A timer is no RCU section of itself; kernels before 7.0 want one here. */
	bpf_rcu_read_lock();
	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (!task_movable(p) || p->pid == owner ||
		    (rep ? (p->flags & PF_KTHREAD) : lent_cpu_runs(cpu, p)))
			continue;
		to = pick_unwithheld(p, cpu);
		if (to >= 0)
			move_queued(BPF_FOR_EACH_ITER, p, to);
	}
	bpf_rcu_read_unlock();
}

/*
 * Keep a fused object's CPUs its owner's. Tasks queued on the
 * representative (there before the fuse, or with nowhere else to go then)
 * would each take it in their vtime turn and end the object; they go to a
 * CPU outside it. Waiters on a lent CPU that reached the lending bound and
 * may run elsewhere go there too, instead of splitting the object: what the
 * bound promises them is to run, not to run there. A waiter that can run on
 * the lent CPU only still splits it (lend_due, after this). One call of
 * move_out() for all CPUs: the verifier walks each call (6.18: 8.6k
 * instructions more with one for the representative and one per lent CPU).
 */
static void guard_objects(u64 now)
{
	u32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(cpu);
		struct rep_ctx *rc = rep_ctx(cpu);
		bool rep = true;
		s32 by;

		if (!rc)
			break;
		/*
		 * A lent CPU's waiters all gone (stolen, moved): the next one
		 * starts a new wait, not the old one's, which the tick would
		 * find due at once and split the object for. If a waiter
		 * came in between, find_starved() puts its start back from
		 * the kernel's runnable_at.
		 */
		if (!scx_bpf_dsq_nr_queued(cpu)) {
			if (cc->lend_wait_since && cc->borrowed_by)
				cc->lend_wait_since = 0;
			continue;
		}
		if (READ_ONCE(rc->state) != REP_FUSED) {
			by = cc->borrowed_by;
			rc = rep_ctx(by - 1);
			if (!by || !rc || READ_ONCE(rc->state) != REP_FUSED ||
			    !chameleon_lend_due(now, cc->lend_wait_since, true, lend_wait_ns))
				continue;
			rep = false;
		}
		move_out(cpu, rc->owner, rep);
		if (!rep && !scx_bpf_dsq_nr_queued(cpu))
			cc->lend_wait_since = 0;
	}
}

/*
 * Every CHAMELEON_GUARD_NS, whatever runs where: an object whose owner no
 * longer runs on its representative, or whose waiter that can run nowhere
 * else reached the lending bound, is split (the others are moved:
 * guard_objects); a CPU lent to a representative that does not hold it is
 * freed; a CPU going offline is seen through (hotplug.bpf.h).
 */
static int guard_fn(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = bpf_ktime_get_ns();
	u32 cpu;

	/* The exit path and its dump, tested on demand (--test-error-after-ms). */
	if (test_error_after_ns && now - init_at >= test_error_after_ns) {
		scx_bpf_error("test-only error, %llu ms after init (--test-error-after-ms)",
			      (now - init_at) / 1000000);
		return 0;
	}
	guard_objects(now);
	bpf_for(cpu, 0, nr_cpus) {
		struct rep_ctx *rc = rep_ctx(cpu);
		struct cpu_ctx *cc;
		s32 by;

		if (!rc)
			break;
		cc = cpu_ctx(cpu);
		if (rc->state == REP_FUSED) {
			if (cc->curr_pid != rc->owner &&
			    owner_away_ns(rc, now) > CHAMELEON_GUARD_NS) {
				split(cpu, CHAMELEON_SPLIT_MIGRATE);
			} else if (lend_due(cpu, rc, now, lend_wait_ns)) {
				split(cpu, CHAMELEON_SPLIT_BOUND);
			}
		}
		by = cc->borrowed_by;
		if (by) {
			struct rep_ctx *lender = rep_ctx(by - 1);

			/*
			 * Borrowed while its lender is NATIVE: a leftover. Not
			 * one a fuse holds: FUSING covers the fuse in progress,
			 * and a split just before means this borrow may be the
			 * next fuse's (state read after the borrow).
			 */
			if (lender && lender->state == REP_NATIVE &&
			    (s64)(now - lender->split_at) > (s64)CHAMELEON_GUARD_NS &&
			    __sync_bool_compare_and_swap(&cc->borrowed_by, by, 0)) {
				proxy_reclaim(cpu);
				scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			}
		}
	}
	hotplug_guard(now);
	find_starved(now);
	bpf_timer_start(timer, CHAMELEON_GUARD_NS, 0);
	return 0;
}

static s32 guard_start(void)
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
	return bpf_timer_start(&g->timer, CHAMELEON_GUARD_NS, 0);
}
