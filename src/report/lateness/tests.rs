use super::*;

#[test]
fn values_land_in_the_bucket_their_bound_covers() {
    assert_eq!(bucket(0), 0);
    assert_eq!(bucket(1), 0);
    assert_eq!(bucket(2), 1);
    assert_eq!(bucket(3), 2);
    assert_eq!(bucket(1 << 22), BOUNDS_US.len() - 1);
    assert_eq!(bucket((1 << 22) + 1), BOUNDS_US.len(), "past the last bound: the open bucket");
}

#[test]
fn quantiles_come_from_the_buckets() {
    let mut l = Lateness::default();
    assert_eq!(l.quantile_us(0.99), None);
    for _ in 0..98 {
        l.record(Duration::from_micros(50));
    }
    l.record(Duration::from_millis(3));
    l.record(Duration::from_secs(9));
    assert_eq!(l.count(), 100);
    assert_eq!(l.quantile_us(0.5), Some(64));
    assert_eq!(l.quantile_us(0.99), Some(4096), "the 99th of 100 is the 3 ms one");
    assert_eq!(l.quantile_us(1.0), Some(9_000_000), "the open bucket answers with the max");
    assert_eq!(l.max_us, 9_000_000);
}

#[test]
fn a_window_is_the_difference_of_two_samples() {
    let mut l = Lateness::default();
    l.record(Duration::from_micros(10));
    let before = l.clone();
    l.record(Duration::from_millis(100));
    let w = l.since(&before);
    assert_eq!(w.count(), 1);
    assert_eq!(w.quantile_us(0.5), Some(100_000), "its bucket's bound (2^17), capped by the largest seen");
    assert_eq!(w.sum_us, 100_000);
    // An empty earlier sample (the first) is the whole history.
    assert_eq!(l.since(&Lateness::default()).count(), 2);
}

#[test]
fn openmetrics_buckets_end_open() {
    let mut l = Lateness::default();
    l.record(Duration::from_secs(10));
    let b = l.buckets_s();
    assert_eq!(b.len(), BOUNDS_US.len() + 1);
    assert_eq!(b.last().unwrap().0, f64::MAX);
    assert_eq!(b.last().unwrap().1, 1);
    assert_eq!(b[0].0, 1e-6);
}
