use super::*;

/// Requesters 1..=k of weight `w[i]` in group 0, joined in pid order.
fn queue(weights: &[u32], threshold: usize) -> FastShare {
    let mut s = FastShare::new(threshold);
    for (i, &w) in weights.iter().enumerate() {
        s.join(i as i32 + 1, w, i as u64, Member::default());
    }
    s
}

/// Run `periods` periods of `n` contexts; periods held by each pid.
fn run(s: &mut FastShare, n: usize, periods: usize) -> BTreeMap<i32, usize> {
    let mut held: BTreeMap<i32, usize> = s.entries.keys().map(|&p| (p, 0)).collect();
    let mut holding = s.pick(n, &BTreeSet::new());
    for _ in 0..periods {
        holding = s.rotate(n, &holding, |_| None);
        assert_eq!(holding.len(), n.min(s.entries.len()));
        for p in &holding {
            *held.entry(*p).or_default() += 1;
        }
    }
    held
}

fn within(got: usize, want: f64, tol: f64) -> bool {
    (got as f64 - want).abs() <= want * tol
}

#[test]
fn shares_are_water_filled() {
    assert_eq!(shares(1, &[(1, 1), (2, 3)]), vec![(2, 3 * SCALE / 4), (1, SCALE / 4)]);
    // 2 contexts, weights 100 : 1 : 1: the heavy one cannot hold two, so
    // one context is split evenly between the others.
    assert_eq!(shares(2, &[(1, 100), (2, 1), (3, 1)]), vec![(1, SCALE), (2, SCALE / 2), (3, SCALE / 2)]);
    assert_eq!(shares(3, &[(1, 5), (2, 1)]), vec![(1, SCALE), (2, SCALE)]);
    assert!(shares(0, &[(1, 1)]).iter().all(|&(_, c)| c == 0));
}

#[test]
fn heavy_weight_does_not_starve_the_light_ones() {
    // One requester at 100x the others on 2 contexts: it holds one every
    // period, the two light ones take turns on the other.
    let mut s = queue(&[100, 1, 1], 0);
    let held = run(&mut s, 2, 100);
    assert_eq!(held[&1], 100);
    assert!(within(held[&2], 50.0, 0.05) && within(held[&3], 50.0, 0.05), "{held:?}");
}

#[test]
fn credit_stays_bounded_and_sleepers_bank_nothing() {
    // Two sleepers hold the contexts 3 runners leave over, and pay.
    let mut s = queue(&[1, 1, 1, 1, 1], 0);
    s.set_awake(4, false);
    s.set_awake(5, false);
    let mut holding = BTreeSet::new();
    for _ in 0..100 {
        holding = s.rotate(4, &holding, |_| None);
        assert!(s.entries.values().all(|e| e.credit.abs() <= CREDIT_BOUND), "{:?}", s.entries);
    }
    // Asleep, it earns nothing.
    let mut s = queue(&[1, 1, 1, 1], 0);
    s.set_awake(4, false);
    let mut holding = BTreeSet::new();
    for _ in 0..100 {
        holding = s.rotate(1, &holding, |_| None);
    }
    assert!(s.credit(4).unwrap().abs() < SCALE / 100, "{:?}", s.credit(4));
    let mut s = queue(&[1, 1, 1, 1], 0);
    // Credit from before it slept does not take a context from a runner.
    s.entries.get_mut(&4).unwrap().credit = CREDIT_BOUND;
    s.set_awake(4, false);
    let mut holding = BTreeSet::new();
    for _ in 0..500 {
        holding = s.rotate(1, &holding, |_| None);
        assert!(!holding.contains(&4), "a sleeper took a context from a runner");
        for e in s.entries.values() {
            assert!(e.credit.abs() <= CREDIT_BOUND, "{:?}", s.entries);
        }
    }
    // Awake again after 500 periods: its turn and at most the two
    // periods of credit it had, not a run of 500 / 4.
    s.set_awake(4, true);
    let mut turns = 0;
    for _ in 0..8 {
        holding = s.rotate(1, &holding, |_| None);
        turns += usize::from(holding.contains(&4));
    }
    assert!(turns <= 4, "the long sleeper held {turns} of the next 8 periods");
}

#[test]
fn newcomers_start_at_the_mean() {
    let mut s = queue(&[1, 1, 1], 0);
    run(&mut s, 1, 7);
    // The richest leaves mid-period: the others' mean is below zero.
    let richest = *s.entries.iter().max_by_key(|(_, e)| e.credit).unwrap().0;
    s.leave(richest);
    let mean = s.mean_credit();
    assert!(mean < 0);
    s.join(9, 1, 99, Member::default());
    assert_eq!(s.credit(9), Some(mean));
}

#[test]
fn before_the_first_period_the_order_is_static() {
    // Class, then weight, then arrival: the node manager's order before periods.
    let mut s = queue(&[1, 3, 2, 3], 0);
    assert_eq!(s.pick(2, &[1, 3].into()), [2, 4].into());
    s.join(1, 1, 0, Member { high: true, group: 0 });
    assert_eq!(s.pick(2, &BTreeSet::new()), [1, 2].into());
}

// (a) 4 identical requesters, 1 context: equal shares.
#[test]
fn equal_weights_share_equally() {
    let mut s = queue(&[1, 1, 1, 1], BOOST_DEFAULT);
    let held = run(&mut s, 1, 100);
    for (pid, &n) in &held {
        assert!(within(n, 25.0, 0.05), "pid {pid}: {n} of 100 periods: {held:?}");
    }
}

// (b) weights 1 : 3 on 1 context.
#[test]
fn weights_one_to_three_share_one_to_three() {
    let mut s = queue(&[100, 300], BOOST_DEFAULT);
    let held = run(&mut s, 1, 100);
    assert!(within(held[&1], 25.0, 0.05) && within(held[&2], 75.0, 0.05), "{held:?}");
    // And three requesters 1 : 2 : 3 on 2 contexts: 1/3, 2/3, 1.
    let mut s = queue(&[1, 2, 3], BOOST_DEFAULT);
    let held = run(&mut s, 2, 99);
    assert!(within(held[&1], 33.0, 0.05) && within(held[&2], 66.0, 0.05) && held[&3] == 99, "{held:?}");
}

// (c) a high-priority requester holds every period; the rest share what is left.
#[test]
fn high_priority_first_normal_share_the_rest() {
    let mut s = queue(&[1, 1, 1], BOOST_DEFAULT);
    s.join(4, 1, 3, Member { high: true, group: 0 });
    let held = run(&mut s, 2, 99);
    assert_eq!(held[&4], 99, "{held:?}");
    for pid in 1..=3 {
        assert!(within(held[&pid], 33.0, 0.05), "pid {pid}: {held:?}");
    }
    // Even when it is the lightest and the others' credit is higher: the
    // holder made high has just paid for its period, the others not.
    let mut s = queue(&[10_000, 10_000, 1], BOOST_DEFAULT);
    let mut holding: BTreeSet<i32> = [3].into();
    s.entries.get_mut(&3).unwrap().credit = -SCALE;
    s.entries.get_mut(&1).unwrap().credit = SCALE;
    s.join(3, 1, 2, Member { high: true, group: 0 });
    for _ in 0..50 {
        holding = s.rotate(1, &holding, |_| None);
        assert_eq!(holding, [3].into());
    }
}

// (d) a group of 4 awake requesters drops to 1 awake: that one first.
#[test]
fn low_parallelism_boost() {
    let build = |threshold| {
        let mut s = FastShare::new(threshold);
        for pid in 1..=8 {
            s.join(pid, 1, pid as u64, Member { high: false, group: if pid <= 4 { 10 } else { 20 } });
        }
        s
    };
    let mut s = build(BOOST_DEFAULT);
    let mut holding = BTreeSet::new();
    let mut before = 0;
    for _ in 0..40 {
        holding = s.rotate(1, &holding, |_| None);
        before += usize::from(holding.contains(&1));
    }
    assert!(before <= 6, "pid 1 held {before} of 40 periods while its group ran 4 threads");
    for pid in 2..=4 {
        s.set_awake(pid, false);
    }
    for i in 0..40 {
        holding = s.rotate(1, &holding, |_| None);
        assert_eq!(holding, [1].into(), "period {i} after the drop");
    }
    // Awake again: the boost ends at the next period, the others get turns.
    for pid in 2..=4 {
        s.set_awake(pid, true);
    }
    let mut after = 0;
    for _ in 0..40 {
        holding = s.rotate(1, &holding, |_| None);
        after += usize::from(holding.contains(&1));
    }
    assert!(after <= 8, "pid 1 still held {after} of 40 periods");

    // Threshold 0: no boost.
    let mut s = build(0);
    for pid in 2..=4 {
        s.set_awake(pid, false);
    }
    let held = run(&mut s, 1, 50);
    assert!(held[&1] <= 15, "{held:?}");

    // The agent sees 4 awake, BPF counts 1 runnable in group 10: boosted.
    let mut s = build(BOOST_DEFAULT);
    let mut holding = BTreeSet::new();
    for _ in 0..20 {
        holding = s.rotate(1, &holding, |g| (g == 10).then_some(1));
        assert!(holding.iter().all(|&p| p <= 4), "{holding:?}");
    }
}

#[test]
fn credit_ties_keep_the_holder() {
    // Equal credit: the holder stays (one migration less), whatever the arrival order.
    let mut s = queue(&[1, 1], 0);
    assert_eq!(s.rotate(1, &[2].into(), |_| None), [2].into());
}

// (f), the queue's part: a context freed mid-period goes to a waiter
// that did not just lose one, even one that asked later.
#[test]
fn a_fill_prefers_who_did_not_move_this_period() {
    let mut s = queue(&[1, 1, 1, 1], 0);
    let mut holding = s.pick(2, &BTreeSet::new());
    assert_eq!(holding, [1, 2].into());
    holding = s.rotate(2, &holding, |_| None);
    assert_eq!(holding, [1, 2].into(), "credit ties: the holders keep theirs");
    holding = s.rotate(2, &holding, |_| None);
    assert_eq!(holding, [3, 4].into(), "1 and 2 lost theirs at this period's start");
    s.join(5, 1, 5, Member::default());
    s.leave(3);
    holding.remove(&3);
    let next = s.pick(2, &holding);
    assert_eq!(next, [4, 5].into(), "the newcomer, not 1 or 2, which moved already");
    // With nobody else waiting, the context does not idle.
    s.leave(5);
    assert_eq!(s.pick(2, &[4].into()).len(), 2);
}
