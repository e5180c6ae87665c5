/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types and constants shared by the BPF policy (main.bpf.c) and the Rust
 * agent (turned into Rust by bindgen through scx_cargo). Keep this file free
 * of BPF-only constructs: it is also parsed for the host.
 */
#ifndef __CHAMELEON_INTF_H
#define __CHAMELEON_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
/* The kernel's (uapi/linux/bpf.h): 4 bytes userspace leaves at 0. */
struct bpf_spin_lock {
	u32	val;
};
#endif

enum chameleon_consts {
	CHAMELEON_MAX_CPUS	= 512,	/* size of per-CPU arrays in .bss */
	CHAMELEON_COMM_LEN	= 16,
	CHAMELEON_RINGBUF_SZ	= 1024 * 1024,
	CHAMELEON_OBJ_MAX_CPUS	= 8,	/* an object of level 3 */
	CHAMELEON_OBJ_MAX_LEVEL	= 3,
	CHAMELEON_MAX_TAGS	= 4096,
	CHAMELEON_STEAL_SCAN	= 8,	/* other CPUs' queues one dispatch looks at */
	/*
	 * LLC queues (llc_queue.bpf.c): a machine with more LLCs than this has
	 * per-CPU queues only. LLC l's queue is the DSQ CHAMELEON_LLC_Q0 + l,
	 * and a vtime on its clock names it the same way (task_ctx.vcpu).
	 */
	CHAMELEON_MAX_LLCS	= 64,
	/*
	 * NUMA node ids the idle search's widening order covers (node_order,
	 * base.bpf.c): a machine with a node id beyond keeps one idle mask.
	 */
	CHAMELEON_MAX_NODES	= 16,
	CHAMELEON_LLC_Q0	= CHAMELEON_MAX_CPUS,
	CHAMELEON_CACHELINE	= 64,
	/* A CPU's role word: (representative + 1) << CHAMELEON_ROLE_SHIFT | kind (role.h). */
	CHAMELEON_ROLE_SHIFT	= 4,
	/*
	 * CHAMELEON_PROXY_ABI_VERSION of kmod_proxy/chameleon_proxy.h, which the
	 * policy cannot include (a host test keeps the two equal).
	 */
	CHAMELEON_PROXY_ABI	= 4,
};

/* Argument of the chameleon_park syscall program (park.bpf.h). */
struct chameleon_park_args {
	u64	mask[CHAMELEON_MAX_CPUS / 64];	/* bit N: CPU N */
	u32	park;				/* 1: park, 0: unpark */
	u32	pad;
};

/* SMT class of a tag (bi-modal SMT scheduling). */
enum chameleon_smt {
	CHAMELEON_SMT_ANY	= 0,	/* follow the level */
	CHAMELEON_SMT_UNI	= 1,	/* run with the sibling idle: at least an SMT pair */
	CHAMELEON_SMT_SMT	= 2,	/* share the core: never fuse */
	CHAMELEON_SMT_KWORK	= 3,	/* its core: user work here, kernel work on the sibling */
};

/* Class of a tag on contended fast contexts (AASH): read by the agent only. */
enum chameleon_prio {
	CHAMELEON_PRIO_NORMAL	= 0,
	CHAMELEON_PRIO_HIGH	= 1,	/* served before the normal class */
};

/*
 * Properties in force for a cgroup's tasks (Chameleon §4.3.4); map `tags`,
 * keyed by cgroup id. The agent writes every cgroup's effective tag (its own
 * or its nearest tagged ancestor's); cgroups created later inherit their
 * parent's entry in cgroup_init().
 */
struct chameleon_tag {
	u32	level;		/* 1..CHAMELEON_OBJ_MAX_LEVEL: object of 2^level CPUs */
	u32	weight;		/* 1..10000: claim on contended fast contexts; 0: cpu.weight's */
	/*
	 * Hundredths, 1..10000 (0.01 .. 100); 0: auto, each task's tax set by
	 * the agent from its measured speed-up. The policy never reads it:
	 * it charges the assignment's tax, which is always 1..10000.
	 */
	u32	tax;
	u32	smt;		/* enum chameleon_smt */
	u32	prio;		/* enum chameleon_prio */
};

/*
 * A cgroup's cpu.weight as BPF keeps it (map `cg_weights`, keyed by cgroup
 * id, weight.bpf.c); the agent reads it for a tag's default claim. A shard
 * per LLC up to 16 LLCs (8 sockets of two CCXs), so that no two LLCs write
 * one line; a start reads them all at most once a tick (task_weight_at()).
 */
#define CHAMELEON_CG_SHARDS	16

/*
 * A share of a cgroup's runnable count: a wake or a sleep is counted in the
 * shard of the CPU it happens on (its LLC's, cpu_cg_shard), each shard in
 * its own cache line, so that the CPUs of one machine do not all write one
 * word; the count is the shards' sum.
 */
struct chameleon_cg_shard {
	s32	nr_runnable;
	s32	pad[15];
};

struct chameleon_cg_weight {
	u32	weight;		/* cpu.weight, 1..10000 */
	u32	pad[15];	/* read at a start (task_weight_at()): apart from the counts */
	struct chameleon_cg_shard shards[CHAMELEON_CG_SHARDS]; /* its tasks runnable now */
};

/*
 * How an object behaves once fused. HOLD (SMT class `uni`): its CPUs stay
 * its owner's while it runs whatever the waiters' vtimes (no tick or wake
 * splits, and it borrows busy CPUs too); only the lending bound, a higher
 * class, a migration or the owner's sleep end it, so no wait is unbounded.
 */
enum chameleon_assign_flags {
	CHAMELEON_ASSIGN_HOLD		= 1,
	/*
	 * SMT class `kwork` (the bi-modal SMT scheduler's AMP mode): the lent
	 * sibling is the kernel-work context. Device IRQs leave the
	 * representative for it (through the module, where loaded) and
	 * kthreads queued on the representative go there, while the task's
	 * user work keeps the representative.
	 */
	CHAMELEON_ASSIGN_KWORK		= 2,
};

/*
 * The object the agent assigned to one task (map `assignments`, the task's
 * storage, which the agent writes through a pidfd). cpus[0] is the
 * representative; every power-of-two prefix is itself a valid object, so a
 * partial fuse takes a prefix.
 *
 * Never read torn: the agent writes a task's value in place under its lock
 * (BPF_F_LOCK) and withdraws an object by writing nr_cpus 0; BPF copies the
 * value under the same lock and checks the pid it names. The kernel frees
 * the value with the task.
 */
struct chameleon_assignment {
	struct bpf_spin_lock lock;
	s32	pid;		/* the key, echoed */
	u32	nr_cpus;	/* 2, 4 or 8; 0: no object (withdrawn) */
	u32	generation;	/* changes whenever the CPUs change */
	u32	tax;		/* hundredths, 1..10000 (an auto tag's: the agent's choice) */
	u32	flags;		/* enum chameleon_assign_flags */
	s32	cpus[CHAMELEON_OBJ_MAX_CPUS];
};

/* Why an object was split (Chameleon §4.3.2 and the cases around it). */
enum chameleon_split_reason {
	CHAMELEON_SPLIT_TICK		= 1,	/* a waiter on a borrowed CPU is due (tick) */
	CHAMELEON_SPLIT_WAKE		= 2,	/* ... found when it became runnable */
	CHAMELEON_SPLIT_SLEEP		= 3,	/* the fused task blocked */
	CHAMELEON_SPLIT_PREEMPT		= 4,	/* another task took the representative */
	CHAMELEON_SPLIT_EXIT		= 5,	/* the fused task left the scheduler */
	CHAMELEON_SPLIT_OFFLINE		= 6,	/* a CPU of the object went offline */
	CHAMELEON_SPLIT_RETAG		= 7,	/* its object was taken away or changed */
	CHAMELEON_SPLIT_BOUND		= 8,	/* a waiter on a lent CPU reached the lending bound */
	CHAMELEON_SPLIT_MIGRATE		= 9,	/* the fused task left its representative */
	CHAMELEON_SPLIT_GROW		= 10,	/* a partial object refused whole (its CPUs came free) */
	CHAMELEON_SPLIT_AWAY		= 11,	/* the guard found the fused task off its representative */
};

/* Kinds of event sent through the ring buffer to the agent. */
enum chameleon_event_kind {
	CHAMELEON_EV_CPU_ONLINE		= 1,
	CHAMELEON_EV_CPU_OFFLINE	= 2,
	CHAMELEON_EV_TASK_EXIT		= 4,	/* a tagged task left (run_ns, fused_ns) */
	CHAMELEON_EV_DEMAND		= 5,	/* a task wants an object (level; 0: no more) */
	CHAMELEON_EV_FUSE		= 6,	/* whole object fused */
	CHAMELEON_EV_PARTIAL_FUSE	= 7,	/* a smaller prefix of it fused */
	CHAMELEON_EV_SPLIT		= 8,	/* borrowed CPUs given back (reason) */
	CHAMELEON_EV_SLEEP		= 9,	/* a tagged task blocked */
	CHAMELEON_EV_WAKE		= 10,	/* a tagged task became runnable */
};

enum chameleon_event_flags {
	/*
	 * The next fuse/split of the same object was decided before every CPU
	 * of this one got there: latency_ns is only a lower bound (the time
	 * until it was superseded).
	 */
	CHAMELEON_EVF_SUPERSEDED	= 1,
};

/* One ring-buffer record. Fixed size so the agent can parse it blindly. */
struct chameleon_event {
	u32	kind;		/* enum chameleon_event_kind */
	s32	cpu;		/* CPU the event is about: the representative for objects */
	s32	pid;
	u32	reason;		/* SPLIT: enum chameleon_split_reason */
	u64	ts_ns;		/* bpf_ktime_get_ns() at the decision */
	u64	cgroup_id;	/* task's own (leaf) cgroup id, 0 if none */
	/*
	 * FUSE/PARTIAL_FUSE: decision -> every borrowed CPU has put the task
	 * it ran (it idles next); SPLIT: decision -> every given-back CPU runs
	 * its next task (or dispatched and found none). Measured in BPF with
	 * bpf_ktime_get_ns().
	 */
	u64	latency_ns;
	u64	cost_ns;	/* FUSE/SPLIT: time the deciding CPU spent deciding and kicking */
	u64	run_ns;		/* TASK_EXIT: time run; FUSE/SPLIT: time fused before split */
	u64	fused_ns;	/* TASK_EXIT: time run fused */
	/*
	 * Task events: the task's start_boottime (ns since boot, suspend
	 * included). With the pid it names one task: the agent opens its pidfd
	 * only after the event, when the pid may be a newcomer's, and compares
	 * this with /proc/PID/stat's starttime (the same clock, in ticks).
	 */
	u64	start_ns;
	u32	level;		/* DEMAND: requested level; FUSE: requested CPUs */
	u32	nr_cpus;	/* FUSE/SPLIT: CPUs in the (partial) object */
	u32	flags;		/* CHAMELEON_EVF_* */
	/*
	 * FUSE/SPLIT: the slowest waited-for CPU's own work, from its dispatch
	 * (once the kick arrived) to the switch that completes it, timed on
	 * that CPU; saturates at 4.29 s.
	 */
	u32	local_ns;
	s32	cpus[CHAMELEON_OBJ_MAX_CPUS];
	char	comm[CHAMELEON_COMM_LEN];
};

/*
 * Per-CPU counters, indexed by CPU in .bss and read by the agent through the
 * mmapped map without a syscall. Each is written only by the CPU it belongs
 * to (the CPU doing the work). Monotonic: the agent computes deltas.
 */
struct chameleon_cpu_stats {
	u64	nr_enqueued;	/* tasks this CPU put on a vtime queue */
	u64	nr_direct;	/* tasks sent straight to an idle CPU's local queue */
	u64	nr_dispatched;	/* tasks taken from this CPU's own queue */
	u64	nr_stolen;	/* tasks taken from another CPU's queue */
	u64	nr_kicks;	/* idle CPUs woken for new work */
	u64	busy_ns;	/* time tasks ran here under our policy */
	u64	nr_fuse;	/* objects fused (whole) with this CPU as representative */
	u64	nr_partial;	/* ... fused partially */
	u64	nr_fuse_denied;	/* tries that found no CPU to borrow */
	u64	nr_split;	/* splits decided on this CPU */
	u64	nr_proxy_served; /* per-CPU kthreads run while this CPU was borrowed */
	u64	nr_bound_splits; /* objects split because a waiter hit the lending bound */
	u64	nr_kthread_keeps; /* fused owner preempted by a bound kthread, object kept */
	/*
	 * Untagged tasks made runnable minus those that stopped being, counted
	 * by the CPU that ran the op (only it writes its own). One CPU's
	 * value means nothing, as a task may sleep elsewhere than it woke; the
	 * sum over CPUs (wrapping) is the number of runnable untagged tasks,
	 * exact, because migrations do not count (see count_untagged()).
	 */
	u64	nr_untagged;
	u64	nr_wake_preempts; /* waking tasks queued here that preempted the running one */
	u64	nr_fast_moves;	/* hybrid: tasks this CPU sent from a slow CPU to an idle fast one */
	u64	nr_llc_queued;	/* tasks this CPU put on its LLC's queue */
	u64	nr_llc_taken;	/* tasks this CPU took from an LLC queue (its own or, nr_llc_far, another's) */
	u64	nr_llc_far;
} __attribute__((aligned(CHAMELEON_CACHELINE)));	/* no false sharing between CPUs */

/*
 * Where one CPU steals from, nearest first (map `steal_orders`, one entry per
 * CPU, written by the agent from the topology before attaching): its SMT
 * siblings (the first nr_near), then the CPUs of its LLC, then the rest. A
 * dispatch looks at the siblings and then at most CHAMELEON_STEAL_SCAN - nr_near
 * of the others, from a start that rotates, so stealing is bounded and no
 * queue is left unvisited.
 */
struct chameleon_steal_order {
	u32	nr;		/* entries in cpus[] */
	u32	nr_near;	/* SMT siblings, always looked at first */
	s32	cpus[CHAMELEON_MAX_CPUS];
};

/*
 * The kind of a CPU's role word (role.h: the state machine, the word's
 * layout), readable by the agent in .bss (cpu_roles[]).
 */
enum chameleon_role {
	CHAMELEON_ROLE_NATIVE	= 0,	/* runs its own queue */
	CHAMELEON_ROLE_FUSING	= 1,	/* a representative borrowing its CPUs */
	CHAMELEON_ROLE_REP	= 2,	/* representative of a fused object */
	CHAMELEON_ROLE_SPLITTING = 3,	/* a representative giving its CPUs back */
	CHAMELEON_ROLE_LENT	= 4,	/* lent to a representative (in the word) */
	CHAMELEON_ROLE_PARKED	= 5,	/* parked by the agent */
};

/*
 * Broken invariants the policy found (role.bpf.c): each is a bug, and every
 * VM test asserts that all stay zero (exported in the stats and the exit
 * dump).
 */
struct chameleon_invariants {
	u64	lent_to_non_rep;	/* a LENT CPU whose representative holds no object */
	u64	owner_gone;		/* an object whose owner was away past CHAMELEON_AWAY_NS, left fused */
	u64	queue_forbidden;	/* a task waited on a CPU whose role forbids it past the bounds */
	/*
	 * A CPU both representative and lent cannot be counted: one word
	 * holds one role (role.h), which the host tests prove over every
	 * interleaving of transitions.
	 */
};

#endif /* __CHAMELEON_INTF_H */
