use super::*;

#[test]
fn a_long_sleeper_is_released_once_and_wakes_dormant() {
    let t0 = Instant::now();
    let mut s = Sleepers::default();
    s.sleep(1, t0);
    // A second sleep event does not restart the clock.
    s.sleep(1, t0 + SLEEP_RELEASE / 2);
    assert!(s.due_release(t0 + SLEEP_RELEASE / 2).is_empty());
    assert_eq!(s.due_release(t0 + SLEEP_RELEASE), [1]);
    // Released already: not again.
    assert!(s.due_release(t0 + SLEEP_RELEASE * 3).is_empty());
    assert!(s.wake(1));
    assert!(s.is_empty());
    // Woken: it is no longer dormant.
    assert!(!s.wake(1));
}

#[test]
fn a_short_sleeper_wakes_with_its_object() {
    let t0 = Instant::now();
    let mut s = Sleepers::default();
    s.sleep(1, t0);
    s.sleep(2, t0 + SLEEP_RELEASE / 2);
    assert_eq!(s.due_release(t0 + SLEEP_RELEASE), [1]);
    assert!(!s.wake(2));
    assert!(s.due_release(t0 + SLEEP_RELEASE * 2).is_empty());
}

#[test]
fn forgetting_clears_both() {
    let t0 = Instant::now();
    let mut s = Sleepers::default();
    s.sleep(1, t0);
    assert_eq!(s.due_release(t0 + SLEEP_RELEASE), [1]);
    s.forget(1);
    assert!(s.is_empty());
    // A newcomer given the pid is not taken for dormant.
    assert!(!s.wake(1));
    // An event before the clock's reading (now taken earlier) counts as 0.
    s.sleep(3, t0 + SLEEP_RELEASE);
    assert!(s.due_release(t0).is_empty());
}
