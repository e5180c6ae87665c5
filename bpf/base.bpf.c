/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The base of the policy: what every concept unit reads and none owns alone.
 * The settings the agent writes before the load, the task context, the
 * per-CPU state (one array per concept, each entry a cache line of its own,
 * in .bss so that the agent reads it mmapped), the counters more than one
 * unit bumps, the generation counters, and the helpers that read only these.
 *
 * Every other unit builds on this one and calls only down; this unit calls
 * none of them. Its declarations are in chameleon.bpf.h.
 */
#include "chameleon.bpf.h"

/* ---- Settings: written by the agent before the load, frozen after. ---- */
const volatile u64 slice_ns = 20ULL * 1000 * 1000;
const volatile u32 nr_cpus = 1;	/* possible CPUs, <= CHAMELEON_MAX_CPUS */
const volatile s32 agent_tgid;	/* the agent's own threads are not load */
const volatile u64 run_id;	/* --run-id, for the exit dump */
/* Test only: scx_bpf_error() this long after init (guard.bpf.c; 0: never). */
const volatile u64 test_error_after_ns;
/* The least an object lives before a waiter may split it (exec_object.h). */
const volatile u64 min_gran_ns = 1000ULL * 1000;
/* The lending bound: the longest a task waits on a lent CPU (--lend-wait-ms). */
const volatile u64 lend_wait_ns = 50ULL * 1000 * 1000;
/* Wakeup preemption's granularity (--wake-gran-us; 0: off). */
const volatile u64 wake_gran_ns = 1000ULL * 1000;
/* Performance targets handed to the kernel (fast.bpf.c; --no-cpuperf: off). */
const volatile bool cpuperf_on = true;
/* The CPUs differ in capacity: fast ones first (fast.bpf.c). */
const volatile bool hybrid;
/* The shard of a cgroup's runnable count each CPU counts in: its LLC's (weight.bpf.c). */
const volatile u8 cpu_cg_shard[CHAMELEON_MAX_CPUS];
/* Movable untagged tasks share their LLC's queue (llc_queue.bpf.c; --llc-queues: on). */
const volatile bool llc_queues;
const volatile u32 nr_llcs = 1;
const volatile u8 cpu_llc[CHAMELEON_MAX_CPUS];
/* The kernel keeps idle CPUs per NUMA node (idle_pick_in(); more than one node). */
const volatile bool idle_per_node;
/*
 * Then: the nodes with CPUs, and for each (by id) the nr_nodes - 1 others,
 * nearest first (src/nodes/numa_order.rs).
 */
const volatile u32 nr_nodes = 1;
const volatile u8 node_order[CHAMELEON_MAX_NODES][CHAMELEON_MAX_NODES];

/* ---- Generations and times. ---- */
/* When chameleon_init ran. */
u64 init_at;
/*
 * Bumped by the agent after it rewrote tags at run time: each task compares
 * it with its own copy when it becomes runnable or is enqueued, and re-reads
 * its tag if stale.
 */
u64 tags_gen;

extern unsigned long CONFIG_HZ __kconfig __weak;

u64 jiffies_to_ns(u64 j)
{
	u64 hz = CONFIG_HZ ?: 250;

	return j * (1000ULL * 1000 * 1000 / hz);
}

/* ---- The task context: allocated by init_task, found by task_ctx(). ---- */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

struct task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

struct task_ctx *task_ctx_create(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* ---- Per-CPU state (chameleon.bpf.h names the unit that writes each). ---- */
struct cpu_role cpu_roles[CHAMELEON_MAX_CPUS];
struct cpu_run cpu_runs[CHAMELEON_MAX_CPUS];
struct cpu_queue cpu_queues[CHAMELEON_MAX_CPUS];
struct cpu_lend cpu_lends[CHAMELEON_MAX_CPUS];
struct cpu_hotplug cpu_hps[CHAMELEON_MAX_CPUS];
struct cpu_release cpu_releases[CHAMELEON_MAX_CPUS];
struct cpu_perf cpu_perfs[CHAMELEON_MAX_CPUS];
struct rep_ctx reps[CHAMELEON_MAX_CPUS];
struct chameleon_cpu_stats cpu_stats[CHAMELEON_MAX_CPUS];
struct guard_word guard_need[CHAMELEON_GUARD_WORDS];
struct llc_run llc_runs[CHAMELEON_MAX_LLCS];
u64 llc_need;

/* Broken invariants, counted where they are seen (intf.h). */
struct chameleon_invariants invariants;

/* ---- Counters the agent reads, bumped by more than one unit. ---- */
u64 nr_events_dropped, nr_demand_dropped;	/* events.bpf.c; redemands compare */
u64 nr_starved;		/* tasks served out of vtime order by dispatch_starved */
u64 nr_guard_restarts;	/* late guards restarted by guard_watch */
/*
 * CPUs whose role is not NATIVE (an object's, a lend, a park): written on a
 * role's change of kind (role_changed()), read by every idle dispatch.
 */
u32 nr_not_native;
u32 nr_to_drain;	/* CPUs with drain or dying set (hotplug.bpf.c) */
u64 nr_rescued;		/* queues drained because their CPU had stopped dispatching */

/* ---- Helpers over this state alone. ---- */

/*
 * Is @p inside migrate_disable()? As common.bpf.h's is_migration_disabled(),
 * but the one ambiguous case (a count of 1 on the current task, which the BPF
 * prolog may have taken) is settled by the prolog probe run at attach
 * (scx_lib_init_probe), never by CONFIG_PREEMPT_RCU, which reads as 0 where
 * libbpf cannot read the kernel's config. Global: verified once, not at each
 * of its inlined callers' sites.
 */
bool task_migration_disabled(struct task_struct *p __arg_trusted)
{
	u32 md;

	if (!bpf_core_field_exists(p->migration_disabled))
		return false;
	md = p->migration_disabled;
	if (md == 1 && __scx_prolog_disables_migration)
		return bpf_get_current_task_btf() != p;
	return md;
}

/*
 * @cpu has something the guard bounds: its bit in guard_need is set,
 * write-if-changed, so a read while it is set. Global: verified once, not in
 * each of the enqueue paths that call it.
 */
int guard_need_set(s32 cpu)
{
	u32 idx;
	u64 bit;

	if (!cpu_valid(cpu))
		return 0;
	idx = CPU_IDX(cpu);
	bit = 1ULL << (idx & 63);
	if (!(READ_ONCE(guard_need[idx / 64].bits) & bit))
		__sync_fetch_and_or(&guard_need[idx / 64].bits, bit);
	return 0;
}

/* Is @cpu lent as an object's kernel-work context? */
bool kwork_lent(s32 cpu)
{
	s32 rep = cpu_valid(cpu) ? lent_to(cpu) : -1;

	return cpu_valid(rep) && (reps[CPU_IDX(rep)].flags & CHAMELEON_ASSIGN_KWORK);
}

/*
 * The nearest node other than @node with an idle CPU, or -1 (per-node idle
 * masks). The kernel's widening search visits the nodes in order of
 * distance too, but recomputes the nearest unvisited one at each step: a
 * few thousand instructions at 8 nodes, spent in full on a busy machine
 * where every mask is empty. A look at each node's mask, in an order the
 * agent computed once, costs a few dozen. The answer is a moment's, as the
 * search's is: a CPU that idles after the look pulls work in its own
 * dispatch.
 */
s32 idle_beyond(s32 node)
{
	const struct cpumask *idle;
	s32 n, found = -1;
	u32 i;

	if (node < 0 || node >= CHAMELEON_MAX_NODES)
		return -1;
	bpf_for(i, 0, nr_nodes - 1) {
		n = node_order[node][i & (CHAMELEON_MAX_NODES - 1)];
		idle = scx_bpf_get_idle_cpumask_node(n);
		if (!bpf_cpumask_empty(idle))
			found = n;
		scx_bpf_put_idle_cpumask(idle);
		if (found >= 0)
			break;
	}
	return found;
}
