use super::*;

fn cpu(enq: u64, busy: u64) -> chameleon_cpu_stats {
    chameleon_cpu_stats { nr_enqueued: enq, busy_ns: busy, ..Default::default() }
}

#[test]
fn sums_cpus() {
    let t = Totals::sum(&[cpu(1, 10), cpu(2, 20)]);
    assert_eq!((t.enqueued, t.busy_ns), (3, 30));
}

#[test]
fn difference_survives_counter_wrap() {
    let before = Totals::sum(&[cpu(u64::MAX - 1, 0)]);
    let after = Totals::sum(&[cpu(3, 0)]);
    assert_eq!(after.since(&before).enqueued, 5);
}
