use super::*;

/// Feed `seen` loads one reconcile each; the loads in force after each.
fn run(seen: &[usize]) -> Vec<usize> {
    let (mut current, mut pending) = (0, None);
    seen.iter()
        .map(|&s| {
            let (apply, next) = untagged_step(current, s, pending);
            pending = next;
            current = apply.unwrap_or(current);
            current
        })
        .collect()
}

#[test]
fn a_higher_load_must_hold_before_objects_shrink() {
    assert_eq!(run(&[1, 1, 1, 1]), [0, 0, 1, 1]);
    // A blip back to the load in force restarts the count.
    assert_eq!(run(&[1, 1, 0, 1, 1, 2, 2, 2]), [0, 0, 0, 0, 0, 1, 1, 1]);
    // A load that moves while above it does not; the lowest applies.
    assert_eq!(run(&[4, 5, 4, 5, 5, 5]), [0, 0, 4, 4, 4, 5]);
}

#[test]
fn a_lower_load_gives_cpus_back_at_once() {
    assert_eq!(run(&[2, 2, 2, 1, 0]), [0, 0, 2, 1, 0]);
    // Falling while a rise is pending forgets the rise.
    assert_eq!(run(&[2, 2, 2, 3, 3, 1, 3, 3]), [0, 0, 2, 2, 2, 1, 1, 1]);
}

#[test]
fn the_load_is_what_held_through_the_window() {
    // 4 spinners all along (50 samples a second); a polling shell's
    // commands in 30 samples, two of them in 10 more.
    let mut w = vec![5; 30];
    w.extend([6; 10]);
    w.extend([4; 10]);
    assert_eq!(steady_running(&mut w), Some(4));
    assert!(w.is_empty(), "the window restarts");
    assert_eq!(steady_running(&mut w), None);
    // A sample or four caught a spinner between stopping() and
    // runnable(): the 4 still count.
    let mut w = vec![4; 50];
    w[7] = 3;
    w[30] = 3;
    w[31] = 3;
    w[44] = 3;
    assert_eq!(steady_running(&mut w), Some(4));
    // Gone for a tenth of the window or more: it did not hold.
    let mut w = vec![4; 50];
    w[..6].fill(3);
    assert_eq!(steady_running(&mut w), Some(3));
}

#[test]
fn per_cpu_counts_only_add_up() {
    // A task woke on CPU 0 and slept on CPU 1: 1 and -1 (wrapped); two
    // more runnable on CPU 1.
    assert_eq!(untagged_runnable([1, 2u64.wrapping_sub(1), 1]), 3);
    assert_eq!(untagged_runnable([0u64.wrapping_sub(1), 1]), 0);
    // A torn read never makes the load negative.
    assert_eq!(untagged_runnable([0u64.wrapping_sub(2), 1]), 0);
}

#[test]
fn the_estimator_applies_what_held_and_keeps_its_streak() {
    let mut u = UntaggedLoad::default();
    // No sample since the last reconcile: nothing to say.
    assert_eq!(u.due(0), None);
    // A higher load must hold for UNTAGGED_STEADY windows.
    for _ in 1..UNTAGGED_STEADY {
        u.sample(2);
        assert_eq!(u.due(0), None);
    }
    u.sample(2);
    assert_eq!(u.due(0), Some(2));
    // A lower one applies at once.
    u.sample(1);
    assert_eq!(u.due(2), Some(1));
}
