use super::*;

// No sleeps: a period no test outlasts, and a zero one always due.

#[test]
fn not_due_within_its_period() {
    let hour = Duration::from_secs(3600);
    let mut e = Every::new(hour);
    assert!(!e.start_if_due());
    assert_eq!(e.overdue(), None);
    assert!(e.remaining() > Duration::ZERO && e.remaining() <= hour);
}

#[test]
fn a_zero_period_is_always_due() {
    let mut e = Every::new(Duration::ZERO);
    assert!(e.overdue().is_some());
    assert_eq!(e.remaining(), Duration::ZERO);
    assert!(e.start_if_due());
    assert!(e.start_if_due());
}
