/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lent CPUs (exec_object.bpf.c fuses and splits them): the lending bound,
 * who a lent CPU runs, the kernel-work context of a kwork object, and how
 * long each fuse or split took to reach its CPUs.
 *
 * Decisions are numbered (rep_ctx.seq): a CPU that a fuse or split waits for
 * records its own part under the decision's number, so a CPU finishing late
 * for a superseded decision neither clears a bit of the next one nor lends
 * it its time.
 */
#include "chameleon.bpf.h"

static u64 pending_word(u32 seq, u32 low)
{
	return (u64)seq << 32 | low;
}

static s32 pending_rep(u64 pending_for)
{
	return (s32)(u32)pending_for - 1;
}

/* Position of @cpu in @rc's object, or -1. */
int obj_pos(struct rep_ctx *rc, s32 cpu)
{
	u32 i;
	s32 c;

	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		if (c == cpu)
			return i;
	}
	return -1;
}

/*
 * Into @ev: the slowest of @rc's lent CPUs that finished their part of
 * decision @seq. The maximum is kept in the event, not in a register, which
 * would make each turn of the loop a new state for the verifier.
 */
static void object_local_max(struct rep_ctx *rc, u32 seq, struct chameleon_event *ev)
{
	u32 i;
	s32 c;

	ev->local_ns = 0;
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct cpu_lend *cl = cpu_lend(c);

		if (cl->local_seq == seq && cl->local_ns > ev->local_ns)
			ev->local_ns = cl->local_ns;
	}
}

/*
 * Report decision @seq of @rep's object. A decision bumps rc->seq before it
 * writes any field, so if the number is still @seq after the fields were
 * read, they all belong to @seq; if not, the report is marked superseded.
 */
int emit_object(s32 rep, u64 latency, u32 flags, u32 seq)
{
	struct rep_ctx *rc = rep_ctx(rep);
	struct chameleon_event *ev;
	u32 kind;

	if (!rc)
		return 0;
	kind = rc->pending_kind;
	ev = event_reserve(kind, rep);
	if (!ev)
		return 0;
	ev->pid = rc->owner;
	ev->cgroup_id = rc->owner_cgid;
	ev->ts_ns = rc->decision_at;
	ev->latency_ns = latency;
	ev->cost_ns = rc->decision_cost;
	object_local_max(rc, seq, ev);
	ev->level = rc->nr_requested;
	ev->nr_cpus = rc->nr_cpus;
	if (kind == CHAMELEON_EV_SPLIT) {
		ev->reason = rc->reason;
		ev->run_ns = rc->split_fused_ns;
	}
	/* -1 past nr_cpus: try_fuse() writes both together, so as read here. */
	__builtin_memcpy(ev->cpus, rc->cpus, sizeof(ev->cpus));
	if (READ_ONCE(rc->seq) != seq)
		flags |= CHAMELEON_EVF_SUPERSEDED;
	ev->flags = flags;
	/* Nothing the agent acts on: seen at its next loop. */
	event_submit(ev, false);
	return 0;
}

/*
 * A CPU that a fuse or split waited for is done, its own work having started
 * at @t0: record its time under the decision's number, clear its bit, and if
 * it was the last one, report the decision with its end-to-end latency.
 * Timed from the decision it finishes at the earliest: @t0 may belong to one
 * that a newer decision replaced meanwhile (the representative publishes a
 * new one while this CPU is between reading the old and finishing), and a
 * CPU's part lies inside the decision's latency.
 */
static void pending_done(s32 cpu, u64 t0)
{
	struct cpu_lend *cl = cpu_lend(cpu);
	u64 want = cl->pending_for, old, now, local;
	u32 seq = want >> 32, bit, i;
	s32 rep = pending_rep(want);
	struct rep_ctx *rc;
	int pos;

	cl->pending_for = 0;
	cl->local_from = 0;
	rc = rep_ctx(rep);
	if (!rc)
		return;
	pos = obj_pos(rc, cpu);
	if (pos < 0)
		return;
	bit = 1U << pos;
	if (chameleon_vtime_before(t0, rc->decision_at))
		t0 = rc->decision_at;
	now = bpf_ktime_get_ns();
	local = now > t0 ? now - t0 : 0;
	cl->local_ns = local > 0xffffffffULL ? 0xffffffffU : (u32)local;
	cl->local_seq = seq;
	/* Each failed attempt means another CPU of the object cleared its bit. */
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		old = rc->pending;
		if ((u32)(old >> 32) != seq || !(old & bit))
			return;
		if (__sync_bool_compare_and_swap(&rc->pending, old, old & ~(u64)bit)) {
			if (!((u32)old & ~bit))
				emit_object(rep, bpf_ktime_get_ns() - rc->decision_at, 0, seq);
			return;
		}
	}
}

/*
 * @cpu, which a fuse or split waits for, ran its dispatch from @t0. Its own
 * part of the work ends with the switch that follows: a lent CPU is done when
 * the task it was running is put (stopping(), then it idles); a CPU given
 * back when the next task runs (running()). If there is nothing to switch, it
 * is done now. Timed locally: what bare metal would see on that CPU.
 */
void pending_dispatched(s32 cpu, u64 t0, bool dispatched)
{
	struct cpu_lend *cl = cpu_lend(cpu);
	struct rep_ctx *rc = rep_ctx(pending_rep(cl->pending_for));
	bool lent = rc && rc->pending_kind != CHAMELEON_EV_SPLIT;

	/* A dispatch under way when the decision was taken works for it from then on. */
	if (rc && chameleon_vtime_before(t0, rc->decision_at))
		t0 = rc->decision_at;
	if (lent ? cpu_run(cpu)->running : dispatched) {
		cl->local_from = t0;
		return;
	}
	pending_done(cpu, t0);
}

/* A task stops (@stopping) or starts on @cpu: the switch a pending CPU awaited? */
void pending_switched(s32 cpu, bool stopping)
{
	struct cpu_lend *cl = cpu_lend(cpu);
	struct rep_ctx *rc;
	u64 t0 = cl->local_from;

	if (!t0 || !cl->pending_for)
		return;
	rc = rep_ctx(pending_rep(cl->pending_for));
	if (rc && (rc->pending_kind != CHAMELEON_EV_SPLIT) == stopping)
		pending_done(cpu, t0);
}

/*
 * Start a new decision on @rep's object and return its number. Numbered
 * first, so that a late report of the previous one sees it superseded; if
 * the previous one still waits for some CPUs, report it now (a lower bound).
 */
u32 begin_decision(s32 rep, u64 now)
{
	struct rep_ctx *rc = rep_ctx(rep);
	u32 prev;

	if (!rc)
		return 0;
	prev = rc->seq;
	WRITE_ONCE(rc->seq, prev + 1);
	barrier();
	if ((u32)__sync_fetch_and_and(&rc->pending, ~0xffffffffULL))
		emit_object(rep, chameleon_time_since(now, rc->decision_at), CHAMELEON_EVF_SUPERSEDED, prev);
	return prev + 1;
}

/*
 * Decision @seq on @rep waits for @pending (positions in its cpus[]):
 * publish that, then tell those CPUs and kick every lent CPU with
 * @kick_flags. The word is published before any CPU learns it waits, so none
 * can finish before its bit exists.
 */
int publish_pending(s32 rep, u32 pending, u64 kick_flags, u32 seq)
{
	struct rep_ctx *rc = rep_ctx(rep);
	u32 i;
	s32 c;

	if (!rc)
		return 0;
	rc->pending = pending_word(seq, pending);
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct cpu_lend *cl = cpu_lend(c);

		if (pending & (1U << i)) {
			cl->local_from = 0;
			cl->pending_for = pending_word(seq, rep + 1);
		} else if (kick_flags == SCX_KICK_IDLE) {
			continue;
		}
		kick_cpu(c, kick_flags);
	}
	return 0;
}

/*
 * Has a waiter on one of @rc's lent CPUs waited @bound_ns (the lending
 * bound; the tick's backstop is later, so that the guard timer first moves
 * the waiters that may run elsewhere), or CHAMELEON_RELEASE_NS more if none
 * of them is pinned there (chameleon_lend_bound())? Those CPUs are then not
 * lent again until each task waiting there now has had a turn
 * (lend_owed_served()): the one served first is the queue's vtime head, not
 * necessarily the one that waited longest, and the CPU, idle while lent, may
 * take a while to see the split. A waiter that leaves instead is waited for
 * no longer than another bound and a slice per waiter (lend_block_until).
 * @acc: the caller's own memory for the answer as the loop finds it
 * (rep_ctx.tick_acc).
 */
int lend_due(s32 rep, u64 now, u64 bound_ns, u32 *acc)
{
	struct rep_ctx *rc = rep_ctx(rep);
	u32 i;
	s32 c;

	if (!rc || !acc)
		return 0;
	*acc = 0;
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct cpu_lend *cl = cpu_lend(c);

		u64 nr = scx_bpf_dsq_nr_queued(c);

		if (chameleon_lend_due(now, READ_ONCE(cl->lend_wait_since), nr > 0,
				       chameleon_lend_bound(bound_ns, READ_ONCE(cl->lend_pinned),
							    CHAMELEON_RELEASE_NS))) {
			cl->lend_owed_n = nr > 0 ? nr : 1;
			cl->lend_block_until = now + bound_ns +
					       cl->lend_owed_n * CHAMELEON_SHORT_SLICE_NS;
			cl->lend_owed_j = bpf_jiffies64() - 1;
			cl->lend_owed_by = rep + 1;
			*acc = 1;
		}
	}
	return *acc;
}

/* Was @p waiting on @cpu when a bound split gave it back (lend_due())? */
static bool lend_owed_waiter(struct cpu_lend *cl, struct task_struct *p)
{
	return cl->lend_owed_by && !is_pcpu_kthread(p) &&
	       (s64)(BPF_CORE_READ(p, scx.runnable_at) - cl->lend_owed_j) <= 0;
}

/*
 * A task starts on @cpu: one of the waiters a bound split gave it back to
 * runs for its turn, not a whole slice (CHAMELEON_SHORT_SLICE_NS).
 */
void lend_owed_turn(s32 cpu, struct task_struct *p)
{
	struct cpu_lend *cl = cpu_lend(cpu);

	if (lend_owed_waiter(cl, p) && p->scx.slice > CHAMELEON_SHORT_SLICE_NS)
		scx_bpf_task_set_slice(p, CHAMELEON_SHORT_SLICE_NS);
}

/*
 * A task stops on @cpu, which a bound split gave back to its waiters: if it
 * was one of them (runnable since before the split, not a pcpu kthread: a
 * task that woke there after the split is not), it had its turn. Once each
 * waiter counted at the split has, the CPU may be lent again, and the
 * representative, if its owner runs there natively, is kicked so that the
 * owner fuses now rather than at the end of its own slice.
 */
void lend_owed_served(s32 cpu, struct task_struct *p)
{
	struct cpu_lend *cl = cpu_lend(cpu);
	s32 rep = cl->lend_owed_by - 1;
	struct rep_ctx *rc;

	if (!lend_owed_waiter(cl, p))
		return;
	if (cl->lend_owed_n > 1) {
		cl->lend_owed_n--;
		return;
	}
	cl->lend_owed_n = 0;
	cl->lend_owed_by = 0;
	cl->lend_block_until = 0;
	rc = rep_ctx(rep);
	if (rc && role_word(rep) == CHAMELEON_ROLE_NATIVE && cpu_run(rep)->curr_pid == rc->owner)
		kick_cpu(rep, SCX_KICK_PREEMPT);
}

/*
 * Must the object of @rc split for a waiter on one of its borrowed CPUs
 * (§4.3.2)? @owner is the fused task's context.
 */
int waiter_due(s32 rep, struct task_ctx *owner, u64 now)
{
	struct rep_ctx *rc = rep_ctx(rep);
	u32 i;
	s32 c;

	if (!rc || !owner)
		return 0;
	for_each_lent(i, c, rc->cpus, rc->nr_cpus) {
		struct task_struct *w = __COMPAT_scx_bpf_dsq_peek(c);

		if (chameleon_must_split(chameleon_time_since(now, rc->fused_at), min_gran_ns, w != NULL,
					 w ? w->scx.dsq_vtime : 0, owner->vruntimes[i]))
			return 1;
	}
	return 0;
}

/*
 * The kernel-work sibling of @cpu's object (SMT class kwork, intf.h) if
 * @cpu is its fused representative, else -1.
 */
s32 kwork_sibling(s32 cpu)
{
	struct rep_ctx *rc = rep_ctx(cpu);

	if (!rc || !cpu_fused(cpu) || !(rc->flags & CHAMELEON_ASSIGN_KWORK) || rc->nr_cpus < 2)
		return -1;
	return rc->cpus[1];
}

/* A lent CPU dispatches the first task in its queue it runs (lent_cpu_runs()). */
int dispatch_lent(s32 cpu)
{
	struct chameleon_cpu_stats *st = stats_here();
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (!lent_cpu_runs(cpu, p))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			if (st)
				st->nr_proxy_served++;
			return 1;
		}
		break;
	}
	return 0;
}
