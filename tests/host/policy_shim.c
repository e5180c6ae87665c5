// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of the BPF policy's pure helpers (bpf/vtime.h and friends): each
 * helper is wrapped in an exported function that src/policy.rs calls, so
 * the host tests exercise the very code the BPF program compiles.
 */
#include "intf.h"
#include "vtime.h"
#include "tax.h"
#include "exec_object.h"
#include "preempt.h"
#include "cpuperf.h"
#include "role.h"

int host_vtime_before(u64 a, u64 b) { return chameleon_vtime_before(a, b); }
u64 host_vtime_charge(u64 delta, u64 weight) { return chameleon_vtime_charge(delta, weight); }
u64 host_vtime_floor(u64 v, u64 clock, u64 credit) { return chameleon_vtime_floor(v, clock, credit); }
u64 host_vtime_rebase(u64 v, u64 from, u64 to) { return chameleon_vtime_rebase(v, from, to); }
u64 host_vtime_advance(u64 clock, u64 v) { return chameleon_vtime_advance(clock, v); }

u64 host_tax_charge(u64 delta, u64 weight, u64 tax) { return chameleon_tax_charge(delta, weight, tax); }
int host_may_borrow(int online, int idle, u64 vr, u64 curr, int hold) { return chameleon_may_borrow(online, idle, vr, curr, hold); }
u32 host_fuse_size(u32 nr, u32 ok) { return chameleon_fuse_size(nr, ok); }
int host_must_split(u64 fused, u64 gran, int has, u64 wv, u64 vr) { return chameleon_must_split(fused, gran, has, wv, vr); }
u64 host_vthread_place(u64 vr, u64 clock) { return chameleon_vthread_place(vr, clock); }
u64 host_group_weight(u64 tw, u64 cw, u64 nr) { return chameleon_group_weight(tw, cw, nr); }
u64 host_vtime_cap(u64 v, u64 clock, u64 bound, u64 w) { return chameleon_vtime_cap(v, clock, bound, w); }
int host_wake_preempts(u64 wv, u64 cv, u64 ran, u64 w, u64 gran)
{
	return chameleon_wake_preempts(wv, cv, ran, w, gran);
}
int host_lend_due(u64 now, u64 since, int has, u64 bound) { return chameleon_lend_due(now, since, has, bound); }
u64 host_lend_bound(u64 bound, int pinned, u64 move) { return chameleon_lend_bound(bound, pinned, move); }
u64 host_lend_wait_start(u64 now, u64 since, u64 waited) { return chameleon_lend_wait_start(now, since, waited); }
int host_guard_skips(u64 nr_queued, s32 starved_pid, int lent) { return chameleon_guard_skips(nr_queued, starved_pid, lent); }
int host_pull_worth(u64 theirs, u64 mine) { return chameleon_pull_worth(theirs, mine); }
/* Feeds @n sync wakeups of the wakees in @wakees[] to a fresh record; its "many" after each. */
void host_wake_many(const s32 *wakees, u32 n, u8 *many)
{
	struct chameleon_wake_rec r = {};
	s32 last = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		chameleon_wake_record(&r, wakees[i] != last);
		last = wakees[i];
		many[i] = r.many;
	}
}
int host_sync_behind_waker(u64 queued) { return chameleon_sync_behind_waker(queued); }
int host_steal_pick(u32 i, u32 nr, u32 near, u32 start) { return chameleon_steal_pick(i, nr, near, start); }
u32 host_tag_object_level(u32 level, u32 smt) { return chameleon_tag_object_level(level, smt); }
int host_kthread_holds(u64 at, int kt, u64 now, u64 hold) { return chameleon_kthread_holds(at, kt, now, hold); }
int host_released_long(u64 at, u64 now, u64 hold) { return chameleon_released_long(at, now, hold); }
u64 host_vtime_resume(u64 v, u64 head, int has_head) { return chameleon_vtime_resume(v, head, has_head); }
u64 host_local_linger(int lingers, u64 seen, u64 now, u64 hold, int *reenq)
{
	return chameleon_local_linger(lingers, seen, now, hold, reenq);
}
u32 host_perf_target(u64 busy, u64 span) { return chameleon_perf_target(busy, span); }

u32 host_role_step(u32 old, u32 ev, s32 arg) { return chameleon_role_step(old, ev, arg); }
u32 host_role_lent(s32 rep) { return chameleon_role_lent(rep); }
s32 host_role_with(u32 word) { return chameleon_role_with(word); }
int host_role_lent_ok(u32 word, u32 rep_word) { return chameleon_role_lent_ok(word, rep_word); }
u64 host_time_since(u64 now, u64 at) { return chameleon_time_since(now, at); }

#include "guard.h"
u32 host_lowest_bit(u64 w) { return chameleon_lowest_bit(w); }
u64 host_unserved_j(u64 now_j, u64 dispatched_j, u64 seen_j) { return chameleon_unserved_j(now_j, dispatched_j, seen_j); }
u32 host_sweep_len(u32 nr_cpus, u32 per_pass) { return chameleon_sweep_len(nr_cpus, per_pass); }
int host_guard_served(int native, int running, int online, int draining, s32 starved_pid, u64 since_ns, u64 served_ns)
{
	return chameleon_guard_served(native, running, online, draining, starved_pid, since_ns, served_ns);
}
int host_guard_tail_turn(u32 cpu, u64 pass, u32 every) { return chameleon_guard_tail_turn(cpu, pass, every); }
