//! Host tests of the BPF policy's pure helpers: the C in bpf/*.h compiled for
//! the host by build.rs (tests/host/policy_shim.c), so the very code the BPF
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
fn clock_never_goes_back() {
    unsafe {
        assert_eq!(host_vtime_advance(10, 20), 20);
        assert_eq!(host_vtime_advance(20, 10), 20);
        assert_eq!(host_vtime_advance(u64::MAX, 2), 2, "advances across the wrap");
    }
}
