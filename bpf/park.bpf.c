/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Parking: the policy's half of `scx_chameleon park`, Bolt's critical part
 * (bolt-fast-reconfiguration §3-4). Taking a CPU offline costs tens of
 * milliseconds; what must hold at once is only that the scheduler stops
 * using it. The agent runs chameleon_park (a syscall program, BPF_PROG_RUN)
 * with a CPU mask, then tells the module, which moves the CPUs' IRQs and,
 * after a hold-off, takes them offline in bulk (the non-critical part). From
 * chameleon_park's return the CPU's role is PARKED (role.h), so by the one
 * placement rule (may_run_on):
 * - nothing new lands on it: it runs only what can run nowhere else;
 * - what runs there is preempted (the kick) and enqueued elsewhere;
 * - what waits in its queue is moved out by the guard within a period;
 * - it is neither a representative nor lent: parking splits the objects it
 *   belongs to first, and no fuse borrows it while it is parked.
 * Unparking makes it NATIVE and kicks it: it serves again at once. The
 * agent's node manager treats a parked CPU as offline. Without the module a
 * parked CPU just idles; the kernel's own hotplug works alongside.
 */
#include "chameleon.bpf.h"

/* CPUs parked now. */
u32 nr_parked;

/*
 * ops.dispatch on a parked CPU: the task the wait bound named, else the
 * first queued task that cannot run elsewhere; the guard moves the others.
 */
bool dispatch_parked(s32 cpu)
{
	struct task_struct *p;

	if (dispatch_starved(cpu))
		return true;
	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (task_movable(p))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			return true;
	}
	return false;
}

/* Attempts to take a CPU out of an object to park it (a fuse may take it back in between). */
#define CHAMELEON_PARK_TRIES	8

/*
 * Park @cpu: it may be in an object (a representative, lent, or in the
 * middle of a fuse or split); end that first, then NATIVE -> PARKED.
 * Returns whether it is parked now.
 */
static bool park_one(s32 cpu)
{
	u32 i, w;
	s32 rep;

	bpf_for(i, 0, CHAMELEON_PARK_TRIES) {
		if (role_cas(cpu, CHAMELEON_RE_PARK, 0))
			return true;
		w = role_word(cpu);
		switch (chameleon_role_kind(w)) {
		case CHAMELEON_ROLE_PARKED:
			return false;	/* already */
		case CHAMELEON_ROLE_REP:
			split(cpu, CHAMELEON_SPLIT_OFFLINE);
			break;
		case CHAMELEON_ROLE_LENT:
			rep = chameleon_role_with(w);
			if (cpu_valid(rep))
				split(rep, CHAMELEON_SPLIT_OFFLINE);
			break;
		}
	}
	return false;
}

/*
 * BPF_PROG_RUN by the agent: park (args->park) or unpark every CPU of
 * args->mask. Returns how many CPUs changed; a CPU that a fuse kept taking
 * back is not counted, and the agent retries.
 */
SEC("syscall")
int chameleon_park(struct chameleon_park_args *args)
{
	bool park = args->park;
	int changed = 0;
	u32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		u64 word;

		if (cpu >= CHAMELEON_MAX_CPUS)
			break;
		word = args->mask[(cpu / 64) & (CHAMELEON_MAX_CPUS / 64 - 1)];
		if (!((word >> (cpu % 64)) & 1))
			continue;
		if (!park) {
			if (role_cas(cpu, CHAMELEON_RE_UNPARK, 0)) {
				__sync_fetch_and_sub(&nr_parked, 1);
				changed++;
			}
			kick_cpu(cpu, SCX_KICK_IDLE);
			continue;
		}
		if (park_one(cpu)) {
			__sync_fetch_and_add(&nr_parked, 1);
			changed++;
		}
		kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
	return changed;
}
