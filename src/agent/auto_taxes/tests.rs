use super::*;

#[test]
fn instruction_counters_are_held_for_at_most_the_cap() {
    // Fake pids: tracking opens nothing (a counter is opened at the first sample).
    let mut a = AutoTaxes::with_perf_cap(2);
    for pid in 1..=5 {
        a.track(pid);
    }
    let may_count = |a: &AutoTaxes| a.tasks.values().filter(|t| t.probe.may_count_instructions()).count();
    assert_eq!(may_count(&a), 2);
    assert_eq!(a.perf_refused(), 3, "served without a counter, counted");
    // Tracked again (a DEMAND repeated): no second place.
    a.track(1);
    assert_eq!((may_count(&a), a.perf_refused()), (2, 3));
    // A place freed goes to the next task tracked.
    let holder = *a.tasks.iter().find(|(_, t)| t.probe.may_count_instructions()).unwrap().0;
    a.forget(holder);
    a.track(6);
    assert!(a.tasks[&6].probe.may_count_instructions());
    assert_eq!((may_count(&a), a.perf_refused()), (2, 3));
}
