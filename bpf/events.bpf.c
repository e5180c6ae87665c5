/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Events to the agent, through the ring buffer (intf.h: struct
 * chameleon_event). A full ring buffer drops the event and counts it
 * (nr_events_dropped); a dropped DEMAND is counted apart too
 * (nr_demand_dropped), and only that makes a tagged task without an object
 * ask again (redemand_if_lost(), at most once per CHAMELEON_REDEMAND_NS per
 * task): other events' losses must not make every tagged task re-send its
 * DEMAND, which filled the ring buffer further. The agent reconciles the
 * rest once a second.
 */
#include "chameleon.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CHAMELEON_RINGBUF_SZ);
} events SEC(".maps");

struct chameleon_event *event_reserve(u32 kind, s32 cpu)
{
	struct chameleon_event *ev;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&nr_events_dropped, 1);
		if (kind == CHAMELEON_EV_DEMAND)
			__sync_fetch_and_add(&nr_demand_dropped, 1);
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
	ev->start_ns = p->start_boottime;
	ev->cgroup_id = task_cgroup_id(p);
	__builtin_memcpy(ev->comm, p->comm, sizeof(ev->comm));
}

/*
 * The agent sleeps on the ring buffer. What it must act on at once (a task
 * that asks for an object or leaves, a CPU that comes or goes, a sleeper
 * whose object was freed waking up) wakes it; the rest (fuse, split, the
 * sleeps and wakes of a task that holds an object) waits for its next loop,
 * at most 20 ms away while it has requesters. FORCE, not the default: the
 * default wakes only a consumer that has read everything, which a quiet
 * event still pending prevents.
 */
void event_submit(struct chameleon_event *ev, bool urgent)
{
	bpf_ringbuf_submit(ev, urgent ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* A task or CPU event; @urgent wakes the agent. */
void emit(u32 kind, s32 cpu, struct task_struct *p, bool urgent)
{
	struct chameleon_event *ev = event_reserve(kind, cpu);

	if (!ev)
		return;
	if (p)
		event_set_task(ev, p);
	event_submit(ev, urgent);
}

/* A task wants an object of @level (0: no longer wants one). */
void emit_demand(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 cgid, u32 level)
{
	struct chameleon_event *ev;

	tctx->demand_drops = READ_ONCE(nr_demand_dropped);
	tctx->demand_at = bpf_ktime_get_ns();
	ev = event_reserve(CHAMELEON_EV_DEMAND, cpu);
	if (!ev)
		return;
	event_set_task(ev, p);
	ev->cgroup_id = cgid;
	ev->level = level;
	event_submit(ev, true);
}

/*
 * A DEMAND was dropped since @tctx's task last asked, and it last asked at
 * least CHAMELEON_REDEMAND_NS ago: its own may be the lost one.
 */
bool demand_lost(struct task_ctx *tctx)
{
	return tctx->demand_drops != READ_ONCE(nr_demand_dropped) &&
	       bpf_ktime_get_ns() - tctx->demand_at >= CHAMELEON_REDEMAND_NS;
}

/* A tagged task leaves: how long it ran, and ran fused. */
void emit_exit(struct task_struct *p, s32 cpu, u64 run_ns, u64 fused_ns)
{
	struct chameleon_event *ev = event_reserve(CHAMELEON_EV_TASK_EXIT, cpu);

	if (!ev)
		return;
	event_set_task(ev, p);
	ev->run_ns = run_ns;
	ev->fused_ns = fused_ns;
	event_submit(ev, true);
}

/* Wake the agent: a discarded record carries no event, only the wakeup. */
void events_wake_agent(void)
{
	void *rec = bpf_ringbuf_reserve(&events, sizeof(struct chameleon_event), 0);

	if (rec)
		bpf_ringbuf_discard(rec, BPF_RB_FORCE_WAKEUP);
}
