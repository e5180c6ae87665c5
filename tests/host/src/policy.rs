//! Host tests of the BPF policy's pure helpers: the C in bpf/*.h compiled for
//! the host by build.rs (policy_shim.c), so the very code the BPF
//! program runs is exercised here.

extern "C" {
    fn host_vtime_before(a: u64, b: u64) -> i32;
    fn host_vtime_charge(delta: u64, weight: u64) -> u64;
    fn host_vtime_floor(v: u64, clock: u64, credit: u64) -> u64;
    fn host_vtime_rebase(v: u64, from: u64, to: u64) -> u64;
    fn host_vtime_advance(clock: u64, v: u64) -> u64;
}

const MS: u64 = 1_000_000;

#[test]
fn charge_is_inverse_to_weight() {
    unsafe {
        assert_eq!(host_vtime_charge(10 * MS, 100), 10 * MS);
        assert_eq!(host_vtime_charge(10 * MS, 200), 5 * MS);
        assert_eq!(host_vtime_charge(10 * MS, 10000), 100_000);
    }
}

#[test]
fn charge_is_bounded_and_never_divides_by_zero() {
    unsafe {
        // A bogus huge delta (clock went backwards, say) costs at most 1 s.
        assert_eq!(host_vtime_charge(u64::MAX, 100), 1000 * MS);
        assert_eq!(host_vtime_charge(u64::MAX, 1), 100 * 1000 * MS);
        assert_eq!(host_vtime_charge(MS, 0), 100 * MS);
    }
}

#[test]
fn ordering_survives_wrap() {
    unsafe {
        assert_eq!(host_vtime_before(1, 2), 1);
        assert_eq!(host_vtime_before(2, 1), 0);
        assert_eq!(host_vtime_before(u64::MAX - 5, 3), 1, "just before the wrap is earlier");
        assert_eq!(host_vtime_before(3, u64::MAX - 5), 0);
    }
}

#[test]
fn sleepers_keep_at_most_one_credit() {
    unsafe {
        assert_eq!(host_vtime_floor(0, 100 * MS, 5 * MS), 95 * MS);
        assert_eq!(host_vtime_floor(98 * MS, 100 * MS, 5 * MS), 98 * MS);
        assert_eq!(host_vtime_floor(200 * MS, 100 * MS, 5 * MS), 200 * MS);
        // Clock still smaller than the credit: wraps consistently.
        assert_eq!(host_vtime_floor(1, 2, 5), 1);
    }
}

#[test]
fn rebase_keeps_distance_to_clock() {
    unsafe {
        let v = host_vtime_rebase(105, 100, 1000);
        assert_eq!(v, 1005);
        // Behind the clock by 3 stays behind by 3, across a wrap.
        assert_eq!(host_vtime_rebase(97, 100, 1), 1u64.wrapping_sub(3));
    }
}

#[test]
fn counters_wrap_safely() {
    unsafe {
        // A clock that wraps keeps ordering and charging consistent.
        let clock = u64::MAX - MS;
        let later = clock.wrapping_add(host_vtime_charge(5 * MS, 100));
        assert_eq!(host_vtime_before(clock, later), 1);
        assert_eq!(host_vtime_advance(clock, later), later);
    }
}

#[test]
fn clock_never_goes_back() {
    unsafe {
        assert_eq!(host_vtime_advance(10, 20), 20);
        assert_eq!(host_vtime_advance(20, 10), 20);
        assert_eq!(host_vtime_advance(u64::MAX, 2), 2, "advances across the wrap");
    }
}

extern "C" {
    fn host_tax_charge(delta: u64, weight: u64, tax: u64) -> u64;
    fn host_may_borrow(online: i32, idle: i32, vr: u64, curr: u64, hold: i32) -> i32;
    fn host_fuse_size(nr: u32, ok: u32) -> u32;
    fn host_must_split(fused: u64, gran: u64, has: i32, waiter: u64, vr: u64) -> i32;
    fn host_vthread_place(vr: u64, clock: u64) -> u64;
    fn host_perf_target(busy: u64, span: u64) -> u32;
}

#[test]
fn tax_at_the_range_ends() {
    unsafe {
        // tax 1.00 charges the borrowed CPUs like the representative.
        assert_eq!(host_tax_charge(10 * MS, 100, 100), 10 * MS);
        // 0.01 and 100 are the ends; beyond them the tax is clamped.
        assert_eq!(host_tax_charge(10 * MS, 100, 1), 100_000);
        assert_eq!(host_tax_charge(10 * MS, 100, 10_000), 1000 * MS);
        assert_eq!(host_tax_charge(10 * MS, 100, 0), 100_000);
        assert_eq!(host_tax_charge(10 * MS, 100, 1_000_000), 1000 * MS);
        // Heavier tasks pay less per ns, as with vtime.
        assert_eq!(host_tax_charge(10 * MS, 200, 100), 5 * MS);
    }
}

#[test]
fn tax_never_overflows() {
    unsafe {
        // Worst case: a bogus huge delta, the lowest weight, the highest tax.
        let worst = host_tax_charge(u64::MAX, 1, 10_000);
        assert_eq!(worst, 1000 * MS * 100 * 100);
        assert!(worst < u64::MAX / 1000, "room for a thousand worst charges");
    }
}

#[test]
fn fuse_when_idle_or_ahead_of_what_runs() {
    unsafe {
        // Idle online CPU: borrow, whatever the vtimes.
        assert_eq!(host_may_borrow(1, 1, 500, 100, 0), 1);
        // Busy CPU: only if the virtual thread is earlier than what runs.
        assert_eq!(host_may_borrow(1, 0, 99, 100, 0), 1);
        assert_eq!(host_may_borrow(1, 0, 100, 100, 0), 0);
        assert_eq!(host_may_borrow(1, 0, 101, 100, 0), 0);
        // Offline: never.
        assert_eq!(host_may_borrow(0, 1, 0, 100, 0), 0);
        // Across the wrap.
        assert_eq!(host_may_borrow(1, 0, u64::MAX - 10, 5, 0), 1);
        // A held object (SMT class uni) takes its busy sibling whatever the
        // vtimes, never an offline one.
        assert_eq!(host_may_borrow(1, 0, 101, 100, 1), 1);
        assert_eq!(host_may_borrow(0, 0, 0, 100, 1), 0);
    }
}

#[test]
fn partial_fuse_takes_the_largest_qualifying_prefix() {
    unsafe {
        // Level 1 object {rep, sibling}.
        assert_eq!(host_fuse_size(2, 0b10), 2, "sibling free: fuse");
        assert_eq!(host_fuse_size(2, 0b00), 1, "sibling busy: native");
        // Level 2 object {0,1,2,3}.
        assert_eq!(host_fuse_size(4, 0b1110), 4, "all free: whole object");
        assert_eq!(host_fuse_size(4, 0b1010), 2, "cpu 2 busy: fall back to the pair");
        assert_eq!(host_fuse_size(4, 0b1100), 1, "sibling busy: nothing smaller qualifies");
        // Level 3.
        assert_eq!(host_fuse_size(8, 0b1111_1110), 8);
        assert_eq!(host_fuse_size(8, 0b0111_1110), 4);
        // Bits beyond the object are ignored.
        assert_eq!(host_fuse_size(2, 0b1111_0000), 1);
    }
}

#[test]
fn split_needs_granularity_and_an_earlier_waiter() {
    unsafe {
        let gran = MS;
        assert_eq!(host_must_split(2 * MS, gran, 1, 10, 20), 1, "waiter earlier, gran done");
        assert_eq!(host_must_split(MS / 2, gran, 1, 10, 20), 0, "too soon");
        assert_eq!(host_must_split(2 * MS, gran, 0, 10, 20), 0, "nobody waits");
        assert_eq!(host_must_split(2 * MS, gran, 1, 20, 20), 0, "waiter not earlier");
        assert_eq!(host_must_split(2 * MS, gran, 1, u64::MAX - 1, 3), 1, "across the wrap");
    }
}

#[test]
fn virtual_threads_keep_their_debt() {
    unsafe {
        assert_eq!(host_vthread_place(50, 100), 100, "placed at the CPU's clock");
        assert_eq!(host_vthread_place(500, 100), 500, "tax still owed stays owed");
    }
}

extern "C" {
    fn host_tag_object_level(level: u32, smt: u32) -> u32;
}

#[test]
fn smt_class_decides_the_object_level() {
    use chameleon::bpf_intf::*;
    unsafe {
        assert_eq!(host_tag_object_level(2, chameleon_smt_CHAMELEON_SMT_ANY), 2);
        assert_eq!(host_tag_object_level(2, chameleon_smt_CHAMELEON_SMT_SMT), 0, "shares its core");
        assert_eq!(host_tag_object_level(0, chameleon_smt_CHAMELEON_SMT_KWORK), 1, "kwork: its SMT pair");
        assert_eq!(host_tag_object_level(3, chameleon_smt_CHAMELEON_SMT_KWORK), 1, "one sibling for kernel work");
        assert_eq!(host_tag_object_level(0, chameleon_smt_CHAMELEON_SMT_UNI), 1, "at least its SMT pair");
        assert_eq!(host_tag_object_level(3, chameleon_smt_CHAMELEON_SMT_UNI), 3);
    }
}

extern "C" {
    fn host_vtime_cap(v: u64, clock: u64, bound: u64, curr_weight: u64) -> u64;
    fn host_wake_preempts(wake_vtime: u64, curr_vtime: u64, ran_ns: u64, curr_weight: u64, gran_ns: u64) -> i32;
    fn host_lend_due(now: u64, since: u64, has_waiter: i32, bound: u64) -> i32;
    fn host_lend_bound(bound: u64, pinned: i32, move_ns: u64) -> u64;
    fn host_lend_wait_start(now: u64, since: u64, kernel_waited: u64) -> u64;
    fn host_steal_pick(i: u32, nr: u32, near: u32, start: u32) -> i32;
    fn host_pull_worth(theirs: u64, mine: u64) -> i32;
    fn host_wake_many(wakees: *const i32, n: u32, many: *mut u8);
    fn host_sync_behind_waker(queued: u64) -> i32;
    fn host_guard_skips(nr_queued: u64, starved_pid: i32, lent: i32) -> i32;
}

#[test]
fn vtime_cap_bounds_the_wait_behind_a_heavier_task() {
    unsafe {
        let clock = 1_000 * MS;
        // Behind a nice-0 task (weight 100) a 1 s bound allows 1 s of vtime:
        // a nice-19 task charged 500 ms for one slice is left alone.
        assert_eq!(host_vtime_cap(clock + 500 * MS, clock, 1000 * MS, 100), clock + 500 * MS);
        // Behind nice -20 (8668) the clock moves 86.68x slower: 11.5 ms of
        // vtime is what 1 s of its run adds, so that is where the cap is.
        let capped = host_vtime_cap(clock + 500 * MS, clock, 1000 * MS, 8668);
        assert_eq!(capped, clock + 1000 * MS * 100 / 8668);
        // Nothing running (weight 0) counts as nice 0; earlier vtimes untouched.
        assert_eq!(host_vtime_cap(clock - 5, clock, 1000 * MS, 0), clock - 5);
        // Wraps like every vtime.
        assert_eq!(host_vtime_cap(5, u64::MAX - 10, 1000 * MS, 100), 5);
    }
}

#[test]
fn wake_preempts_only_a_task_ahead_by_more_than_the_granularity() {
    unsafe {
        let v = 1_000 * MS;
        let g = MS;
        // A sleeper floored to one slice (5 ms) of credit against a task that
        // started at the clock and ran 2 ms: owed 7 ms > 1 ms, preempts.
        assert_eq!(host_wake_preempts(v - 5 * MS, v, 2 * MS, 100, g), 1);
        // The running task keeps the CPU for the granularity, owed or not.
        assert_eq!(host_wake_preempts(v - 5 * MS, v, g - 1, 100, g), 0);
        // A waker that ran as much as the running task waits its turn.
        assert_eq!(host_wake_preempts(v + 2 * MS, v, 2 * MS, 100, g), 0);
        assert_eq!(host_wake_preempts(v + MS, v, 2 * MS, 100, g), 0, "ahead by exactly the granularity");
        // A heavy running task (nice -20) accrues vtime 86.68x slower: 2 ms
        // of its run is 23,073 of vtime, the granularity 11,536.
        assert_eq!(host_wake_preempts(v + 11_000, v, 2 * MS, 8668, g), 1);
        assert_eq!(host_wake_preempts(v + 12_000, v, 2 * MS, 8668, g), 0);
        // Granularity 0 switches it off.
        assert_eq!(host_wake_preempts(0, v, 100 * MS, 100, 0), 0);
        // Wraps like every vtime.
        assert_eq!(host_wake_preempts(u64::MAX - 10 * MS, 5, 2 * MS, 100, g), 1);
    }
}

#[test]
fn lending_bound_needs_a_waiter_and_the_time() {
    unsafe {
        let b = 50 * MS;
        assert_eq!(host_lend_due(100 * MS, 49 * MS, 1, b), 1);
        assert_eq!(host_lend_due(100 * MS, 51 * MS, 1, b), 0, "not yet");
        assert_eq!(host_lend_due(100 * MS, MS, 0, b), 0, "nobody waits any more");
        assert_eq!(host_lend_due(100 * MS, 0, 1, b), 0, "no wait recorded");
    }
}

#[test]
fn lending_bound_waits_longer_for_waiters_the_guard_may_move() {
    unsafe {
        let (b, mv, since, now) = (50 * MS, 50 * MS, 1_000 * MS, 1_060 * MS);
        // A waiter pinned to the lent CPU: the bound as given.
        assert_eq!(host_lend_bound(b, 1, mv), b);
        assert_eq!(host_lend_due(now, since, 1, host_lend_bound(b, 1, mv)), 1);
        // Movable waiters only: the guard moves them from the bound on; the
        // object splits for them only if none could be moved for `mv` more.
        assert_eq!(host_lend_bound(b, 0, mv), b + mv);
        assert_eq!(host_lend_due(now, since, 1, host_lend_bound(b, 0, mv)), 0, "the guard moves them first");
        assert_eq!(host_lend_due(now + 41 * MS, since, 1, host_lend_bound(b, 0, mv)), 1, "still bounded");
    }
}

#[test]
fn lending_bound_starts_at_the_kernels_account_if_ours_missed_the_wait() {
    unsafe {
        let (b, now) = (50 * MS, 20_000 * MS);
        // Nothing recorded, but the kernel says the queue's tail has been
        // runnable for 2 s (starve: 11.66 s once): the bound is due now.
        let start = host_lend_wait_start(now, 0, 2_000 * MS);
        assert_eq!(start, now - 2_000 * MS);
        assert_eq!(host_lend_due(now, start, 1, b), 1);
        // Our record is earlier (the waiter ran briefly; the kernel restarted
        // its clock): ours stands. A later record gives way to the kernel's.
        assert_eq!(host_lend_wait_start(now, now - 80 * MS, 10 * MS), now - 80 * MS);
        assert_eq!(host_lend_wait_start(now, now - 5 * MS, 60 * MS), now - 60 * MS);
        // The kernel saw no wait (or nonsense): ours, even if none.
        assert_eq!(host_lend_wait_start(now, now - 5 * MS, 0), now - 5 * MS);
        assert_eq!(host_lend_wait_start(now, 0, 0), 0);
        assert_eq!(host_lend_wait_start(10 * MS, 0, 20 * MS), 0);
    }
}

#[test]
fn guard_reads_a_lent_cpus_queue_even_with_a_starved_task_named() {
    unsafe {
        assert_eq!(host_guard_skips(0, 0, 0), 1, "empty queue");
        assert_eq!(host_guard_skips(0, 0, 3), 1, "empty lent queue");
        assert_eq!(host_guard_skips(2, 0, 0), 0);
        // Not lent: the named task runs at the CPU's next dispatch.
        assert_eq!(host_guard_skips(2, 1234, 0), 1);
        // Lent: its dispatch serves only its bound kthreads and never
        // reaches the named task, so a name left from before the lend
        // would keep the kernel's account of its waiters (the lending
        // bound's backstop) from being read for as long as it is lent.
        assert_eq!(host_guard_skips(2, 1234, 3), 0);
    }
}

#[test]
fn an_idle_cpu_pulls_a_second_waiter_a_busy_one_only_a_long_queue() {
    unsafe {
        // Idle: a queue whose head waits behind another waiter.
        assert_eq!(host_pull_worth(1, 0), 0, "the head of a queue of one runs next there");
        assert_eq!(host_pull_worth(2, 0), 1);
        // Busy: longer than ours by more than two, so no task goes back and forth.
        assert_eq!(host_pull_worth(3, 1), 0);
        assert_eq!(host_pull_worth(4, 1), 1);
        assert_eq!(host_pull_worth(0, 0), 0);
        assert_eq!(host_pull_worth(u64::MAX - 3, 5), 1);
    }
}

fn wake_many(wakees: &[i32]) -> Vec<u8> {
    let mut many = vec![0u8; wakees.len()];
    unsafe { host_wake_many(wakees.as_ptr(), wakees.len() as u32, many.as_mut_ptr()) };
    many
}

/// A writer to ten pipes in turn wakes many (its wakees queue behind it);
/// a pipe's end waking its one partner, or two partners in long runs, does
/// not; the answer holds for a window of 16 wakeups and follows a change.
#[test]
fn a_waker_of_many_in_turn_is_told_from_a_partner() {
    let round_robin: Vec<i32> = (0..64).map(|i| 100 + i % 10).collect();
    let many = wake_many(&round_robin);
    assert!(many[..15].iter().all(|&m| m == 0), "no answer before a whole window");
    assert!(many[15..].iter().all(|&m| m == 1), "{many:?}");

    let partner = vec![7; 64];
    assert!(wake_many(&partner).iter().all(|&m| m == 0));
    let runs: Vec<i32> = (0..64).map(|i| if (i / 8) % 2 == 0 { 7 } else { 8 }).collect();
    assert!(wake_many(&runs).iter().all(|&m| m == 0), "one flip in 8: a partner at a time");

    let mut change = round_robin[..32].to_vec();
    change.extend(vec![7; 32]);
    let many = wake_many(&change);
    assert_eq!(many[31], 1);
    assert_eq!(many[47], 0, "a window of one partner ends it");
}

/// A waker of many's wakee queues behind it only while none waits there
/// already: the kernel's own test (its local queue) never sees our queue, so
/// without this a storm of wakes piled every wakee behind one CPU.
#[test]
fn one_wakee_at_a_time_queues_behind_its_waker() {
    unsafe {
        assert_eq!(host_sync_behind_waker(0), 1);
        assert_eq!(host_sync_behind_waker(1), 0, "a second wakee is placed elsewhere");
        assert_eq!(host_sync_behind_waker(31), 0);
    }
}

#[test]
fn steal_looks_at_siblings_then_a_rotating_window() {
    unsafe {
        // 7 other CPUs, 1 sibling, 8 looks: everything, sibling first.
        let all: Vec<i32> = (0..8).map(|i| host_steal_pick(i, 7, 1, 0)).collect();
        assert_eq!(all, vec![0, 1, 2, 3, 4, 5, 6, -1]);
        // 63 others: the sibling, then a window of 7 that moves with start.
        let w0: Vec<i32> = (0..8).map(|i| host_steal_pick(i, 63, 1, 0)).collect();
        assert_eq!(w0, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        let w1: Vec<i32> = (0..8).map(|i| host_steal_pick(i, 63, 1, 7)).collect();
        assert_eq!(w1, vec![0, 8, 9, 10, 11, 12, 13, 14]);
        // The start moves by the window (7) and in 9 dispatches every far
        // CPU has been looked at.
        let mut seen = std::collections::BTreeSet::new();
        for d in 0..9u32 {
            for i in 1..8 {
                seen.insert(host_steal_pick(i, 63, 1, d * 7));
            }
        }
        assert_eq!(seen.len(), 62);
        // No siblings, or nothing at all.
        assert_eq!(host_steal_pick(0, 3, 0, 5), 5 % 3);
        assert_eq!(host_steal_pick(0, 0, 0, 0), -1);
    }
}

/// Per-CPU state written on the hot path (running/stopping/enqueue) fills
/// whole cache lines, so two CPUs never write one line (issue 9, finding 10).
#[test]
fn per_cpu_state_is_cache_line_sized() {
    use chameleon::bpf_skel::types;
    let line = chameleon::bpf_intf::chameleon_consts_CHAMELEON_CACHELINE as usize;
    assert_eq!(std::mem::size_of::<types::cpu_role>() % line, 0);
    assert_eq!(std::mem::size_of::<types::cpu_run>() % line, 0);
    assert_eq!(std::mem::size_of::<types::cpu_queue>() % line, 0);
    assert_eq!(std::mem::size_of::<types::cpu_lend>() % line, 0);
    assert_eq!(std::mem::size_of::<types::cpu_hotplug>() % line, 0);
    assert_eq!(std::mem::size_of::<types::cpu_release>() % line, 0);
    assert_eq!(std::mem::size_of::<types::cpu_perf>() % line, 0);
    assert_eq!(std::mem::size_of::<types::rep_ctx>() % line, 0);
    assert_eq!(std::mem::size_of::<types::chameleon_cpu_stats>() % line, 0);
    assert_eq!(std::mem::align_of::<chameleon::bpf_intf::chameleon_cpu_stats>(), line);
}

/// The policy checks the module's ABI with its own copy of the version (it
/// cannot include the module's UAPI header): the two must agree.
#[test]
fn policy_and_module_agree_on_the_proxy_abi() {
    let header = include_str!("../../../kmod_proxy/chameleon_proxy.h");
    let module: u32 = header
        .lines()
        .find_map(|l| l.strip_prefix("#define CHAMELEON_PROXY_ABI_VERSION")?.trim().parse().ok())
        .expect("CHAMELEON_PROXY_ABI_VERSION in kmod_proxy/chameleon_proxy.h");
    assert_eq!(chameleon::bpf_intf::chameleon_consts_CHAMELEON_PROXY_ABI, module);
}

extern "C" {
    fn host_kthread_holds(released_at: u64, by_kthread: i32, now: u64, hold: u64) -> i32;
    fn host_released_long(released_at: u64, now: u64, hold: u64) -> i32;
    fn host_vtime_resume(vtime: u64, head_vtime: u64, has_head: i32) -> u64;
    fn host_local_linger(lingers: i32, seen_at: u64, now: u64, hold: u64, reenq: *mut i32) -> u64;
}

#[test]
fn a_local_queue_no_scx_task_serves_goes_back_after_a_while() {
    let hold = 50 * MS;
    let linger = |lingers: i32, seen: u64, now: u64| {
        let mut reenq = -1;
        let seen = unsafe { host_local_linger(lingers, seen, now, hold, &mut reenq) };
        (seen, reenq)
    };
    // Nothing there, or an scx task runs: nothing to remember.
    assert_eq!(linger(0, 0, 100 * MS), (0, 0));
    assert_eq!(linger(0, 90 * MS, 100 * MS), (0, 0), "served since: forgotten");
    // First seen: remembered, not yet re-enqueued (an idle CPU picks it up).
    assert_eq!(linger(1, 0, 100 * MS), (100 * MS, 0));
    assert_eq!(linger(1, 0, 0), (1, 0), "0 means not seen: never stored");
    assert_eq!(linger(1, 100 * MS, 149 * MS), (100 * MS, 0));
    // Still there after the hold: back to enqueue, and forgotten.
    assert_eq!(linger(1, 100 * MS, 150 * MS), (0, 1));
    assert_eq!(linger(1, 100 * MS, 20_000 * MS), (0, 1));
}

#[test]
fn a_kthreads_turn_holds_the_queue_for_a_while_only() {
    unsafe {
        let hold = 50 * MS;
        assert_eq!(host_kthread_holds(0, 1, 5 * MS, hold), 0, "the CPU is ours");
        assert_eq!(host_kthread_holds(100 * MS, 1, 101 * MS, hold), 1);
        assert_eq!(host_kthread_holds(100 * MS, 1, 149 * MS, hold), 1);
        assert_eq!(host_kthread_holds(100 * MS, 0, 101 * MS, hold), 0, "an RT task took it");
        // Past the hold (an RT task came after the kthread, and the kernel
        // does not say so): the queue is anyone's, and drained.
        assert_eq!(host_kthread_holds(100 * MS, 1, 150 * MS, hold), 0);
        assert_eq!(host_released_long(100 * MS, 150 * MS, hold), 1);
        assert_eq!(host_released_long(100 * MS, 20_000 * MS, hold), 1);
        assert_eq!(host_released_long(100 * MS, 149 * MS, hold), 0);
        assert_eq!(host_released_long(0, 20_000 * MS, hold), 0, "the CPU is ours");
    }
}

#[test]
fn a_task_a_kthread_pushed_off_resumes_in_front() {
    unsafe {
        // Behind the head: just before it, where the local queue had it.
        assert_eq!(host_vtime_resume(500, 300, 1), 299);
        assert_eq!(host_vtime_resume(300, 300, 1), 299);
        // Already in front, or nobody queued: unchanged.
        assert_eq!(host_vtime_resume(200, 300, 1), 200);
        assert_eq!(host_vtime_resume(500, 0, 0), 500);
        // Wraps like every vtime: 5 is after u64::MAX - 10.
        assert_eq!(host_vtime_resume(5, u64::MAX - 10, 1), u64::MAX - 11);
        assert_eq!(host_vtime_resume(u64::MAX - 10, 5, 1), u64::MAX - 10);
    }
}

extern "C" {
    fn host_group_weight(task_weight: u64, cg_weight: u64, nr_runnable: u64) -> u64;
}

#[test]
fn cgroup_weight_scales_and_is_shared_among_the_cgroups_runnable_tasks() {
    unsafe {
        // No cgroup weight (a root task): its own weight.
        assert_eq!(host_group_weight(100, 0, 0), 100);
        assert_eq!(host_group_weight(1024, 0, 3), 1024);
        // One task per cgroup at cpu.weight 100 and 300: 1:3.
        assert_eq!(host_group_weight(100, 100, 1), 100);
        assert_eq!(host_group_weight(100, 300, 1), 300);
        // Four runnable tasks at 100 weigh together what one does.
        assert_eq!(4 * host_group_weight(100, 100, 4), 100);
        // Nice still orders tasks within the cgroup.
        assert!(host_group_weight(1024, 100, 2) > host_group_weight(100, 100, 2));
        // A count not yet taken (0) counts as the task alone.
        assert_eq!(host_group_weight(100, 200, 0), 200);
        // Clamped to the kernel's range: never 0 (a division), never above 10000.
        assert_eq!(host_group_weight(1, 1, 1000), 1);
        assert_eq!(host_group_weight(10000, 10000, 1), 10000);
    }
}

#[test]
fn perf_target_follows_use_with_headroom() {
    unsafe {
        // Idle: nothing; half busy: 5/8 of full (a quarter of headroom).
        assert_eq!(host_perf_target(0, 32 * MS), 0);
        assert_eq!(host_perf_target(16 * MS, 32 * MS), 640);
        // 80 % busy or more: full, never beyond.
        assert_eq!(host_perf_target(26 * MS, 32 * MS), 1024);
        assert_eq!(host_perf_target(40 * MS, 32 * MS), 1024);
        // No window (should not happen): full, the kernel's default.
        assert_eq!(host_perf_target(0, 0), 1024);
    }
}

extern "C" {
    fn host_time_since(now: u64, at: u64) -> u64;
}

/// The guard takes `now` once and then reads timestamps other CPUs keep
/// writing: one written after `now` is no time ago, not 584 years (which
/// split objects as "owner away", drained served queues and ended lends).
#[test]
fn a_timestamp_newer_than_now_is_no_time_ago() {
    unsafe {
        let now = 1000 * MS;
        assert_eq!(host_time_since(now, now - 5 * MS), 5 * MS);
        assert_eq!(host_time_since(now, now + 1), 0);
        assert_eq!(host_lend_due(now, now + 1, 1, 50 * MS), 0, "a wait that began after now is not due");
        assert_eq!(host_released_long(now + 1, now, 50 * MS), 0, "a release after now is not long");
        assert_eq!(host_released_long(now - 50 * MS, now, 50 * MS), 1);
    }
}

extern "C" {
    fn host_lowest_bit(w: u64) -> u32;
    fn host_unserved_j(now_j: u64, dispatched_j: u64, seen_j: u64) -> u64;
    fn host_sweep_len(nr_cpus: u32, per_pass: u32) -> u32;
    fn host_guard_served(native: i32, running: i32, online: i32, draining: i32, starved_pid: i32, since_ns: u64, served_ns: u64) -> i32;
    fn host_guard_tail_turn(cpu: u32, pass: u64, every: u32) -> i32;
}

/// The guard leaves a CPU to itself only while it plainly serves its queue:
/// any of a role, a higher class or nothing of ours running, hotplug, a
/// named starved task or a dispatch too long ago makes it look.
#[test]
fn the_guard_leaves_only_a_cpu_that_serves_its_queue() {
    const SERVED: u64 = 50_000_000;
    unsafe {
        assert_eq!(host_guard_served(1, 1, 1, 0, 0, 4_000_000, SERVED), 1, "native, running, dispatched 4 ms ago");
        assert_eq!(host_guard_served(0, 1, 1, 0, 0, 0, SERVED), 0, "a role (object, lend, park)");
        assert_eq!(host_guard_served(1, 0, 1, 0, 0, 0, SERVED), 0, "nothing of ours runs: idle or a higher class");
        assert_eq!(host_guard_served(1, 1, 0, 0, 0, 0, SERVED), 0, "offline");
        assert_eq!(host_guard_served(1, 1, 1, 1, 0, 0, SERVED), 0, "draining or dying");
        assert_eq!(host_guard_served(1, 1, 1, 0, 42, 0, SERVED), 0, "a task named starved");
        assert_eq!(host_guard_served(1, 1, 1, 0, 0, SERVED, SERVED), 0, "no dispatch for the whole bound");
    }
}

/// Each served CPU's tail is looked at once in every 8 passes, and each pass
/// looks at an eighth of them.
#[test]
fn each_served_tail_has_a_turn_in_every_eight_passes() {
    for cpu in 0..256u32 {
        let turns: Vec<u64> = (0..16u64).filter(|&p| unsafe { host_guard_tail_turn(cpu, p, 8) } == 1).collect();
        assert_eq!(turns.len(), 2, "cpu {cpu}: {turns:?}");
        assert_eq!(turns[1] - turns[0], 8);
    }
    for pass in 0..8u64 {
        let n = (0..256u32).filter(|&c| unsafe { host_guard_tail_turn(c, pass, 8) } == 1).count();
        assert_eq!(n, 32, "pass {pass}");
    }
}

/// The guard walks the set bits of its words: every bit, lowest first.
#[test]
fn the_guard_finds_each_set_bit() {
    for i in 0..64 {
        assert_eq!(unsafe { host_lowest_bit(1u64 << i) }, i);
        assert_eq!(unsafe { host_lowest_bit(u64::MAX << i) }, i);
    }
    let mut w: u64 = 0x8000_0001_0010_0006;
    let mut seen = Vec::new();
    while w != 0 {
        seen.push(unsafe { host_lowest_bit(w) });
        w &= w - 1;
    }
    assert_eq!(seen, vec![1, 2, 20, 32, 63]);
}

/// A queue is unserved from the later of its CPU's last dispatch and the
/// guard's first sight of it holding tasks: a CPU that idled for a minute
/// and just got a task is not a queue unserved for a minute.
#[test]
fn an_idle_cpus_old_dispatch_is_not_an_unserved_queue() {
    unsafe {
        assert_eq!(host_unserved_j(1000, 10, 995), 5, "seen 5 jiffies ago, dispatched long before");
        assert_eq!(host_unserved_j(1000, 990, 900), 10, "dispatched after the guard first saw it");
        assert_eq!(host_unserved_j(1000, 400, 0), 600, "not seen: its dispatch alone");
        assert_eq!(host_unserved_j(1000, 1001, 0), 0, "a dispatch after now is no time ago");
        assert_eq!(host_sweep_len(4, 8), 4);
        assert_eq!(host_sweep_len(256, 8), 8);
    }
}
