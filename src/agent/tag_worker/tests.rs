use super::*;

#[test]
fn a_cheap_scan_keeps_the_period() {
    assert_eq!(pause_after(Duration::ZERO), RULES_EVERY);
    assert_eq!(pause_after(Duration::from_millis(20)), RULES_EVERY);
}

#[test]
fn a_costly_scan_is_paced_to_its_cpu_share() {
    let scan = Duration::from_millis(600);
    let pause = pause_after(scan);
    assert!(pause > RULES_EVERY);
    // CPU over the whole cycle (the scan, then the pause) within the share.
    let share = scan.as_secs_f64() / (scan + pause).as_secs_f64();
    assert!(share <= f64::from(SCAN_CPU_PCT) / 100.0 + 1e-9, "share {share}");
    assert!(share >= f64::from(SCAN_CPU_PCT) / 100.0 - 1e-3, "paced far below its share: {share}");
}

#[test]
fn the_thread_clock_counts_this_thread() {
    let t0 = thread_cpu();
    let mut x = 0u64;
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(30) {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    assert!(thread_cpu() > t0);
}
