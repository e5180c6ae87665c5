/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_chameleon: the sched_ext policy.
 *
 * Design
 * ------
 * Every CPU has its own queue (a user DSQ whose id is the CPU number) ordered
 * by virtual time, and its own virtual clock (vclock[cpu], the largest vtime
 * that has started running there, like a CFS runqueue's min_vruntime). This is
 * the cluster-scheduling substrate of Chameleon (§3.3): execution objects and
 * the virtual threads that decide when a task may borrow a neighbour compare
 * a task's place in a borrowed CPU's queue with what runs there, so each CPU
 * needs its own ordered queue and clock.
 *
 * - select_cpu: the kernel's default idle-CPU search. A task that finds an
 *   idle CPU goes straight to its local queue: there is nothing to order it
 *   against.
 * - enqueue: queue on the task's CPU, vtime rebased to that CPU's clock and
 *   limited to one slice of credit; wake an idle CPU the task may run on, so
 *   that it can steal the work.
 * - dispatch: take the head of this CPU's queue, else steal the head of
 *   another CPU's queue (nearest id first). Queues of offline CPUs are drained
 *   the same way, which is what lets us survive hotplug.
 * - running/stopping: advance the CPU's clock; charge delta * 100 / weight.
 * - cpu_online/cpu_offline: report the event. Implementing them tells the
 *   kernel we handle hotplug, so it does not eject the scheduler.
 *
 * Execution objects (fuse, split, tax) live in exec_object.bpf.h; the hooks
 * here call into it only for tagged tasks and for CPUs lent to an object.
 * SCX_OPS_ENQ_LAST is set so that a task preempted on a borrowed CPU comes
 * back through enqueue() instead of silently continuing to run there.
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

char _license[] SEC("license") = "GPL";

/* Set by the agent before load. */
const volatile u64 slice_ns = 5ULL * 1000 * 1000;
const volatile u32 nr_cpus = 1;	/* possible CPUs, <= CHAMELEON_MAX_CPUS */

UEI_DEFINE(uei);

/* What runs on a CPU, for the fuse decisions of other CPUs. */
struct cpu_ctx {
	u64	vclock;		/* largest vtime started here (the CPU's clock) */
	u64	curr_vtime;	/* vtime of the running task when it started */
	u64	curr_started;
	u32	curr_weight;
	u8	running;	/* an scx task runs here */
	u8	online;
	u8	pad[2];
};

/* Per-CPU state, indexed by CPU id. In .bss so the agent reads it mmapped. */
struct cpu_ctx cpu_ctxs[CHAMELEON_MAX_CPUS];
struct chameleon_cpu_stats cpu_stats[CHAMELEON_MAX_CPUS];
u64 nr_cpu_online_events, nr_cpu_offline_events, nr_events_dropped;
/*
 * Bumped by the agent after it rewrote tags at run time: each task compares
 * it with its own copy at its next enqueue and re-reads its tag if stale.
 */
u64 tags_gen;

struct task_ctx {
	u64	started_at;	/* when it last started running */
	s32	vcpu;		/* CPU whose clock p->scx.dsq_vtime refers to */
	u8	tagged;		/* its cgroup has a tag: it may get an object */
	u8	woke;		/* became runnable since it last ran */
	u8	pad[2];
	u32	assign_gen;	/* generation of the object vruntimes[] refer to */
	u32	tax;		/* hundredths, from the assignment */
	u64	tags_gen;	/* tags_gen when its tag was last read */
	u64	run_ns;
	u64	fused_ns;
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

/* A task's own (leaf) cgroup, not the nearest one with the cpu controller. */
static u64 task_cgroup_id(struct task_struct *p)
{
	return BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
}

static struct chameleon_event *event_reserve(u32 kind, s32 cpu)
{
	struct chameleon_event *ev;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&nr_events_dropped, 1);
		return NULL;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->cpu = cpu;
	ev->ts_ns = bpf_ktime_get_ns();
	return ev;
}

static void event_set_task(struct chameleon_event *ev, struct task_struct *p)
{
	ev->pid = p->pid;
	ev->cgroup_id = task_cgroup_id(p);
	__builtin_memcpy(ev->comm, p->comm, sizeof(ev->comm));
}

/* A task or CPU event. */
static void emit(u32 kind, s32 cpu, struct task_struct *p)
{
	struct chameleon_event *ev = event_reserve(kind, cpu);

	if (!ev)
		return;
	if (p)
		event_set_task(ev, p);
	bpf_ringbuf_submit(ev, 0);
}

/*
 * A task wants an object of @level (0: no longer wants one). @cgid is given
 * because during a cgroup move the task still points at its old cgroup.
 */
static void emit_demand(struct task_struct *p, s32 cpu, u64 cgid, u32 level)
{
	struct chameleon_event *ev = event_reserve(CHAMELEON_EV_DEMAND, cpu);

	if (!ev)
		return;
	event_set_task(ev, p);
	ev->cgroup_id = cgid;
	ev->level = level;
	bpf_ringbuf_submit(ev, 0);
}

/* A tagged task leaves: how long it ran, and ran fused. */
static void emit_exit(struct task_struct *p, s32 cpu, u64 run_ns, u64 fused_ns)
{
	struct chameleon_event *ev = event_reserve(CHAMELEON_EV_TASK_EXIT, cpu);

	if (!ev)
		return;
	event_set_task(ev, p);
	ev->run_ns = run_ns;
	ev->fused_ns = fused_ns;
	bpf_ringbuf_submit(ev, 0);
}

/*
 * Rebase @p's vtime onto @cpu's clock if it was last charged against another
 * CPU's clock. Called wherever the task lands on a new queue or CPU.
 */
static void rebase_to(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	s32 from = tctx->vcpu;

	if (from == cpu || !cpu_valid(cpu))
		return;
	if (cpu_valid(from))
		p->scx.dsq_vtime = chameleon_vtime_rebase(p->scx.dsq_vtime,
							  cpu_ctxs[CPU_IDX(from)].vclock,
							  cpu_ctxs[CPU_IDX(cpu)].vclock);
	else
		p->scx.dsq_vtime = cpu_ctxs[CPU_IDX(cpu)].vclock;
	tctx->vcpu = cpu;
}

#include "exec_object.bpf.h"

/*
 * The tag in force for @p may have changed (cgroup @cgid's entry, or the
 * task moved): tell the agent (DEMAND with the object level, 0 = no longer
 * wants one). A fused object it may no longer hold is split now; the agent
 * withdraws it shortly.
 */
static void retag(struct task_struct *p, struct task_ctx *tctx, u64 cgid)
{
	struct chameleon_tag *tag = bpf_map_lookup_elem(&tags, &cgid);
	u32 level = tag ? chameleon_tag_object_level(tag->level, tag->smt) : 0;
	s32 cpu = scx_bpf_task_cpu(p);

	tctx->tags_gen = tags_gen;
	if (!level && !tctx->tagged)
		return;
	if (!level && cpu_valid(cpu) && reps[CPU_IDX(cpu)].owner == p->pid)
		split(cpu, CHAMELEON_SPLIT_RETAG);
	tctx->tagged = level > 0;
	tctx->woke = 1;
	emit_demand(p, cpu, cgid, level);
}

/*
 * An idle CPU @p may use that is not lent to an object, or -1. A lent CPU
 * idles on purpose, so the kernel's idle tracking hands it out like any
 * other; each one the picker returns here has its idle bit taken, which
 * keeps it out of later picks until it idles again after its object splits.
 */
static s32 pick_idle_unlent(struct task_struct *p)
{
	s32 cpu;
	u32 i;

	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (cpu < 0 || !cpu_borrowed(cpu))
			return cpu;
	}
	return -1;
}

s32 BPF_STRUCT_OPS(chameleon_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct chameleon_assignment *a;
	bool is_idle = false;
	s32 cpu;

	/* A task with an object belongs on its representative. */
	if (tctx && (a = task_assignment(p, tctx)) && cpu_valid(a->cpus[0]) &&
	    bpf_cpumask_test_cpu(a->cpus[0], p->cpus_ptr)) {
		cpu = a->cpus[0];
		if (!cpu_borrowed(cpu) && scx_bpf_test_and_clear_cpu_idle(cpu)) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
			tctx->woke = 1;
		}
		return cpu;
	}

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	/*
	 * A lent CPU looks idle but is not: prefer a really idle one. With none,
	 * queue on the lent CPU and compete with the object there (enqueue).
	 */
	if (is_idle && cpu_borrowed(cpu)) {
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

void BPF_STRUCT_OPS(chameleon_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p), idle;
	struct task_ctx *tctx = task_ctx(p);
	struct chameleon_cpu_stats *st = stats_here();
	struct chameleon_assignment *a;
	bool here = true;

	if (!tctx || !cpu_valid(cpu)) {
		/* Not ours to order (should not happen): keep it runnable. */
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, slice_ns, enq_flags);
		return;
	}

	if (tctx->tags_gen != tags_gen)
		retag(p, tctx, task_cgroup_id(p));

	/* The node manager frees the object of a long sleeper: tell it. */
	if (tctx->woke && tctx->tagged)
		emit(CHAMELEON_EV_WAKE, cpu, p);

	a = task_assignment(p, tctx);
	if (a) {
		s32 rep = a->cpus[0];

		if (cpu_valid(rep) && bpf_cpumask_test_cpu(rep, p->cpus_ptr)) {
			if (tctx->woke || tctx->assign_gen != a->generation)
				place_vthreads(tctx, a);
			here = cpu == rep;
			cpu = rep;
		}
	}
	tctx->woke = 0;

	/*
	 * SCX_ENQ_LAST: the task's slice ended and nothing else is queued here.
	 * Keep it running, unless this CPU is lent to an object or the task
	 * belongs on its representative.
	 */
	if ((enq_flags & SCX_ENQ_LAST) && here && !cpu_borrowed(cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
		return;
	}

	rebase_to(p, tctx, cpu);
	p->scx.dsq_vtime = chameleon_vtime_floor(p->scx.dsq_vtime,
						 cpu_ctxs[CPU_IDX(cpu)].vclock, slice_ns);
	scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, p->scx.dsq_vtime, enq_flags);
	if (st)
		st->nr_enqueued++;

	if (cpu_borrowed(cpu)) {
		/*
		 * A lent CPU serves only kthreads bound to it: wake it for one.
		 * Anyone else may split the object if due, or be stolen.
		 */
		if (is_pcpu_kthread(p))
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		else
			check_waiter_on_borrowed(cpu, p);
	} else if (a) {
		/* Wake the representative if it idles; stealing would defeat fusing. */
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

/* Fill @cpu's local queue; whether it got a task. */
static bool dispatch_cpu(s32 cpu)
{
	u32 i;

	/* A lent CPU runs only the kthreads bound to it (processor-proxy work). */
	if (cpu_borrowed(cpu))
		return dispatch_borrowed(cpu);
	if (scx_bpf_dsq_move_to_local(cpu, 0)) {
		cpu_stats[CPU_IDX(cpu)].nr_dispatched++;
		return true;
	}
	/* Steal, nearest CPU id first: neighbours usually share a cache. */
	bpf_for(i, 1, nr_cpus) {
		u32 victim = (cpu + i) % nr_cpus;

		if (!scx_bpf_dsq_nr_queued(victim))
			continue;
		if (scx_bpf_dsq_move_to_local(victim, 0)) {
			cpu_stats[CPU_IDX(cpu)].nr_stolen++;
			return true;
		}
	}
	return false;
}

void BPF_STRUCT_OPS(chameleon_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 t0;
	bool got;

	if (!cpu_valid(cpu))
		return;
	/* A fuse or split waits for this CPU: time its side of the work. */
	t0 = pending_for[CPU_IDX(cpu)] ? bpf_ktime_get_ns() : 0;
	got = dispatch_cpu(cpu);
	if (t0)
		pending_dispatched(cpu, t0, got);
}

void BPF_STRUCT_OPS(chameleon_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx || !cpu_valid(cpu))
		return;
	struct cpu_ctx *cc = &cpu_ctxs[CPU_IDX(cpu)];
	struct chameleon_assignment *a;
	struct rep_ctx *rc = &reps[CPU_IDX(cpu)];
	u64 now = bpf_ktime_get_ns();

	/* A stolen task arrives with the victim CPU's clock. */
	rebase_to(p, tctx, cpu);
	cc->vclock = chameleon_vtime_advance(cc->vclock, p->scx.dsq_vtime);
	cc->curr_vtime = p->scx.dsq_vtime;
	cc->curr_weight = p->scx.weight;
	cc->curr_started = now;
	cc->running = 1;
	tctx->started_at = now;
	if (local_from[CPU_IDX(cpu)])
		pending_switched(cpu, false);

	if (rc->state == REP_FUSED && rc->owner != p->pid)
		split(cpu, CHAMELEON_SPLIT_PREEMPT);
	a = task_assignment(p, tctx);
	if (a && a->cpus[0] == cpu && a->nr_cpus >= 2) {
		if (tctx->assign_gen != a->generation)
			place_vthreads(tctx, a);
		try_fuse(p, tctx, a, cpu);
	}
}

void BPF_STRUCT_OPS(chameleon_tick, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct chameleon_assignment *a;
	struct task_ctx *tctx;
	struct rep_ctx *rc;
	u64 now;

	if (!cpu_valid(cpu) || reps[CPU_IDX(cpu)].owner != p->pid)
		return;
	rc = &reps[CPU_IDX(cpu)];
	tctx = task_ctx(p);
	if (!tctx)
		return;
	now = bpf_ktime_get_ns();
	charge_tax(p, tctx, rc, now);
	if (rc->state != REP_FUSED)
		return;
	/* The node manager took the object away or gave it other CPUs. */
	a = task_assignment(p, tctx);
	if (!a || a->generation != rc->generation)
		split(cpu, CHAMELEON_SPLIT_RETAG);
	else if (waiter_due(rc, tctx, now))
		split(cpu, CHAMELEON_SPLIT_TICK);
}

void BPF_STRUCT_OPS(chameleon_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);
	struct rep_ctx *rc;
	u64 delta, now;

	if (!tctx || !tctx->started_at || !cpu_valid(cpu))
		return;
	now = bpf_ktime_get_ns();
	delta = now - tctx->started_at;
	tctx->started_at = 0;
	tctx->run_ns += delta;
	p->scx.dsq_vtime += chameleon_vtime_charge(delta, p->scx.weight);
	cpu_stats[CPU_IDX(cpu)].busy_ns += delta;
	cpu_ctxs[CPU_IDX(cpu)].running = 0;
	if (local_from[CPU_IDX(cpu)])
		pending_switched(cpu, true);

	rc = &reps[CPU_IDX(cpu)];
	if (rc->owner == p->pid) {
		if (!runnable)
			split(cpu, CHAMELEON_SPLIT_SLEEP);
		charge_tax(p, tctx, rc, now);
	}
	if (!runnable) {
		tctx->woke = 1;
		if (tctx->tagged)
			emit(CHAMELEON_EV_SLEEP, cpu, p);
	}
}

void BPF_STRUCT_OPS(chameleon_enable, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	u64 cgid = task_cgroup_id(p);
	struct chameleon_tag *tag;
	struct task_ctx *tctx;
	u32 level;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx) {
		scx_bpf_error("no task context for pid %d", p->pid);
		return;
	}
	__builtin_memset(tctx, 0, sizeof(*tctx));
	tctx->tags_gen = tags_gen;
	tctx->vcpu = cpu_valid(cpu) ? cpu : -1;
	p->scx.dsq_vtime = cpu_valid(cpu) ? cpu_ctxs[CPU_IDX(cpu)].vclock : 0;

	tag = bpf_map_lookup_elem(&tags, &cgid);
	level = tag ? chameleon_tag_object_level(tag->level, tag->smt) : 0;
	if (level) {
		tctx->tagged = 1;
		tctx->woke = 1;
		emit_demand(p, cpu, cgid, level);
	}
}

void BPF_STRUCT_OPS(chameleon_disable, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);

	if (cpu_valid(cpu) && reps[CPU_IDX(cpu)].owner == p->pid) {
		split(cpu, CHAMELEON_SPLIT_EXIT);
		if (tctx)
			charge_tax(p, tctx, &reps[CPU_IDX(cpu)], bpf_ktime_get_ns());
		reps[CPU_IDX(cpu)].owner = 0;
	}
	/* Only tagged tasks matter to the agent: no event per exit of everything. */
	if (tctx && tctx->tagged)
		emit_exit(p, cpu, tctx->run_ns, tctx->fused_ns);
}

/* A task moved to another cgroup: during the move it still points at the old one. */
void BPF_STRUCT_OPS(chameleon_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = task_ctx(p);

	if (tctx)
		retag(p, tctx, to->kn->id);
}

/*
 * A new cgroup inherits its parent's tag in force (it has none of its own
 * yet); the agent may overwrite it with the cgroup's own tag later.
 */
s32 BPF_STRUCT_OPS(chameleon_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	struct chameleon_tag *tag;
	struct cgroup *parent;
	u64 id = cgrp->kn->id, pid;

	if (cgrp->level < 1)
		return 0;
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

/* A removed cgroup's tag is dropped. */
void BPF_STRUCT_OPS(chameleon_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;

	bpf_map_delete_elem(&tags, &id);
}

void BPF_STRUCT_OPS(chameleon_cpu_online, s32 cpu)
{
	if (cpu_valid(cpu))
		cpu_ctxs[CPU_IDX(cpu)].online = 1;
	__sync_fetch_and_add(&nr_cpu_online_events, 1);
	emit(CHAMELEON_EV_CPU_ONLINE, cpu, NULL);
}

void BPF_STRUCT_OPS(chameleon_cpu_offline, s32 cpu)
{
	if (cpu_valid(cpu)) {
		cpu_ctxs[CPU_IDX(cpu)].online = 0;
		cpu_ctxs[CPU_IDX(cpu)].running = 0;
		/* A lent CPU leaving splits its object, and so does its representative. */
		if (borrowed_by[CPU_IDX(cpu)])
			split(borrowed_by[CPU_IDX(cpu)] - 1, CHAMELEON_SPLIT_OFFLINE);
		split(cpu, CHAMELEON_SPLIT_OFFLINE);
		pending_for[CPU_IDX(cpu)] = 0;
		local_from[CPU_IDX(cpu)] = 0;
	}
	__sync_fetch_and_add(&nr_cpu_offline_events, 1);
	emit(CHAMELEON_EV_CPU_OFFLINE, cpu, NULL);
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
	online = scx_bpf_get_online_cpumask();
	bpf_for(cpu, 0, nr_cpus) {
		if (cpu < CHAMELEON_MAX_CPUS)
			cpu_ctxs[CPU_IDX(cpu)].online = bpf_cpumask_test_cpu(cpu, online);
	}
	scx_bpf_put_cpumask(online);

	bpf_for(cpu, 0, nr_cpus) {
		ret = scx_bpf_create_dsq(cpu, -1);
		if (ret) {
			scx_bpf_error("cannot create queue of CPU %u: %d", cpu, ret);
			return ret;
		}
	}
	return 0;
}

void BPF_STRUCT_OPS(chameleon_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(chameleon_ops,
	       .select_cpu	= (void *)chameleon_select_cpu,
	       .enqueue		= (void *)chameleon_enqueue,
	       .dispatch	= (void *)chameleon_dispatch,
	       .running		= (void *)chameleon_running,
	       .stopping	= (void *)chameleon_stopping,
	       .tick		= (void *)chameleon_tick,
	       .enable		= (void *)chameleon_enable,
	       .disable		= (void *)chameleon_disable,
	       .cgroup_init	= (void *)chameleon_cgroup_init,
	       .cgroup_exit	= (void *)chameleon_cgroup_exit,
	       .cgroup_move	= (void *)chameleon_cgroup_move,
	       .cpu_online	= (void *)chameleon_cpu_online,
	       .cpu_offline	= (void *)chameleon_cpu_offline,
	       .init		= (void *)chameleon_init,
	       .exit		= (void *)chameleon_exit,
	       .flags		= SCX_OPS_ENQ_LAST,
	       .name		= "chameleon");
