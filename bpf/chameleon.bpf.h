/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations shared by the policy's compilation units. base.bpf.c defines
 * the state every unit reads (settings, task context, per-CPU state,
 * counters); each other .bpf.c holds one concept, built on the base and on
 * the concepts below it, and main.bpf.c the ops and the design. The units
 * form a stack: a unit calls only units below it (the order of the sections
 * below, bottom first), and the static inline helpers here read only the
 * base's state.
 *
 * Functions across units are of two kinds. Global ones (no `static`, not
 * __hidden, scalar or __arg_trusted arguments, scalar result) are verified
 * once per program that calls them rather than at every call site: the heavy
 * ones with loops (split, the fuse, the pickers, stealing). __hidden ones are
 * verified like static functions, at each call, and may take and return any
 * pointer: the small accessors.
 */
#ifndef __CHAMELEON_BPF_H
#define __CHAMELEON_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "vtime.h"
#include "tax.h"
#include "exec_object.h"
#include "preempt.h"
#include "cpuperf.h"
#include "role.h"
#include "guard.h"

/* ---- base.bpf.c ---- */

/* Set by the agent before load. */
extern const volatile u64 slice_ns;
extern const volatile u32 nr_cpus;	/* possible CPUs, <= CHAMELEON_MAX_CPUS */
extern const volatile s32 agent_tgid;
extern const volatile u64 run_id;
extern const volatile u64 test_error_after_ns;
extern const volatile u64 min_gran_ns;
extern const volatile u64 lend_wait_ns;
extern const volatile u64 wake_gran_ns;
extern const volatile bool cpuperf_on;
extern const volatile bool hybrid;
extern const volatile u8 cpu_cg_shard[CHAMELEON_MAX_CPUS];
extern const volatile bool llc_queues;	/* LLC queues on (llc_queue.bpf.c) */
extern const volatile u32 nr_llcs;
extern const volatile u8 cpu_llc[CHAMELEON_MAX_CPUS];	/* each CPU's LLC, 0 .. nr_llcs - 1 */
extern const volatile bool idle_per_node;	/* SCX_OPS_BUILTIN_IDLE_PER_NODE is set */
extern u64 init_at;	/* when chameleon_init ran */
extern u64 tags_gen;	/* the agent's tag generation (base.bpf.c) */

/*
 * The longest a task waits behind one heavier task on an ordinary queue.
 * 200 slices: weights up to 200:1 are honoured exactly, beyond that (nice -20
 * against nice 19 is 8668:1) the lighter task still runs once a second.
 */
#define CHAMELEON_WAIT_BOUND_NS	(1000ULL * 1000 * 1000)
/* Period of the guard timer: well inside the lending bound. */
#define CHAMELEON_GUARD_NS	(10ULL * 1000 * 1000)
/*
 * Its period while nothing is queued, fused, lent, parked or draining on any
 * CPU: there is nothing it bounds, and an idle machine is woken 10 times a
 * second rather than 100. A task queued meanwhile waits at most this much
 * longer for the guard's bounds, all of which are longer.
 */
#define CHAMELEON_GUARD_IDLE_NS	(10 * CHAMELEON_GUARD_NS)
/*
 * An object whose owner stayed off its representative this long is split
 * (guard_object): the lent CPUs idle for nothing meanwhile, while nobody
 * waits on them longer than the lending bound whatever this is. Three guard
 * periods, not one: a per-CPU kthread's short turn there keeps the object,
 * and on an emulated or overcommitted machine such a turn can span tens of
 * ms of the guest's clock.
 */
#define CHAMELEON_AWAY_NS	(3 * CHAMELEON_GUARD_NS)
/* A guard this late past its period is restarted from a tick (guard_watch). */
#define CHAMELEON_GUARD_LATE_NS	(3 * CHAMELEON_GUARD_NS)
/* Well under the watchdog (timeout_ms 10 s), above any wait we mean to impose. */
#define CHAMELEON_STARVE_NS	(1000ULL * 1000 * 1000)
/*
 * A queue whose CPU has not dispatched for this long while tasks wait in it is
 * served by the others (hotplug_guard_cpu). Longer than a slice by far, and
 * far below the kernel's watchdog. Lent CPUs are left to the lending bound.
 */
#define CHAMELEON_RESCUE_NS	(200ULL * 1000 * 1000)
/*
 * The slice of a turn that must stay short whatever --slice-us says:
 * - a waiter's turn on a CPU a bound split gave back (lend_due()): the bound
 *   guarantees that a waiter runs; how much of the CPU the object keeps is
 *   the tax's to say, and a turn of a whole default slice (20 ms) per 50 ms
 *   bound would give a waiter at tax 0.01 nearly a third of the CPU;
 * - an object's owner running away from its representative: each slice end
 *   is a chance to send it home (task_rep()), which an owner preempted
 *   inside migrate_disable() cannot take at any one of them.
 */
#define CHAMELEON_SHORT_SLICE_NS	(5ULL * 1000 * 1000)

/*
 * Per-CPU state, one array per concept, each entry a cache line of its own
 * (no false sharing between CPUs), in .bss so that the agent reads it
 * mmapped. Defined in base.bpf.c; the unit that writes each is named on it.
 */

/* role.bpf.c: the CPU's role word (role.h), changed only by CAS. */
struct cpu_role {
	u32	word;
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/*
 * queue.bpf.c: what runs on the CPU and its queue's clock; written by the
 * CPU itself in running()/stopping()/dispatch, read by CPUs that consider
 * borrowing it or stealing from it.
 */
struct cpu_run {
	u64	vclock;		/* largest vtime started here (the CPU's clock) */
	u64	curr_vtime;	/* vtime of the running task when it started */
	u64	curr_started;
	u32	curr_weight;
	s32	curr_pid;	/* scx task running here, 0 if none */
	u8	running;	/* an scx task runs here */
	u8	far_llc;	/* the other LLC whose queue llc_far() looked at last */
	u8	pad[2];
	u32	steal_start;	/* rotating start of the far steal window */
	u32	balance_idx;	/* next CPU balance_pull() compares its queue with */
	s32	starved_pid;	/* queued here past the wait bound: runs next (guard.bpf.c) */
	u64	dispatched_j;	/* jiffies: last ops.dispatch here (changes once a jiffy) */
	u64	balanced_j;	/* jiffies: balance_pull()'s last look */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/*
 * queue.bpf.c: may the CPU's queue hold a task? Set by whoever puts one
 * there, after the insert; cleared by the CPU's own dispatch when it finds
 * the queue empty, which then looks again (queue_hint_clear()). So it is
 * never 0 while a task is queued, and a CPU looking for work to steal skips
 * a queue it reads 0 for without the kfunc's hash lookup of the queue.
 */
struct cpu_queue {
	u32	may_hold;
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/* lend.bpf.c: the CPU as a lent CPU, written by its representative and itself. */
struct cpu_lend {
	u64	pending_for;	/* decision seq << 32 | representative + 1 waiting for it */
	u64	local_from;	/* its dispatch for that fuse/split began (0: not yet) */
	u64	lend_wait_since; /* a task other than a pcpu kthread waits while lent */
	u64	lend_block_until; /* not lent again before this (after a bound split) */
	s32	lend_owed_by;	/* representative + 1 whose bound split gave it to its waiters */
	u32	lend_owed_n;	/* ... how many waited then: each has a turn before it is lent again */
	u64	lend_owed_j;	/* ... jiffies before that split: a waiter became runnable by then */
	u32	lend_pinned;	/* the guard's last move left a waiter that can run only here */
	u32	local_ns;	/* its own part of decision local_seq, ns */
	u32	local_seq;
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/* hotplug.bpf.c: the kernel's view of the CPU, mirrored, and its way down. */
struct cpu_hotplug {
	u32	online;
	u32	drain;		/* its queue is being moved out (offline, or unserved) */
	u32	dying;		/* offline, the kernel may still wait for it to empty */
	u64	queued_seen_j;	/* guard: first pass that found its queue holding tasks, 0: empty */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/* preempt.bpf.c: a higher class holds the CPU. */
struct cpu_release {
	u64	released_at;	/* a higher class took it then, 0: ours (preempt.h) */
	u64	local_seen_at;	/* guard: local queue unserved since (preempt.h) */
	u64	rt_seen_at;	/* guard: an RT task runs here, its queue waiting, since */
	u32	released_kthread; /* released_at: taken by a per-CPU kthread */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/* fast.bpf.c: the performance target the CPU last asked for. */
struct cpu_perf {
	u32	perf_target;	/* last handed to the kernel */
	u32	perf_set;	/* perf_target is valid */
	u64	perf_at;	/* start of the use window */
	u64	perf_busy;	/* busy_ns then */
	u64	nr_sets;	/* targets handed to the kernel (a count per CPU, not shared) */
	u32	perf_ticks;	/* this CPU's ticks since perf_at */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/* The object a representative CPU runs fused (exec_object.bpf.c; valid while REP). */
struct rep_ctx {
	u32	nr_cpus;		/* fused CPUs, cpus[0] = this CPU */
	u32	nr_requested;		/* CPUs of the whole object */
	u32	reason;			/* of the last split */
	s32	owner;			/* pid of the fused task */
	u32	seq;			/* of the decision (fuse or split) in flight */
	u32	pending_kind;		/* event to emit when pending drains */
	u32	flags;			/* enum chameleon_assign_flags of the object */
	u32	generation;		/* of the assignment it was fused from */
	u64	pending;		/* seq << 32 | positions not yet idle / back */
	u32	tax;			/* hundredths, refreshed from the assignment */
	/*
	 * Accumulators of loops, in memory, where one in a register would
	 * make each turn of a loop a new state for the verifier: the fuse's
	 * or the split's positions (one decision at a time: the role CAS that
	 * begins it), and lend_due()'s answer to this CPU's own tick.
	 */
	u32	decision_acc;
	u32	tick_acc;
	u64	owner_cgid;
	u64	decision_at;		/* of the fuse or split in flight */
	u64	decision_cost;
	u64	fused_at;
	u64	split_at;
	u64	split_fused_ns;		/* how long the object the last split ended lived */
	u64	charged_until;		/* tax charged up to here */
	u64	owner_off_at;		/* the owner stopped, runnable (0: it runs) */
	s32	cpus[CHAMELEON_OBJ_MAX_CPUS];	/* [0] itself; -1 past nr_cpus (try_fuse) */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

/*
 * llc_queue.bpf.c: an LLC's shared queue and its clock. vclock is advanced by
 * the LLC's CPUs as they take from the queue, may_hold set by whoever puts a
 * task there (write-if-changed) and cleared by the guard; nr_unfit counts the
 * LLC's CPUs that are not NATIVE or not online (role_cas(), hotplug), each
 * change a CPU's role or hotplug event. All written from within the LLC but
 * for a representative lending a CPU of another LLC.
 */
struct llc_run {
	u64	vclock;		/* largest vtime taken from the queue (its clock) */
	u32	may_hold;	/* the queue may hold a task (as cpu_queue's) */
	s32	nr_unfit;	/* CPUs not NATIVE or offline: the queue takes nothing */
} __attribute__((aligned(CHAMELEON_CACHELINE)));

extern struct llc_run llc_runs[CHAMELEON_MAX_LLCS];
/* LLCs whose queue the guard looks at (bit l: LLC l), set with may_hold. */
extern u64 llc_need;

extern struct cpu_role cpu_roles[CHAMELEON_MAX_CPUS];
extern struct cpu_run cpu_runs[CHAMELEON_MAX_CPUS];
extern struct cpu_lend cpu_lends[CHAMELEON_MAX_CPUS];
extern struct cpu_hotplug cpu_hps[CHAMELEON_MAX_CPUS];
extern struct cpu_release cpu_releases[CHAMELEON_MAX_CPUS];
extern struct cpu_perf cpu_perfs[CHAMELEON_MAX_CPUS];
extern struct rep_ctx reps[CHAMELEON_MAX_CPUS];
extern struct chameleon_cpu_stats cpu_stats[CHAMELEON_MAX_CPUS];
extern struct chameleon_invariants invariants;

/* Counters the agent reads that more than one unit touches (base.bpf.c). */
extern u64 nr_events_dropped, nr_demand_dropped;	/* events */
extern u64 nr_starved, nr_guard_restarts;		/* guard */
extern u32 nr_to_drain;					/* hotplug */
extern u32 nr_not_native;				/* role */
extern u64 nr_rescued;					/* hotplug */

struct task_ctx {
	u64	started_at;	/* when it last started running, 0 while it does not */
	/*
	 * p->se.sum_exec_runtime then: a run's length is the kernel's own
	 * account of it (update_curr() runs before ops.stopping), with no
	 * clock read when it stops.
	 */
	u64	exec_at;
	/*
	 * Charged since p->scx.dsq_vtime was last stored: its vtime is the
	 * sum (task_vtime()). stopping() adds here rather than store with a
	 * kfunc call at every switch; the next store folds it in.
	 */
	u64	vtime_owed;
	s32	vcpu;		/* CPU whose clock p->scx.dsq_vtime refers to */
	u8	tagged;		/* its cgroup has a tag: it may get an object */
	u8	sleep_told;	/* the agent was told it sleeps: tell it the wake */
	u8	counted;	/* in cpu_stats[].nr_untagged (count_untagged) */
	u8	wake_idle;	/* select_cpu claimed its idle CPU, enqueue hands it over */
	u8	wake_busy;	/* select_cpu searched and found no idle CPU: enqueue need not */
	u8	awake;		/* runnable since task_wakes(); stopping(!runnable) clears it */
	u8	enabled_before;	/* enable() ran before: a return from another class */
	u8	exit_told;	/* the agent was sent its TASK_EXIT */
	u32	assign_gen;	/* generation of the object vruntimes[] refer to */
	s32	fused_rep;	/* representative + 1 it last fused on, 0 if none */
	/*
	 * CPU + 1 whose queue the guard is moving it to (move_queued), its
	 * vtime already on that CPU's clock; 0 otherwise.
	 */
	s32	moving_to;
	u32	weight;		/* task_weight() at its last start: its run is charged at it */
	u32	weight_nice;	/* p->scx.weight when @weight was computed */
	u64	weight_at;	/* when @weight was computed (task_weight_at()) */
	u64	cgid;		/* leaf cgroup whose tag it follows */
	u64	tags_gen;	/* tags_gen when its tag was last read */
	u64	demand_drops;	/* nr_demand_dropped when it last asked (redemand) */
	u64	demand_at;	/* when it last asked */
	u64	run_ns;
	u64	fused_ns;
	u64	resume_lag;	/* vtime lent to queue it in front after a kthread's turn (preempt.h) */
	u64	wcg;		/* cgroup whose cpu.weight it follows, 0: none (weight.bpf.c) */
	u64	wcounted;	/* cgroup it is counted runnable in, 0: none */
	/* As a waker: whom it last woke by a sync wakeup, and how it wakes (select_cpu). */
	s32	last_wakee;
	struct chameleon_wake_rec wake_rec;
	/* Virtual threads: its place in the queue of each CPU of its object. */
	u64	vruntimes[CHAMELEON_OBJ_MAX_CPUS];
};

struct task_ctx *task_ctx(struct task_struct *p) __hidden;
struct task_ctx *task_ctx_create(struct task_struct *p) __hidden;
u64 jiffies_to_ns(u64 j) __hidden;
/* Is @p inside migrate_disable()? */
bool task_migration_disabled(struct task_struct *p __arg_trusted);
/* Is @cpu lent as an object's kernel-work context? */
bool kwork_lent(s32 cpu) __hidden;

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

extern struct cpu_queue cpu_queues[CHAMELEON_MAX_CPUS];

/*
 * The CPUs the guard looks at (guard.bpf.c), bit N for CPU N, each word of
 * 64 CPUs on a cache line of its own. A bit is set, only if clear, by
 * whoever gives its CPU something the guard bounds: a task in its queue
 * (queue_hint_set()), a role other than NATIVE (role_cas()), a higher class
 * taking it, a drain. The guard alone clears it, when it finds nothing there
 * to bound, and then looks again. So the guard's pass costs what needs it,
 * not nr_cpus; a set racing with the clear is found by its sweep.
 */
struct guard_word {
	u64	bits;
} __attribute__((aligned(CHAMELEON_CACHELINE)));

#define CHAMELEON_GUARD_WORDS	(CHAMELEON_MAX_CPUS / 64)
extern struct guard_word guard_need[CHAMELEON_GUARD_WORDS];

/* @cpu has something the guard bounds (base.bpf.c; global: verified once). */
int guard_need_set(s32 cpu);

/* A task was just put into @cpu's queue. */
static __always_inline void queue_hint_set(s32 cpu)
{
	if (!READ_ONCE(cpu_queues[CPU_IDX(cpu)].may_hold))
		WRITE_ONCE(cpu_queues[CPU_IDX(cpu)].may_hold, 1);
	guard_need_set(cpu);
}

/* @cpu's queue may hold a task: look (scx_bpf_dsq_nr_queued) before stealing. */
static __always_inline bool queue_hint(s32 cpu)
{
	return READ_ONCE(cpu_queues[CPU_IDX(cpu)].may_hold);
}

static __always_inline struct cpu_run *cpu_run(s32 cpu)
{
	return &cpu_runs[CPU_IDX(cpu)];
}

/* @cpu's LLC (cpu_valid(@cpu)), masked for the verifier. */
static __always_inline u32 llc_of(s32 cpu)
{
	u32 l = cpu_llc[CPU_IDX(cpu)];

	barrier_var(l);
	return l & (CHAMELEON_MAX_LLCS - 1);
}

static __always_inline struct llc_run *llc_run(u32 l)
{
	return &llc_runs[l & (CHAMELEON_MAX_LLCS - 1)];
}

/*
 * The kernel's idle search by mask. On a machine of several NUMA nodes the
 * agent sets SCX_OPS_BUILTIN_IDLE_PER_NODE: each node's idle CPUs are a mask
 * of their own (written by that node's CPUs only). The search looks in
 * @near's node, then in the nearest node with an idle CPU (idle_beyond()),
 * and, if @mask leaves none there, in every node by distance (the kernel's
 * own widening, the one search that cannot miss). There the global kfuncs
 * are errors, so every idle search by mask goes through these two.
 */
s32 idle_beyond(s32 node);

static __always_inline s32 idle_pick_in(const struct cpumask *mask, s32 near)
{
	s32 node, far, cpu;

	if (!idle_per_node)
		return scx_bpf_pick_idle_cpu(mask, 0);
	node = scx_bpf_cpu_node(near);
	cpu = scx_bpf_pick_idle_cpu_node(mask, node, SCX_PICK_IDLE_IN_NODE);
	if (cpu >= 0 || (far = idle_beyond(node)) < 0)
		return cpu;
	cpu = scx_bpf_pick_idle_cpu_node(mask, far, SCX_PICK_IDLE_IN_NODE);
	if (cpu >= 0)
		return cpu;
	return scx_bpf_pick_idle_cpu_node(mask, node, 0);
}

/* The idle CPUs of @near's node (of the machine without per-node masks). */
static __always_inline const struct cpumask *idle_mask_near(s32 near)
{
	if (idle_per_node)
		return scx_bpf_get_idle_cpumask_node(scx_bpf_cpu_node(near));
	return scx_bpf_get_idle_cpumask();
}

/* Is @q an LLC queue's id (CHAMELEON_LLC_Q0 + l)? */
static __always_inline bool llc_q_valid(s32 q)
{
	return q >= CHAMELEON_LLC_Q0 && q < CHAMELEON_LLC_Q0 + CHAMELEON_MAX_LLCS &&
	       q - CHAMELEON_LLC_Q0 < nr_llcs;
}

/* @cpu's LLC turned unfit for its queue (@d 1) or fit again (-1). */
static __always_inline void llc_unfit_add(s32 cpu, s32 d)
{
	if (llc_queues && cpu_valid(cpu))
		__sync_fetch_and_add(&llc_run(llc_of(cpu))->nr_unfit, d);
}

/*
 * The clock a vtime queued in (or last charged against) queue @q is on: a
 * CPU's (q a CPU) or an LLC's (q = CHAMELEON_LLC_Q0 + l); NULL for neither.
 */
static __always_inline u64 *vclock_of(s32 q)
{
	if (cpu_valid(q))
		return &cpu_runs[CPU_IDX(q)].vclock;
	if (llc_q_valid(q))
		return &llc_run(q - CHAMELEON_LLC_Q0)->vclock;
	return NULL;
}

static __always_inline struct cpu_lend *cpu_lend(s32 cpu)
{
	return &cpu_lends[CPU_IDX(cpu)];
}

static __always_inline bool cpu_online(s32 cpu)
{
	return cpu_valid(cpu) && READ_ONCE(cpu_hps[CPU_IDX(cpu)].online);
}

/*
 * May this CPU kick others? Not once it is going offline (ops.cpu_offline
 * runs on it): a kick queues an irq_work on the kicking CPU, one left queued
 * on a CPU that dies never runs, and the scheduler's detach waits for it in
 * free_kick_syncs() for good. The guard timer kicks whatever such a CPU
 * would have.
 */
static __always_inline bool may_kick(void)
{
	return READ_ONCE(cpu_hps[CPU_IDX(bpf_get_smp_processor_id())].online);
}

/* Every kick goes through here (may_kick()). */
static __always_inline void kick_cpu(s32 cpu, u64 flags)
{
	if (may_kick())
		scx_bpf_kick_cpu(cpu, flags);
}

static __always_inline struct rep_ctx *rep_ctx(s32 cpu)
{
	return cpu_valid(cpu) ? &reps[CPU_IDX(cpu)] : NULL;
}

/* Counters of the CPU doing the work: only that CPU writes them. */
static __always_inline struct chameleon_cpu_stats *stats_here(void)
{
	u32 cpu = bpf_get_smp_processor_id();

	return cpu < CHAMELEON_MAX_CPUS ? &cpu_stats[CPU_IDX(cpu)] : NULL;
}

/* Kernel work that can run nowhere else: a lent CPU still runs it. */
static __always_inline bool is_pcpu_kthread(struct task_struct *p)
{
	return (p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1;
}


/*
 * Could @p run on some other CPU than the one it is on? Not inside
 * migrate_disable(), whose narrowed cpus_ptr nr_cpus_allowed does not show.
 */
static __always_inline bool task_movable(struct task_struct *p)
{
	return p->nr_cpus_allowed > 1 && !task_migration_disabled(p);
}

/*
 * The CPU @p is on, as the kernel's task_cpu() reads it (thread_info.cpu,
 * inside the task on x86-64 and arm64): a load where scx_bpf_task_cpu()
 * is a kfunc call, and every op asks. The kfunc where the field is not
 * there.
 */
static __always_inline s32 task_cpu_of(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return READ_ONCE(p->thread_info.cpu);
	return scx_bpf_task_cpu(p);
}

/*
 * A task's own (leaf) cgroup. Tags follow it, not the nearest cgroup with the
 * cpu controller that the kernel passes to the cgroup ops. Plain loads
 * through the task's BTF pointer (ops run under RCU), not BPF_CORE_READ()'s
 * probe-read calls: this runs on every wakeup and enqueue.
 */
static __always_inline u64 task_cgroup_id(struct task_struct *p)
{
	return p->cgroups->dfl_cgrp->kn->id;
}

/*
 * An object position, masked where the verifier sees it: bpf_for's bound is
 * compiled as (i - 1) <= 6, and verifiers before 7.0 do not carry that back
 * to i. barrier_var() keeps clang from dropping the mask as redundant.
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

/* ---- role.bpf.c: the role word and the one placement rule ---- */

static __always_inline u32 role_word(s32 cpu)
{
	return READ_ONCE(cpu_roles[CPU_IDX(cpu)].word);
}

static __always_inline u32 role_kind(s32 cpu)
{
	return chameleon_role_kind(role_word(cpu));
}

/* Lent to an object (the representative it is lent to: lent_to()). */
static __always_inline bool cpu_lent(s32 cpu)
{
	return cpu_valid(cpu) && role_kind(cpu) == CHAMELEON_ROLE_LENT;
}

static __always_inline s32 lent_to(s32 cpu)
{
	return chameleon_role_with(role_word(cpu));
}

static __always_inline bool cpu_parked(s32 cpu)
{
	return cpu_valid(cpu) && role_kind(cpu) == CHAMELEON_ROLE_PARKED;
}

/* The representative of a fused object. */
static __always_inline bool cpu_fused(s32 cpu)
{
	return cpu_valid(cpu) && role_kind(cpu) == CHAMELEON_ROLE_REP;
}

/*
 * Who lent @cpu runs: per-CPU kthreads bound to it (work a processor proxy
 * would take over), and any kthread on a kernel-work context; the rest waits
 * or is moved. One rule for dispatch, enqueue and running(): a kthread that
 * dispatch let in and running() preempted at once would come back to the
 * same queue for ever.
 */
static __always_inline bool lent_cpu_runs(s32 cpu, struct task_struct *p)
{
	return is_pcpu_kthread(p) || ((p->flags & PF_KTHREAD) && kwork_lent(cpu));
}

/*
 * @p's own vtime, on its CPU's clock (tctx->vcpu): as last stored, plus what
 * it was charged since. A queued task's p->scx.dsq_vtime alone orders it in
 * its queue: every insert into a vtime queue stores the sum and clears what
 * is owed (task_vtime_set(), or the insert and then the clear).
 */
static __always_inline u64 task_vtime(struct task_struct *p, struct task_ctx *tctx)
{
	return p->scx.dsq_vtime + tctx->vtime_owed;
}

static __always_inline void task_vtime_set(struct task_struct *p, struct task_ctx *tctx, u64 v)
{
	scx_bpf_task_set_dsq_vtime(p, v);
	tctx->vtime_owed = 0;
}

/*
 * The concept units, bottom first: each calls only units listed before it.
 * An inline helper that calls a concept unit lives in that unit's own
 * header (role.bpf.h, weight.bpf.h), included by the units above it.
 */

/* ---- events.bpf.c: the ring buffer to the agent ---- */
/* A task whose DEMAND may have been lost asks again at most this often. */
#define CHAMELEON_REDEMAND_NS	(20ULL * 1000 * 1000)
struct chameleon_event *event_reserve(u32 kind, s32 cpu) __hidden;
void event_submit(struct chameleon_event *ev, bool urgent) __hidden;
void emit(u32 kind, s32 cpu, struct task_struct *p, bool urgent) __hidden;
void emit_demand(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 cgid,
		 u32 level) __hidden;
void emit_exit(struct task_struct *p, s32 cpu, u64 run_ns, u64 fused_ns) __hidden;
bool demand_lost(struct task_ctx *tctx) __hidden;
void events_wake_agent(void) __hidden;

/* ---- weight.bpf.c: nice and cgroup cpu.weight (run_weight(): weight.bpf.h) ---- */
u64 weight_cgroup_id(struct cgroup *cgrp) __hidden;
void cg_count(struct task_ctx *tctx, bool on) __hidden;
u64 task_weight(struct task_struct *p, struct task_ctx *tctx) __hidden;
u64 task_weight_at(struct task_struct *p, struct task_ctx *tctx, u64 now) __hidden;
void cg_weight_init(struct cgroup *cgrp, u32 weight) __hidden;
void cg_weight_set(struct cgroup *cgrp, u32 weight) __hidden;
void cg_weight_move(struct task_struct *p, struct cgroup *to) __hidden;
void cg_weight_exit(u64 cgid) __hidden;

/* ---- preempt.bpf.c: a higher class holds the CPU ---- */
bool cpu_held(s32 cpu) __hidden;
int kthread_holds(s32 cpu);
u64 resume_vtime(s32 cpu, u64 vtime);
bool preempt_release(s32 cpu, struct task_struct *next, bool waiting) __hidden;
void local_insert_watch(s32 cpu) __hidden;
bool preempt_split_due(s32 cpu) __hidden;
void preempt_acquire(s32 cpu) __hidden;
u64 released_at(s32 cpu) __hidden;
bool higher_class_waits(s32 cpu) __hidden;
bool rt_hog_yields(s32 cpu) __hidden;
bool ext_server_serves(s32 cpu) __hidden;
bool dispatch_pinned(s32 cpu) __hidden;
bool rt_held_long(s32 cpu, u64 now) __hidden;

/* ---- role.bpf.c: role changes and idle searches (the rule: role.bpf.h) ---- */
bool role_cas(s32 cpu, u32 ev, s32 arg);
s32 roles_init(void) __hidden;
void idle_refused(s32 cpu) __hidden;
s32 select_idle_near(struct task_struct *p __arg_trusted, s32 prev_cpu, u64 wake_flags,
		     bool *is_idle) __hidden;
s32 pick_idle(struct task_struct *p __arg_trusted);
bool local_handoff(void) __hidden;
void direct(struct task_struct *p, struct task_ctx *tctx) __hidden;

/* ---- lend.bpf.c: lent CPUs and the numbered decisions ---- */
int obj_pos(struct rep_ctx *rc, s32 cpu) __hidden;
int dispatch_lent(s32 cpu);
s32 kwork_sibling(s32 cpu) __hidden;
void pending_dispatched(s32 cpu, u64 t0, bool dispatched) __hidden;
void pending_switched(s32 cpu, bool stopping) __hidden;
void lend_owed_served(s32 cpu, struct task_struct *p) __hidden;
void lend_owed_turn(s32 cpu, struct task_struct *p) __hidden;
int lend_due(s32 rep, u64 now, u64 bound_ns, u32 *acc);
int waiter_due(s32 rep, struct task_ctx *owner, u64 now);
u32 begin_decision(s32 rep, u64 now);
int publish_pending(s32 rep, u32 pending, u64 kick_flags, u32 seq);
int emit_object(s32 rep, u64 latency, u32 flags, u32 seq);

/* ---- fast.bpf.c: hybrid CPUs and performance targets ---- */
bool wants_fast(struct task_struct *p, s32 cpu) __hidden;
s32 pick_idle_fast(struct task_struct *p __arg_trusted);
bool fast_cpu_idles(struct task_struct *p) __hidden;
s32 fast_init(void) __hidden;
void perf_set(s32 cpu, u32 perf) __hidden;
void perf_update(s32 cpu, u64 now) __hidden;

/* ---- exec_object.bpf.c: fuse, tax, split ---- */
int split(s32 rep, u32 reason);
void split_owned(struct task_ctx *tctx, s32 pid, u32 reason) __hidden;
bool assignment_of(struct task_struct *p, struct chameleon_assignment *a) __hidden;
bool has_assignment(struct task_struct *p) __hidden;
s32 task_rep(struct task_struct *p, struct task_ctx *tctx) __hidden;
int object_running(struct task_struct *p __arg_trusted, s32 cpu);
u32 borrowable(struct task_ctx *tctx, struct chameleon_assignment *a, s32 rep, u64 now);
int try_fuse(struct task_struct *p __arg_trusted, struct task_ctx *tctx,
	     struct chameleon_assignment *a, s32 cpu, u64 t0);
int object_tick(struct task_struct *p __arg_trusted, s32 cpu);
int place_vthreads(struct task_ctx *tctx, struct chameleon_assignment *a);
int charge_tax(struct task_struct *p __arg_trusted, struct task_ctx *tctx, s32 cpu, u64 now);
int waiter_on_lent(s32 cpu, struct task_struct *waiter __arg_trusted);
bool lent_split_due(s32 cpu) __hidden;
void proxy_check_abi(void) __hidden;
int proxy_reclaim(s32 cpu);

/* ---- queue.bpf.c: per-CPU vtime queues ---- */
struct chameleon_steal_order *steal_order(s32 cpu, u32 *nr) __hidden;
void rebase_to(struct task_struct *p, struct task_ctx *tctx, s32 cpu) __hidden;
u64 queue_vtime(s32 cpu, u64 vtime) __hidden;
void repay_resume_lag(struct task_struct *p, struct task_ctx *tctx) __hidden;
u64 queue_hint_clear(s32 cpu, u64 nr) __hidden;
int steal(s32 cpu);
int balance_pull(s32 cpu, u64 mine);
bool keep_prev(s32 cpu, struct task_struct *prev __arg_trusted __arg_nullable, bool held) __hidden;
bool owner_next(s32 cpu, u64 vtime) __hidden;
bool renew(struct task_struct *p __arg_trusted, s32 cpu) __hidden;
bool wake_preempts(s32 cpu, u64 vtime) __hidden;

/* ---- llc_queue.bpf.c: an LLC's shared queue (calls queue.bpf.c, role, base) ---- */
s64 llc_enqueue(struct task_struct *p __arg_trusted, struct task_ctx *tctx, s32 cpu, u64 vtime,
		u64 enq_flags);
int llc_take(s32 cpu, struct task_struct *prev __arg_trusted __arg_nullable);

/* ---- wake.bpf.c: tags, a task's wake and sleep ---- */
void tag_check(struct task_struct *p, struct task_ctx *tctx) __hidden;
void tag_check_renewed(struct task_struct *p __arg_trusted) __hidden;
void redemand_if_lost(struct task_struct *p, struct task_ctx *tctx) __hidden;
void count_untagged(struct task_struct *p, struct task_ctx *tctx, bool add) __hidden;
void task_leaves(struct task_struct *p, struct task_ctx *tctx, s32 cpu) __hidden;
u32 tag_level(u64 cgid) __hidden;
void tag_inherit(u64 cgid, u64 parent) __hidden;
void tag_drop(u64 cgid) __hidden;

/* ---- place.bpf.c: where a task goes ---- */
/* How ops.enqueue inserts a task (place_task()). */
enum chameleon_insert {
	INSERT_QUEUE,		/* @cpu's vtime queue at @vtime; whom to wake: place_queued() */
	INSERT_FRONT,		/* @cpu's vtime queue at @vtime, no slice of its own */
	INSERT_LOCAL,		/* this CPU's local queue */
	INSERT_LOCAL_ON,		/* @cpu's local queue */
	INSERT_LOCAL_ON_VTIME,	/* @cpu's local queue, its vtime stored first */
	INSERT_HANDOFF,		/* idle @cpu takes it (handoff()) */
	INSERT_HANDOFF_FAST,	/* idle fast @cpu takes it (hybrid: counted as a fast move) */
	INSERT_WAITER,		/* queued on lent @cpu as a waiter: waiter_on_lent() */
};
/* Where a task goes, how it is inserted, and how @cpu is kicked after (0: not). */
struct placement {
	u64	vtime;
	u64	kick;
	s32	cpu;
	u32	how;
};
int place_task(struct task_struct *p __arg_trusted, struct task_ctx *tctx, s32 cpu, u64 enq_flags,
	       struct placement *pl);
void place_queued(struct task_struct *p, u64 enq_flags, struct placement *pl) __hidden;
s32 pick_rep_to_split(struct task_struct *p __arg_trusted, s32 cpu) __hidden;
s32 pick_other(struct task_struct *p __arg_trusted, s32 cpu);
void handoff(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 enq_flags) __hidden;

/* ---- drain.bpf.c: moving a queue's tasks out ---- */
enum chameleon_move {
	MOVE_FORBIDDEN	= 0,	/* tasks the CPU's role does not let run there */
	MOVE_MOVABLE	= 1,	/* every task that may run elsewhere (the CPU does not serve its queue) */
	MOVE_ALL	= 2,	/* every task; the rest to the global queue (the CPU is going away) */
};
u32 move_queue(s32 cpu, u32 mode);
u32 move_llc_queue(u32 l, u32 max);
u32 move_queue_pinned(void) __hidden;

/* ---- hotplug.bpf.c ---- */
void hotplug_cpu_gone(s32 cpu) __hidden;
void hotplug_cpu_back(s32 cpu) __hidden;
int hotplug_guard_cpu(u32 c, u64 now, u64 now_j);
int hotplug_dying(u32 c);
void hotplug_guard_released(s32 c) __hidden;
void hotplug_unrunnable(s32 cpu) __hidden;

/* ---- guard.bpf.c: the guard timer ---- */
int guard_queue(s32 cpu, u64 now);
int guard_object(s32 cpu, u64 now);
int starve_check(s32 cpu, u64 now, u64 now_j);
int guard_llc(u32 l, u64 now_j);
int guard_llcs(u64 now_j);
s32 guard_start(void) __hidden;
void guard_watch(u64 now) __hidden;
void guard_soon(void) __hidden;
bool dispatch_starved(s32 cpu) __hidden;

/* ---- park.bpf.c ---- */
bool dispatch_parked(s32 cpu) __hidden;

/* ---- task_life.bpf.c ---- */
void life_enable(struct task_struct *p __arg_trusted, struct task_ctx *tctx) __hidden;
void life_disable(struct task_struct *p __arg_trusted, struct task_ctx *tctx) __hidden;
void life_exit(struct task_struct *p __arg_trusted, struct task_ctx *tctx) __hidden;

/* ---- dump.bpf.c ---- */
void dump_all(void) __hidden;
void dump_one_cpu(s32 cpu, bool idle) __hidden;
void dump_one_task(struct task_struct *p) __hidden;

#endif /* __CHAMELEON_BPF_H */
