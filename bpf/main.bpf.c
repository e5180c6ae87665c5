/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_chameleon: the sched_ext policy.
 *
 * Design
 * ------
 * Every CPU has its own queue (a user DSQ whose id is the CPU number) ordered
 * by virtual time, and its own virtual clock (the largest vtime that has
 * started running there, like a CFS runqueue's min_vruntime). This is the
 * cluster-scheduling substrate of Chameleon (§3.3): execution objects and the
 * virtual threads that decide when a task may borrow a neighbour compare a
 * task's place in a borrowed CPU's queue with what runs there, so each CPU
 * needs its own ordered queue and clock.
 *
 * - select_cpu: the kernel's default idle-CPU search (a lent CPU, or another
 *   task's fused representative, looks idle but is not: a really idle one is
 *   preferred). A task that finds an idle CPU goes straight to its local
 *   queue.
 * - runnable, stopping(!runnable): a task's wake and sleep, however it is
 *   dispatched: its tag is checked, its virtual threads placed, the agent
 *   told if needed. No ops.quiescent: every struct_ops call costs on each
 *   wakeup, and stopping() already sees every sleep.
 * - enqueue: queue on the task's CPU (its representative if it has an
 *   object), vtime rebased to that CPU's clock, with one slice of credit and
 *   capped so that no one waits longer than CHAMELEON_WAIT_BOUND_NS behind a
 *   heavier task; wake an idle CPU the task may run on so it can steal it.
 * - dispatch: the head of this CPU's queue, else steal: SMT siblings first,
 *   then a bounded, rotating window of the rest in topology order. A fused
 *   representative neither steals nor pulls: its owner comes back.
 * - running/stopping: advance the CPU's clock; charge delta * 100 / weight,
 *   the task's nice weight with its cgroup's cpu.weight (cgroup_weight.bpf.h).
 * - cpu_release: a higher class took the CPU; its local queue goes back to
 *   enqueue, always (the kernel does not say so again if an RT task follows
 *   the first taker: preempt.h). Others may steal it, unless the taker is a
 *   kthread bound there (kmod_proxy's idle injection, which only makes the
 *   CPU slower; the stopper), whose turn is short: then the tasks wait at
 *   the front of the CPU's own queue. Away for CHAMELEON_RELEASE_NS, to
 *   anyone, the CPU has its queue drained to the others (hotplug_guard).
 *   cpu_acquire: the CPU is ours again.
 * - cpu_online/cpu_offline: split objects the CPU was part of, report the
 *   event, and see the CPU's way down through (hotplug.bpf.h: its queue
 *   drained, the CPU kicked until the kernel no longer waits for it).
 *   Implementing them tells the kernel we handle hotplug, so it does not
 *   eject the scheduler.
 *
 * Parking (park.bpf.h): a CPU the agent parked gets nothing new and runs
 * only what can run nowhere else.
 *
 * The ops are here; what they share lives by concept in: events.bpf.h (to
 * the agent), wake.bpf.h (a task's tag, wake and sleep), steal.bpf.h
 * (taking other CPUs' work), wait_bound.bpf.h, hotplug.bpf.h, park.bpf.h,
 * dump.bpf.h. Execution objects (fuse, split, tax, the lending bound) live in
 * exec_object.bpf.h; the hooks here call into it only for tagged tasks and
 * for CPUs lent to an object. SCX_OPS_ENQ_LAST is set so that a task
 * preempted on a lent CPU comes back through enqueue() instead of silently
 * continuing to run there; SCX_OPS_ENQ_EXITING so that an exiting task is
 * queued by us too, not left in a local queue a higher class may hold.
 *
 * Bounded waits: every runnable task runs within a bound by construction: on
 * an ordinary queue the vtime cap above, and whatever the vtimes say, 1 s
 * (wait_bound.bpf.h); on a lent CPU the lending bound (--lend-wait-ms); an
 * object lives only while its owner runs on its representative; a queue its
 * CPU stops serving (a higher class, hotplug) is drained by the others
 * (hotplug.bpf.h); a periodic guard timer enforces all of them even if no
 * hook of those CPUs runs. timeout_ms is set well above those bounds.
 *
 * Userspace (the agent) reads per-CPU counters from .bss and events from a
 * ring buffer; nothing on the scheduling path waits for it. If the agent dies,
 * the struct_ops link closes and the kernel moves every task back to the fair
 * class: nothing is stranded by design.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "vtime.h"
#include "tax.h"
#include "exec_object.h"
#include "preempt.h"

char _license[] SEC("license") = "GPL";

/* Set by the agent before load. */
const volatile u64 slice_ns = 5ULL * 1000 * 1000;
const volatile u32 nr_cpus = 1;	/* possible CPUs, <= CHAMELEON_MAX_CPUS */
const volatile s32 agent_tgid;	/* the agent's own threads are not load */
const volatile u64 run_id;	/* --run-id, for the exit dump */
/* Test only: scx_bpf_error() this long after init (guard.bpf.h; 0: never). */
const volatile u64 test_error_after_ns;
u64 init_at;

/*
 * The longest a task waits behind one heavier task on an ordinary queue.
 * 200 slices: weights up to 200:1 are honoured exactly, beyond that (nice -20
 * against nice 19 is 8668:1) the lighter task still runs once a second.
 */
#define CHAMELEON_WAIT_BOUND_NS	(1000ULL * 1000 * 1000)

UEI_DEFINE(uei);

/*
 * One CPU's state, one cache line of its own (no false sharing between the
 * CPUs that write it). The first part is written by the CPU itself in
 * running()/stopping() and read by CPUs that consider borrowing it; the
 * lending part is written by the representative borrowing it.
 */
struct cpu_ctx {
	u64	vclock;		/* largest vtime started here (the CPU's clock) */
	u64	curr_vtime;	/* vtime of the running task when it started */
	u64	curr_started;
	u32	curr_weight;
	s32	curr_pid;	/* scx task running here, 0 if none */
	u8	running;	/* an scx task runs here */
	u8	online;
	u8	parked;		/* parked by the agent (park.bpf.h) */
	u8	released_kthread; /* released_at: taken by a per-CPU kthread */
	u32	steal_start;	/* rotating start of the far steal window */
	u32	drain;		/* offline, its queue not yet emptied (hotplug.bpf.h) */
	u32	dying;		/* offline, the kernel may still wait for it to empty */
	u64	dispatched_at;	/* last ops.dispatch here, or its queue last seen empty */
	s32	starved_pid;	/* queued here past the wait bound: runs next (wait_bound.bpf.h) */
	u32	balance_idx;	/* next CPU balance_pull() compares its queue with */
	/* Lending (exec_object.bpf.h). */
	s32	borrowed_by;	/* representative + 1 of the object borrowing it, 0 if none */
	u32	local_ns;	/* its own part of decision local_seq, ns */
	u32	local_seq;
	u64	pending_for;	/* decision seq << 32 | representative + 1 waiting for it */
	u64	local_from;	/* its dispatch for that fuse/split began (0: not yet) */
	u64	lend_wait_since; /* a task other than a pcpu kthread waits while lent */
	u64	lend_block_until; /* not lent again before this (after a bound split) */
	s32	lend_owed_by;	/* representative + 1 whose bound split gave it to its waiters */
	u64	released_at;	/* a higher class took it then, 0: ours (preempt.h) */
	u64	local_seen_at;	/* guard: local queue unserved since (preempt.h) */
	/* Performance target (cpuperf.bpf.h). */
	u32	perf_target;	/* last handed to the kernel */
	u32	perf_set;	/* perf_target is valid */
	u64	perf_at;	/* start of the use window */
	u64	perf_busy;	/* busy_ns then */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/* Per-CPU state, indexed by CPU id. In .bss so the agent reads it mmapped. */
struct cpu_ctx cpu_ctxs[CHAMELEON_MAX_CPUS];
struct chameleon_cpu_stats cpu_stats[CHAMELEON_MAX_CPUS];
u64 nr_cpu_online_events, nr_cpu_offline_events, nr_events_dropped;
/*
 * Bumped by the agent after it rewrote tags at run time: each task compares
 * it with its own copy when it becomes runnable or is enqueued, and re-reads
 * its tag if stale.
 */
u64 tags_gen;

struct task_ctx {
	u64	started_at;	/* when it last started running */
	s32	vcpu;		/* CPU whose clock p->scx.dsq_vtime refers to */
	u8	tagged;		/* its cgroup has a tag: it may get an object */
	u8	sleep_told;	/* the agent was told it sleeps: tell it the wake */
	u8	counted;	/* in cpu_stats[].nr_untagged (count_untagged) */
	u8	pad;
	u32	assign_gen;	/* generation of the object vruntimes[] refer to */
	s32	fused_rep;	/* representative + 1 it last fused on, 0 if none */
	u64	cgid;		/* leaf cgroup whose tag it follows */
	u64	tags_gen;	/* tags_gen when its tag was last read */
	u64	demand_drops;	/* nr_events_dropped when it last asked (redemand) */
	u64	run_ns;
	u64	fused_ns;
	u64	resume_lag;	/* vtime lent to queue it in front after a kthread's turn (preempt.h) */
	u64	wcg;		/* cgroup whose cpu.weight it follows, 0: none (cgroup_weight.bpf.h) */
	u64	wcounted;	/* cgroup it is counted runnable in, 0: none */
	/* Virtual threads: its place in the queue of each CPU of its object. */
	u64	vruntimes[CHAMELEON_OBJ_MAX_CPUS];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CHAMELEON_RINGBUF_SZ);
} events SEC(".maps");

/* Each CPU's steal order (intf.h), filled by the agent; sized to nr_cpus at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct chameleon_steal_order);
} steal_orders SEC(".maps");

/*
 * Index of a per-CPU array. Callers have checked cpu_valid(); the mask makes
 * the bound obvious to the verifier whatever the compiler did to the check.
 */
#define CPU_IDX(cpu)	cpu_idx(cpu)
_Static_assert((CHAMELEON_MAX_CPUS & (CHAMELEON_MAX_CPUS - 1)) == 0,
	       "CPU_IDX() needs a power-of-two CHAMELEON_MAX_CPUS");

static __always_inline u32 cpu_idx(s32 cpu)
{
	u32 idx = cpu;

	/* Keep clang from dropping the mask as redundant with cpu_valid(). */
	barrier_var(idx);
	return idx & (CHAMELEON_MAX_CPUS - 1);
}

/* The verifier needs the bound check; CPU ids beyond the arrays are refused. */
static __always_inline bool cpu_valid(s32 cpu)
{
	return cpu >= 0 && cpu < CHAMELEON_MAX_CPUS && cpu < nr_cpus;
}

static __always_inline struct cpu_ctx *cpu_ctx(s32 cpu)
{
	return &cpu_ctxs[CPU_IDX(cpu)];
}

/*
 * Counters of the CPU doing the work: only that CPU writes them, so plain
 * increments do not race.
 */
static struct chameleon_cpu_stats *stats_here(void)
{
	u32 cpu = bpf_get_smp_processor_id();

	return cpu < CHAMELEON_MAX_CPUS ? &cpu_stats[CPU_IDX(cpu)] : NULL;
}

static struct task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* Kernel work that can run nowhere else: a lent CPU still runs it. */
static bool is_pcpu_kthread(struct task_struct *p)
{
	return (p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1;
}

/*
 * @cpu is the CPU we run on and a task (not its idle loop) runs there: it
 * goes through dispatch when that task stops, so it needs no kick.
 */
static bool running_here(s32 cpu)
{
	struct task_struct *curr;

	if (cpu != bpf_get_smp_processor_id())
		return false;
	curr = bpf_get_current_task_btf();
	return curr->pid != 0;
}

/*
 * A task's own (leaf) cgroup. Tags follow it, not the nearest cgroup with the
 * cpu controller that the kernel passes to the cgroup ops.
 */
static u64 task_cgroup_id(struct task_struct *p)
{
	/*
	 * Plain loads through the task's BTF pointer (ops run under RCU), not
	 * BPF_CORE_READ()'s four probe-read helper calls: this runs on every
	 * wakeup and enqueue.
	 */
	return p->cgroups->dfl_cgrp->kn->id;
}

#include "events.bpf.h"

/*
 * Rebase @p's vtime onto @cpu's clock if it was last charged against another
 * CPU's clock. Called wherever the task lands on a new queue or CPU.
 */
/*
 * A task queued in front of its CPU's queue after a kthread's turn there
 * (enqueue, preempt.h) got the vtime that put it there on loan: it runs, or
 * is queued again, with its own. Otherwise each injected idle period would
 * forgive it the run before it, and it would win its CPU again and again.
 */
static __always_inline void repay_resume_lag(struct task_struct *p,
					     struct task_ctx *tctx)
{
	if (tctx->resume_lag) {
		scx_bpf_task_set_dsq_vtime(p, p->scx.dsq_vtime + tctx->resume_lag);
		tctx->resume_lag = 0;
	}
}

static void rebase_to(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	s32 from = tctx->vcpu;
	u64 vtime;

	if (from == cpu || !cpu_valid(cpu))
		return;
	if (cpu_valid(from))
		vtime = chameleon_vtime_rebase(p->scx.dsq_vtime, cpu_ctx(from)->vclock,
					       cpu_ctx(cpu)->vclock);
	else
		vtime = cpu_ctx(cpu)->vclock;
	scx_bpf_task_set_dsq_vtime(p, vtime);
	tctx->vcpu = cpu;
}

/*
 * A vtime on @cpu's clock as a task joins its queue: with one slice of
 * credit at most, and capped so that it waits no longer than
 * CHAMELEON_WAIT_BOUND_NS behind the task running there. Every enqueue,
 * wakeup or not: a task whose vtime is never floored carries its deficit
 * from queue to queue (a migration rebases it, keeping it), and yielders and
 * affinity changers at -1.8 s queued in front of everyone for seconds (soak,
 * when only wakers were floored: a task waited 5.1 s, ejected).
 */
static u64 queue_vtime(s32 cpu, u64 vtime)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);

	vtime = chameleon_vtime_floor(vtime, cc->vclock, slice_ns);
	return chameleon_vtime_cap(vtime, cc->vclock, CHAMELEON_WAIT_BOUND_NS,
				   cc->running ? cc->curr_weight : 0);
}

#include "cgroup_weight.bpf.h"
#include "hotplug.bpf.h"
#include "wait_bound.bpf.h"
#include "exec_object.bpf.h"
#include "cpuperf.bpf.h"
#include "preempt.bpf.h"

#include "wake.bpf.h"

/*
 * An idle CPU @p may use that is neither lent to an object nor parked nor
 * the representative of another's object, or -1. A lent CPU idles on
 * purpose, and a representative idles while an injected idle period or a
 * kthread holds its owner off, so the kernel's idle tracking hands them out
 * like any other; each one the picker returns here has its idle bit taken,
 * which keeps it out of later picks until it idles again.
 */
static s32 pick_idle_unlent(struct task_struct *p)
{
	s32 cpu;
	u32 i;

	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (cpu < 0 || !(cpu_borrowed(cpu) || cpu_ctx(cpu)->parked ||
				 held_from(cpu, p)))
			return cpu;
	}
	return -1;
}

#include "park.bpf.h"
#include "hybrid.bpf.h"

s32 BPF_STRUCT_OPS(chameleon_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	bool is_idle = false;
	s32 cpu;

	/* A task with an object belongs on its representative. */
	cpu = tctx ? task_rep(p, tctx) : -1;
	if (cpu >= 0) {
		if (!withheld(cpu) && scx_bpf_test_and_clear_cpu_idle(cpu))
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		return cpu;
	}

	/* Hybrid: an idle fast CPU before a slow last one (hybrid.bpf.h). */
	if (wants_fast(p, prev_cpu)) {
		cpu = pick_idle_fast(p);
		if (cpu >= 0) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
			__sync_fetch_and_add(&nr_fast_moves, 1);
			return cpu;
		}
	}

	/*
	 * The CPU it last ran on, if idle: its caches are warm, and it is
	 * what the fair class picks first too (select_idle_sibling()). Most
	 * wakeups of a task that sleeps and wakes often end here, without the
	 * whole idle search (pipe ping-pong: 3x EEVDF's time before).
	 */
	if (bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) && !withheld(prev_cpu) &&
	    !held_from(prev_cpu, p) && scx_bpf_test_and_clear_cpu_idle(prev_cpu)) {
		struct chameleon_cpu_stats *st = stats_here();

		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		if (st)
			st->nr_direct++;
		return prev_cpu;
	}

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags & ~SCX_WAKE_SYNC, &is_idle);
	/*
	 * A lent CPU, or another's representative between two runs of its
	 * owner, looks idle but is not: prefer a really idle one. With none,
	 * queue there and compete with the object (enqueue).
	 */
	if (is_idle && (withheld(cpu) || held_from(cpu, p))) {
		s32 other = pick_idle_unlent(p);

		if (other >= 0)
			cpu = other;
		else
			is_idle = false;
	}
	if (is_idle) {
		struct chameleon_cpu_stats *st = stats_here();

		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		if (st)
			st->nr_direct++;
	}
	return cpu;
}

/*
 * @p becomes runnable, whether select_cpu dispatched it directly or enqueue
 * will queue it: the place for wake bookkeeping.
 */
void BPF_STRUCT_OPS(chameleon_runnable, struct task_struct *p, u64 enq_flags)
{
	struct chameleon_assignment a;
	struct task_ctx *tctx = task_ctx(p);
	bool held;

	if (!tctx)
		return;
	tag_check(p, tctx);
	count_untagged(p, tctx, scx_bpf_task_cpu(p), true);
	cg_count(tctx, true);
	if (!tctx->tagged)
		return;
	held = assignment_of(p, &a);
	if (held)
		place_vthreads(tctx, &a);
	else
		redemand_if_lost(p, tctx);
	/*
	 * Its object may have been freed while it slept: it asks again, and
	 * then the agent is woken for it (one it still holds is only counted
	 * awake, at the agent's next loop).
	 */
	if (tctx->sleep_told) {
		tctx->sleep_told = 0;
		emit(CHAMELEON_EV_WAKE, scx_bpf_task_cpu(p), p, !held);
	}
}

/* Both of @cpu's queues hold no task that would run before @vtime there. */
static bool owner_next(s32 cpu, u64 vtime)
{
	struct task_struct *head;

	/* Nor ahead of a task the guard found starved here (dispatch runs it). */
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) || READ_ONCE(cpu_ctx(cpu)->starved_pid))
		return false;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	return !head || !chameleon_vtime_before(head->scx.dsq_vtime, vtime);
}

void BPF_STRUCT_OPS(chameleon_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p), rep, idle, kw, fast;
	struct task_ctx *tctx = task_ctx(p);
	struct chameleon_cpu_stats *st = stats_here();
	struct cpu_ctx *cc;
	bool here = true;
	u64 vtime;

	if (!tctx || !cpu_valid(cpu)) {
		/* Not ours to order (should not happen): keep it runnable. */
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, slice_ns, enq_flags);
		return;
	}
	/*
	 * A retag reaches a task that never sleeps here; a waking task had
	 * its check in runnable() just now.
	 */
	if (!(enq_flags & SCX_ENQ_WAKEUP)) {
		tag_check(p, tctx);
		count_untagged(p, tctx, cpu, true);
		cg_count(tctx, true);
	}

	rep = task_rep(p, tctx);
	if (rep >= 0) {
		here = cpu == rep;
		cpu = rep;
	} else if ((p->flags & PF_KTHREAD) && task_movable(p) && (kw = kwork_sibling(cpu)) >= 0 &&
		   bpf_cpumask_test_cpu(kw, p->cpus_ptr)) {
		/* Kernel work off a kwork representative, to its sibling. */
		here = false;
		cpu = kw;
	} else if (task_movable(p) && (cpu_parked(cpu) ||
		   (cpu_borrowed(cpu) && (p->flags & PF_KTHREAD) && !kwork_lent(cpu)) ||
		   held_from(cpu, p))) {
		/*
		 * Off a parked CPU; a kthread off a lent one, where it would
		 * split the object for a turn of microseconds (proxy_stress:
		 * rcu_preempt and unbound kworkers, 24 splits while 100 lines
		 * went to the console), to the nearest, the representative,
		 * where a kthread splits nothing; and anyone else off another's
		 * representative, where its turn would end the object, to the
		 * nearest CPU outside any object, if there is one.
		 */
		s32 other = pick_unwithheld(p, cpu);

		if (other >= 0) {
			here = false;
			cpu = other;
		}
	}

	/*
	 * Hybrid: off a slow CPU to an idle fast one, for a task whose tick
	 * ended its slice for that (hybrid.bpf.h), or woke with none idle then.
	 */
	if (rep < 0 && here && wants_fast(p, cpu) && (fast = pick_idle_fast(p)) >= 0) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | fast, slice_ns, enq_flags);
		scx_bpf_kick_cpu(fast, SCX_KICK_IDLE);
		__sync_fetch_and_add(&nr_fast_moves, 1);
		return;
	}

	/*
	 * SCX_ENQ_LAST: the task's slice ended and nothing else is queued here.
	 * Keep it running, unless this CPU is lent to an object or the task
	 * belongs on its representative.
	 */
	if ((enq_flags & SCX_ENQ_LAST) && here && !withheld(cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
		/*
		 * Some kernels (6.16, 7.0) have already picked idle when they
		 * ask: without a kick the task sits in the local queue until
		 * the CPU wakes for something else (~130 ms under TCG).
		 */
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}

	/*
	 * A task that can run here only, with both queues here empty:
	 * straight to the local queue, where it runs next whatever the order
	 * (nobody else can steal it), and the CPU skips a dispatch when the
	 * current task blocks (pinned pipe ping-pong: every wakeup). Never
	 * behind another task in the local queue: two pinned tasks taking
	 * turns there would keep the CPU out of ops.dispatch for good, and
	 * with it whatever only this CPU can take from the other queues
	 * (rt_hog: a task drained to the global queue waited there).
	 * Before the vtime work, which only a queue ordered by vtime needs
	 * (it floors and caps a task's vtime when it gets there; one kfunc
	 * call less per pinned wakeup). Its vtime stays as it was: running()
	 * moves this CPU's clock only forward to it, and its next insert into
	 * the vtime queue floors and caps it there.
	 * Not a task re-enqueued from a local queue (SCX_ENQ_REENQ): the CPU
	 * is not ours (cpu_release, or the guard drains a queue a higher class
	 * holds); back into that queue, the next drain would re-enqueue it
	 * again, and the kernel ejects a scheduler that re-enqueues a task
	 * 256 times without it running (pinned_behind_rt).
	 */
	if (!task_movable(p) && !(enq_flags & SCX_ENQ_REENQ) && !withheld(cpu) &&
	    !scx_bpf_dsq_nr_queued(cpu) && !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu)) {
		/*
		 * No kick: an insert into a local queue reschedules the CPU
		 * if it idles (the kernel's dispatch_enqueue()). A kick here
		 * would be an irq_work for nothing, and on this CPU, whose
		 * runqueue lock we hold, always a self-IPI.
		 */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_ns, enq_flags);
		return;
	}
	repay_resume_lag(p, tctx);
	rebase_to(p, tctx, cpu);
	cc = cpu_ctx(cpu);
	vtime = queue_vtime(cpu, p->scx.dsq_vtime);
	scx_bpf_task_set_dsq_vtime(p, vtime);
	if (st)
		st->nr_enqueued++;
	/*
	 * An exiting task goes to the front of its CPU's queue, as near as we
	 * queue to where the kernel's default put it (the local queue, next to
	 * run): what it frees is waited for, a killed agent's struct_ops link
	 * among it (sigkill: disabled later than 1 s under stress-ng once).
	 */
	if (p->flags & PF_EXITING)
		vtime = resume_vtime(cpu, vtime);
	/*
	 * Back from the local queue of a CPU a per-CPU kthread took for a
	 * moment (cpu_release): in front of this CPU's own queue, where the
	 * local queue had it, nobody steals it while the hold is fresh, and
	 * the CPU comes back to it (no other CPU to wake). With what is left
	 * of its slice (0: the kernel keeps it): a new one each time idle
	 * injection pushes it off would let it run on for as long as the
	 * injections come before its slice ends (the others on that CPU
	 * waited 480 ms: kthread_then_rt).
	 */
	if ((enq_flags & SCX_ENQ_REENQ) && here && kthread_holds(cpu)) {
		u64 front = resume_vtime(cpu, vtime);

		tctx->resume_lag = vtime - front;
		scx_bpf_dsq_insert_vtime(p, cpu, 0, front, enq_flags);
		return;
	}
	/*
	 * A task with an object that runs next on its representative anyway
	 * (nobody queued there is ahead of it) waits in the local queue there,
	 * where no other CPU can steal it: a stolen owner runs elsewhere and
	 * its object ends (bench Fig. 7: 47-66 such splits per run under full
	 * load). Only into an empty local queue, like the pinned path above,
	 * and only while the CPU is ours: not back into the one cpu_release()
	 * just emptied, nor into one a kthread holds, which an RT task may
	 * take next without a word (preempt.h).
	 */
	if (rep >= 0 && !(enq_flags & SCX_ENQ_REENQ) && !READ_ONCE(cc->released_at) &&
	    !withheld(cpu) && owner_next(cpu, vtime)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_ns, enq_flags);
		return;
	}
	scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, vtime, enq_flags);

	if (cpu_borrowed(cpu)) {
		/*
		 * A lent CPU serves only kthreads bound to it: wake it for one.
		 * Anyone else starts the lending bound and may split the object
		 * now if its vtime is due, or be stolen.
		 */
		if (lent_cpu_runs(cpu, p))
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		else
			waiter_on_lent(cpu, p);
	} else if (rep >= 0) {
		/* Wake the representative if it idles; stealing would defeat fusing. */
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}

	/*
	 * A task that can run on this CPU only: wake it if it idles, no
	 * search (pinned pipe ping-pong enqueues here every wakeup).
	 */
	if (!task_movable(p)) {
		if (!cpu_borrowed(cpu) && !running_here(cpu))
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	/* An idle CPU the task may use steals it in its dispatch. */
	idle = pick_idle_unlent(p);
	if (idle >= 0) {
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
		if (st)
			st->nr_kicks++;
	}
}

#include "steal.bpf.h"
#include "guard.bpf.h"


/*
 * How long the head of a CPU's queue may wait while the task before it runs
 * on: as long as weights of up to 20 : 1 need (the lighter task waits 20
 * slices), well within CHAMELEON_WAIT_BOUND_NS, the bound the vtime cap
 * promises.
 */
#define CHAMELEON_KEEP_WAIT_NS	(100ULL * 1000 * 1000)

/*
 * @prev, still runnable, used up its slice here: the kernel asks for the
 * next task before it puts @prev back into our queue (the balance comes
 * before put_prev_task), so the queue's head ran next whatever @prev's
 * vtime, and tasks sharing a CPU took turns whatever their weights (nice -5
 * against 0: 1 : 1.04; EEVDF 1 : 3). @prev runs on, with a new slice, if
 * nothing queued here is ahead of it, its vtime charged up to now, and the
 * head has not waited CHAMELEON_KEEP_WAIT_NS by the kernel's account.
 */
static bool keep_prev(s32 cpu, struct task_struct *prev, bool held)
{
	struct task_struct *head;
	struct task_ctx *tctx;
	u64 v;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED) || scx_bpf_task_cpu(prev) != cpu ||
	    (held && reps[CPU_IDX(cpu)].owner != prev->pid))
		return false;
	tctx = task_ctx(prev);
	if (!tctx || !tctx->started_at || scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu))
		return false;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (!head)
		return false;
	v = prev->scx.dsq_vtime +
	    chameleon_vtime_charge(bpf_ktime_get_ns() - tctx->started_at, task_weight(prev, tctx));
	if (!chameleon_vtime_before(v, head->scx.dsq_vtime) ||
	    jiffies_to_ns(bpf_jiffies64() - BPF_CORE_READ(head, scx.runnable_at)) >=
	    CHAMELEON_KEEP_WAIT_NS)
		return false;
	prev->scx.slice = slice_ns;
	return true;
}

/* Fill @cpu's local queue; whether it got a task. */
static bool dispatch_cpu(s32 cpu, struct task_struct *prev)
{
	bool held;
	u64 mine;

	drain_offline();
	/* A lent CPU runs only the kthreads bound to it (processor-proxy work). */
	if (cpu_borrowed(cpu)) {
		perf_set(cpu, cpu_ctx(cpu), 0);
		return dispatch_borrowed(cpu);
	}
	if (cpu_parked(cpu))
		return dispatch_parked(cpu);
	if (pull_parked(cpu))
		return true;
	if (dispatch_starved(cpu))
		return true;
	/*
	 * With its own queue empty, stealing takes any queue's head, which
	 * covers the balance pull; a CPU about to idle (every wakeup of a
	 * ping-pong) then does only the steal scan. A fused representative
	 * takes nothing from the others: its owner is in its queue (it
	 * stopped, runnable) or the object ends within a guard period; a task
	 * taken from elsewhere would run first and end the object
	 * (guard.bpf.h).
	 */
	held = READ_ONCE(reps[CPU_IDX(cpu)].state) == REP_FUSED;
	mine = scx_bpf_dsq_nr_queued(cpu);
	if (mine) {
		if (keep_prev(cpu, prev, held))
			return true;
		if (!held && balance_pull(cpu, cpu_ctx(cpu), mine))
			return true;
		if (scx_bpf_dsq_move_to_local(cpu, 0)) {
			cpu_stats[CPU_IDX(cpu)].nr_dispatched++;
			return true;
		}
	}
	return !held && steal(cpu, cpu_ctx(cpu));
}

void BPF_STRUCT_OPS(chameleon_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 t0;
	bool got;

	if (!cpu_valid(cpu))
		return;
	/* A fuse or split waits for this CPU: time its side of the work. */
	t0 = cpu_ctx(cpu)->pending_for ? bpf_ktime_get_ns() : 0;
	/* This queue is served (hotplug_guard rescues one that is not). */
	WRITE_ONCE(cpu_ctx(cpu)->dispatched_at, t0 ?: bpf_ktime_get_ns());
	got = dispatch_cpu(cpu, prev);
	if (t0)
		pending_dispatched(cpu, t0, got);
}

void BPF_STRUCT_OPS(chameleon_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);
	struct chameleon_assignment a;
	struct cpu_ctx *cc;
	struct rep_ctx *rc;
	u64 now;

	if (!tctx || !cpu_valid(cpu))
		return;
	cc = cpu_ctx(cpu);
	rc = &reps[CPU_IDX(cpu)];
	now = bpf_ktime_get_ns();

	repay_resume_lag(p, tctx);
	/* A stolen task arrives with the victim CPU's clock. */
	rebase_to(p, tctx, cpu);
	cc->vclock = chameleon_vtime_advance(cc->vclock, p->scx.dsq_vtime);
	cc->curr_vtime = p->scx.dsq_vtime;
	cc->curr_weight = task_weight(p, tctx);
	cc->curr_started = now;
	cc->curr_pid = p->pid;
	cc->running = 1;
	tctx->started_at = now;
	if (cc->local_from)
		pending_switched(cpu, false);

	/*
	 * Only kthreads bound here (any kthread, on a kernel-work context)
	 * run on a lent CPU. Anything else got here past the fuse (a kick
	 * that raced with this CPU's dispatch): end its slice now rather than
	 * at its end. Not a task inside
	 * migrate_disable() (the agent in a syscall, say): the kernel puts it
	 * back on this CPU's local queue without asking us, so each kick
	 * preempted it again at once (the agent 22,000 times in a second
	 * under bench/aash_overhead, the kernel's ENQ_SKIP_MIGRATION_DISABLED
	 * counting every one); it keeps a short slice instead.
	 */
	if (cc->borrowed_by && !lent_cpu_runs(cpu, p)) {
		if (is_migration_disabled(p))
			p->scx.slice = p->scx.slice < min_gran_ns ? p->scx.slice : min_gran_ns;
		else
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}

	/* Its object lives on its representative only. */
	if (tctx->fused_rep && tctx->fused_rep - 1 != cpu)
		split_owned(tctx, p->pid, CHAMELEON_SPLIT_MIGRATE);
	/*
	 * Another task took the representative: split. Not for a kthread (a
	 * kworker, ksoftirqd, rcu_preempt): its turn is short, so the object
	 * waits for its owner through it, as a lent CPU serves bound kthreads
	 * without a split; the guard timer splits if the owner stays away for
	 * CHAMELEON_GUARD_NS. proxy_stress: unbound kthreads (rcu_preempt, an
	 * unbound kworker, kdamond) that found CPU 0 split its object 13 times
	 * while 100 lines went to the console, each split and fuse moving IRQs.
	 */
	if (rc->state == REP_FUSED && rc->owner != p->pid && !(p->flags & PF_KTHREAD))
		split(cpu, CHAMELEON_SPLIT_PREEMPT);
	/* Tax and fused time accrue only while the owner runs (stopping charged the rest). */
	if (rc->owner == p->pid) {
		rc->charged_until = now;
		rc->owner_off_at = 0;
	}
	if (tctx->tagged && assignment_of(p, &a) && a.cpus[0] == cpu &&
	    a.nr_cpus >= 2) {
		if (tctx->assign_gen != a.generation)
			place_vthreads(tctx, &a);
		grow_partial(tctx, &a, cpu, p->pid);
		try_fuse(p, tctx, &a, cpu);
		if (READ_ONCE(reps[CPU_IDX(cpu)].state) == REP_FUSED)
			perf_set(cpu, cc, SCX_CPUPERF_ONE);
	}
}

void BPF_STRUCT_OPS(chameleon_tick, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct chameleon_assignment *a;
	struct task_ctx *tctx;
	struct rep_ctx *rc;
	s32 pid = p->pid;
	u64 now;

	if (cpu_valid(cpu))
		perf_update(cpu, cpu_ctx(cpu), bpf_ktime_get_ns());
	if (!cpu_valid(cpu))
		return;
	if (reps[CPU_IDX(cpu)].owner != pid) {
		/* On a slow CPU while a fast one idles: enqueue moves it. */
		if (wants_fast(p, cpu) && fast_cpu_idles(p))
			p->scx.slice = 0;
		return;
	}
	rc = &reps[CPU_IDX(cpu)];
	tctx = task_ctx(p);
	if (!tctx)
		return;
	now = bpf_ktime_get_ns();
	charge_tax(p, tctx, rc, now);
	if (rc->state != REP_FUSED)
		return;
	/* The node manager took the object away or gave it other CPUs. */
	a = bpf_map_lookup_elem(&assignments, &pid);
	if (!a || a->generation != rc->generation) {
		split(cpu, CHAMELEON_SPLIT_RETAG);
		return;
	}
	/*
	 * A retag may change the tax or the class alone: from now on. Not
	 * into or out of kwork, whose fuse gave the module the other CPU
	 * (the representative's IRQs to the sibling): the split must hand
	 * back what the fuse lent (kwork, retagged uni: IRQ 4 stayed on the
	 * sibling for good, the representative's proxy never reclaimed).
	 */
	if ((rc->flags ^ a->flags) & CHAMELEON_ASSIGN_KWORK) {
		split(cpu, CHAMELEON_SPLIT_RETAG);
		return;
	}
	rc->tax = a->tax;
	rc->flags = a->flags;
	if (lend_due(cpu, rc, now, lend_wait_ns + 2 * CHAMELEON_GUARD_NS))
		split(cpu, CHAMELEON_SPLIT_BOUND);
	else if (!(rc->flags & CHAMELEON_ASSIGN_HOLD) && waiter_due(rc, tctx, now))
		split(cpu, CHAMELEON_SPLIT_TICK);
}

void BPF_STRUCT_OPS(chameleon_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);
	struct cpu_ctx *cc;
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
	cc = cpu_ctx(cpu);
	now = bpf_ktime_get_ns();
	delta = now - tctx->started_at;
	tctx->started_at = 0;
	tctx->run_ns += delta;
	scx_bpf_task_set_dsq_vtime(p, p->scx.dsq_vtime +
				   chameleon_vtime_charge(delta, task_weight(p, tctx)));
	cpu_stats[CPU_IDX(cpu)].busy_ns += delta;
	cc->running = 0;
	cc->curr_pid = 0;
	if (cc->local_from)
		pending_switched(cpu, true);
	if (cc->lend_owed_by)
		lend_owed_served(cc, p);

	rc = &reps[CPU_IDX(cpu)];
	if (rc->owner == p->pid) {
		/*
		 * The object lives while its owner runs here. It blocked or
		 * is being moved (a property change dequeues it): give the
		 * CPUs back now. Otherwise the next task decides: another of
		 * ours splits it in running(), a higher class in
		 * cpu_release() (which the kernel calls right after this),
		 * and the owner itself, its slice renewed or its preemption
		 * over, carries on fused.
		 */
		if (!runnable)
			split(cpu, CHAMELEON_SPLIT_SLEEP);
		else
			rc->owner_off_at = now;
		charge_tax(p, tctx, rc, now);
	}
	/* A CPU-bound task never wakes: its lost DEMAND is retried here. */
	if (tctx->tagged && tctx->demand_drops != READ_ONCE(nr_events_dropped)) {
		s32 pid = p->pid;

		if (!bpf_map_lookup_elem(&assignments, &pid))
			redemand_if_lost(p, tctx);
	}
}

/* Allocate the task's context where sleeping is allowed (fork, attach). */
s32 BPF_STRUCT_OPS(chameleon_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	/* The cgroup it joins: its cpu.weight (enable() keeps it). */
	tctx->wcg = bpf_core_field_exists(args->cgroup) ? weight_cgroup_id(args->cgroup) : 0;
	return 0;
}

void BPF_STRUCT_OPS(chameleon_enable, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	u64 cgid = task_cgroup_id(p);
	struct chameleon_tag *tag;
	struct task_ctx *tctx;
	u32 level;
	u64 wcg;

	tctx = task_ctx(p);
	if (!tctx) {
		scx_bpf_error("pid %d has no task context after init_task", p->pid);
		return;
	}
	wcg = tctx->wcg;
	__builtin_memset(tctx, 0, sizeof(*tctx));
	tctx->wcg = wcg;
	tctx->tags_gen = tags_gen;
	tctx->cgid = cgid;
	tctx->vcpu = cpu_valid(cpu) ? cpu : -1;
	scx_bpf_task_set_dsq_vtime(p, cpu_valid(cpu) ? cpu_ctx(cpu)->vclock : 0);

	tag = bpf_map_lookup_elem(&tags, &cgid);
	level = tag ? chameleon_tag_object_level(tag->level, tag->smt) : 0;
	if (level) {
		tctx->tagged = 1;
		emit_demand(p, tctx, cpu, cgid, level);
	}
}

void BPF_STRUCT_OPS(chameleon_disable, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx)
		return;
	/*
	 * Leaving sched_ext (exit, or another class) while counted runnable:
	 * no stopping(!runnable) follows to uncount it.
	 */
	count_untagged(p, tctx, cpu, false);
	cg_count(tctx, false);
	if (tctx->fused_rep) {
		struct rep_ctx *rc = rep_ctx(tctx->fused_rep - 1);

		split_owned(tctx, p->pid, CHAMELEON_SPLIT_EXIT);
		/* tick() charges the owner by pid: a reused pid must not match. */
		if (rc && rc->owner == p->pid)
			rc->owner = 0;
	}
	/*
	 * Only tagged tasks matter to the agent: no event per exit of
	 * everything. Run time is the kernel's own account of the task.
	 */
	if (tctx->tagged)
		emit_exit(p, cpu, BPF_CORE_READ(p, se.sum_exec_runtime),
			  tctx->fused_ns);
}

/*
 * A new cgroup (or one there when we load) gets its cpu.weight
 * (cgroup_weight.bpf.h), and inherits its parent's tag in force (it has
 * none of its own yet); the agent may overwrite it with the cgroup's own
 * tag later.
 */
s32 BPF_STRUCT_OPS(chameleon_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	struct chameleon_tag *tag;
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
	tag = bpf_map_lookup_elem(&tags, &pid);
	if (tag)
		bpf_map_update_elem(&tags, &id, tag, BPF_NOEXIST);
	return 0;
}

/* A removed cgroup's tag and weight are dropped. */
void BPF_STRUCT_OPS(chameleon_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;

	bpf_map_delete_elem(&tags, &id);
	bpf_map_delete_elem(&cg_weights, &id);
}

void BPF_STRUCT_OPS(chameleon_cpu_online, s32 cpu)
{
	if (cpu_valid(cpu)) {
		struct cpu_ctx *cc = cpu_ctx(cpu);

		cc->online = 1;
		hotplug_cpu_back(cpu);
	}
	__sync_fetch_and_add(&nr_cpu_online_events, 1);
	emit(CHAMELEON_EV_CPU_ONLINE, cpu, NULL, true);
}

void BPF_STRUCT_OPS(chameleon_cpu_offline, s32 cpu)
{
	if (cpu_valid(cpu)) {
		struct cpu_ctx *cc = cpu_ctx(cpu);

		cc->online = 0;
		cc->running = 0;
		cc->curr_pid = 0;
		/* A lent CPU leaving splits its object, and so does its representative. */
		if (cc->borrowed_by)
			split(cc->borrowed_by - 1, CHAMELEON_SPLIT_OFFLINE);
		split(cpu, CHAMELEON_SPLIT_OFFLINE);
		cc->pending_for = 0;
		cc->local_from = 0;
		hotplug_cpu_gone(cpu);
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
		scx_bpf_error("%u CPUs, at most %d supported", nr_cpus,
			      CHAMELEON_MAX_CPUS);
		return -E2BIG;
	}
	init_at = bpf_ktime_get_ns();
	online = scx_bpf_get_online_cpumask();
	bpf_for(cpu, 0, nr_cpus) {
		if (cpu < CHAMELEON_MAX_CPUS)
			cpu_ctx(cpu)->online = bpf_cpumask_test_cpu(cpu, online);
	}
	scx_bpf_put_cpumask(online);
	proxy_check_abi();
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
	return guard_start();
}

void BPF_STRUCT_OPS(chameleon_exit, struct scx_exit_info *ei)
{
	void *rec;

	UEI_RECORD(uei, ei);
	/*
	 * Wake the agent, which sleeps on the ring buffer, so that it sees the
	 * exit now: a discarded record carries no event, only the wakeup.
	 */
	rec = bpf_ringbuf_reserve(&events, sizeof(struct chameleon_event), 0);
	if (rec)
		bpf_ringbuf_discard(rec, BPF_RB_FORCE_WAKEUP);
}

#include "dump.bpf.h"

SCX_OPS_DEFINE(chameleon_ops,
	       .select_cpu	= (void *)chameleon_select_cpu,
	       .enqueue		= (void *)chameleon_enqueue,
	       .dispatch	= (void *)chameleon_dispatch,
	       .runnable	= (void *)chameleon_runnable,
	       .running		= (void *)chameleon_running,
	       .stopping	= (void *)chameleon_stopping,
	       .tick		= (void *)chameleon_tick,
	       .init_task	= (void *)chameleon_init_task,
	       .enable		= (void *)chameleon_enable,
	       .disable		= (void *)chameleon_disable,
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
		* task holding the CPU it waited as long as the RT task ran
		* (CI, rt_hog: 10 s, then the watchdog). We find no task by pid,
		* so exiting tasks are ours to queue like any other.
		*/
	       .flags		= SCX_OPS_ENQ_LAST | SCX_OPS_ENQ_EXITING,
	       .name		= "chameleon");
