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
#endif

enum chameleon_consts {
	CHAMELEON_MAX_CPUS	= 512,	/* size of per-CPU arrays in .bss */
	CHAMELEON_COMM_LEN	= 16,
	CHAMELEON_RINGBUF_SZ	= 256 * 1024,
};

/* Kinds of event sent through the ring buffer to the agent. */
enum chameleon_event_kind {
	CHAMELEON_EV_CPU_ONLINE		= 1,
	CHAMELEON_EV_CPU_OFFLINE	= 2,
	CHAMELEON_EV_TASK_ENABLE	= 3,	/* a task joined the scheduler */
	CHAMELEON_EV_TASK_EXIT		= 4,	/* a task left it */
};

/* One ring-buffer record. Fixed size so the agent can parse it blindly. */
struct chameleon_event {
	u32	kind;		/* enum chameleon_event_kind */
	s32	cpu;		/* CPU the event is about (or ran on) */
	s32	pid;
	u32	pad;
	u64	ts_ns;		/* bpf_ktime_get_ns() at the event */
	u64	cgroup_id;	/* task's own (leaf) cgroup id, 0 if none */
	u64	arg;		/* kind-specific */
	char	comm[CHAMELEON_COMM_LEN];
};

/*
 * Per-CPU counters, indexed by CPU in .bss and read by the agent through the
 * mmapped map without a syscall. Monotonic: the agent computes deltas.
 */
struct chameleon_cpu_stats {
	u64	nr_enqueued;	/* tasks queued on this CPU's vtime queue */
	u64	nr_direct;	/* tasks sent straight to an idle CPU's local queue */
	u64	nr_dispatched;	/* tasks taken from this CPU's own queue */
	u64	nr_stolen;	/* tasks taken from another CPU's queue */
	u64	nr_kicks;	/* idle CPUs woken for new work */
	u64	busy_ns;	/* time tasks ran here under our policy */
};

#endif /* __CHAMELEON_INTF_H */
