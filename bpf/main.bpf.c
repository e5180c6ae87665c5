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
 * Userspace (the agent) reads per-CPU counters from .bss and events from a
 * ring buffer; nothing on the scheduling path waits for it. If the agent dies,
 * the struct_ops link closes and the kernel moves every task back to the fair
 * class: nothing is stranded by design.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "vtime.h"

char _license[] SEC("license") = "GPL";

/* Set by the agent before load. */
const volatile u64 slice_ns = 5ULL * 1000 * 1000;
const volatile u32 nr_cpus = 1;	/* possible CPUs, <= CHAMELEON_MAX_CPUS */

UEI_DEFINE(uei);

/* Per-CPU state, indexed by CPU id. In .bss so the agent reads it mmapped. */
u64 vclock[CHAMELEON_MAX_CPUS];
struct chameleon_cpu_stats cpu_stats[CHAMELEON_MAX_CPUS];
u64 nr_cpu_online_events, nr_cpu_offline_events, nr_events_dropped;

struct task_ctx {
	u64	started_at;	/* when it last started running */
	s32	vcpu;		/* CPU whose clock p->scx.dsq_vtime refers to */
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

	return cpu < CHAMELEON_MAX_CPUS ? &cpu_stats[cpu] : NULL;
}

static struct task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* A task's own (leaf) cgroup, not the nearest one with the cpu controller. */
static u64 task_cgroup_id(struct task_struct *p)
{
	return BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
}

static void emit(u32 kind, s32 cpu, struct task_struct *p, u64 arg)
{
	struct chameleon_event *ev;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&nr_events_dropped, 1);
		return;
	}
	ev->kind = kind;
	ev->cpu = cpu;
	ev->pad = 0;
	ev->ts_ns = bpf_ktime_get_ns();
	ev->arg = arg;
	if (p) {
		ev->pid = p->pid;
		ev->cgroup_id = task_cgroup_id(p);
		__builtin_memcpy(ev->comm, p->comm, sizeof(ev->comm));
	} else {
		ev->pid = 0;
		ev->cgroup_id = 0;
		__builtin_memset(ev->comm, 0, sizeof(ev->comm));
	}
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
							  vclock[from], vclock[cpu]);
	else
		p->scx.dsq_vtime = vclock[cpu];
	tctx->vcpu = cpu;
}

s32 BPF_STRUCT_OPS(chameleon_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
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

	if (!tctx || !cpu_valid(cpu)) {
		/* Not ours to order (should not happen): keep it runnable. */
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, slice_ns, enq_flags);
		return;
	}

	rebase_to(p, tctx, cpu);
	p->scx.dsq_vtime = chameleon_vtime_floor(p->scx.dsq_vtime, vclock[cpu],
						 slice_ns);
	scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, p->scx.dsq_vtime, enq_flags);
	if (st)
		st->nr_enqueued++;

	/* An idle CPU the task may use steals it in its dispatch. */
	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
		if (st)
			st->nr_kicks++;
	}
}

void BPF_STRUCT_OPS(chameleon_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 i;

	if (!cpu_valid(cpu))
		return;
	if (scx_bpf_dsq_move_to_local(cpu, 0)) {
		cpu_stats[cpu].nr_dispatched++;
		return;
	}
	/* Steal, nearest CPU id first: neighbours usually share a cache. */
	bpf_for(i, 1, nr_cpus) {
		u32 victim = (cpu + i) % nr_cpus;

		if (!scx_bpf_dsq_nr_queued(victim))
			continue;
		if (scx_bpf_dsq_move_to_local(victim, 0)) {
			cpu_stats[cpu].nr_stolen++;
			return;
		}
	}
}

void BPF_STRUCT_OPS(chameleon_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx || !cpu_valid(cpu))
		return;
	/* A stolen task arrives with the victim CPU's clock. */
	rebase_to(p, tctx, cpu);
	vclock[cpu] = chameleon_vtime_advance(vclock[cpu], p->scx.dsq_vtime);
	tctx->started_at = bpf_ktime_get_ns();
}

void BPF_STRUCT_OPS(chameleon_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = task_ctx(p);
	u64 delta;

	if (!tctx || !tctx->started_at || !cpu_valid(cpu))
		return;
	delta = bpf_ktime_get_ns() - tctx->started_at;
	tctx->started_at = 0;
	p->scx.dsq_vtime += chameleon_vtime_charge(delta, p->scx.weight);
	cpu_stats[cpu].busy_ns += delta;
}

void BPF_STRUCT_OPS(chameleon_enable, struct task_struct *p)
{
	struct task_ctx *tctx;
	s32 cpu = scx_bpf_task_cpu(p);

	tctx = bpf_task_storage_get(&task_ctxs, p, 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx) {
		scx_bpf_error("no task context for pid %d", p->pid);
		return;
	}
	tctx->vcpu = cpu_valid(cpu) ? cpu : -1;
	tctx->started_at = 0;
	p->scx.dsq_vtime = cpu_valid(cpu) ? vclock[cpu] : 0;
	emit(CHAMELEON_EV_TASK_ENABLE, cpu, p, 0);
}

void BPF_STRUCT_OPS(chameleon_disable, struct task_struct *p)
{
	emit(CHAMELEON_EV_TASK_EXIT, scx_bpf_task_cpu(p), p, 0);
}

void BPF_STRUCT_OPS(chameleon_cpu_online, s32 cpu)
{
	__sync_fetch_and_add(&nr_cpu_online_events, 1);
	emit(CHAMELEON_EV_CPU_ONLINE, cpu, NULL, 0);
}

void BPF_STRUCT_OPS(chameleon_cpu_offline, s32 cpu)
{
	__sync_fetch_and_add(&nr_cpu_offline_events, 1);
	emit(CHAMELEON_EV_CPU_OFFLINE, cpu, NULL, 0);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(chameleon_init)
{
	u32 cpu;
	s32 ret;

	if (nr_cpus > CHAMELEON_MAX_CPUS) {
		scx_bpf_error("%u CPUs, at most %d supported", nr_cpus,
			      CHAMELEON_MAX_CPUS);
		return -E2BIG;
	}
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
	       .enable		= (void *)chameleon_enable,
	       .disable		= (void *)chameleon_disable,
	       .cpu_online	= (void *)chameleon_cpu_online,
	       .cpu_offline	= (void *)chameleon_cpu_offline,
	       .init		= (void *)chameleon_init,
	       .exit		= (void *)chameleon_exit,
	       .name		= "chameleon");
