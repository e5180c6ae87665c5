//! The automatic tax controller driven through simulated seconds: simulated
//! tasks whose progress rate, gain when fused and fused share (as a
//! function of the tax they pay) are known, with noise and garbage.

use super::*;

const TICK_S: f64 = INTERVAL_MS as f64 / 1000.0;

/// Intervals in `secs` simulated seconds.
fn intervals(secs: f64) -> usize {
    (secs / TICK_S).round() as usize
}

#[derive(Clone, Copy)]
struct Task {
    /// Progress per wall second natively.
    rate: f64,
    /// Progress rate fused / natively.
    gain: f64,
    /// Its fused share of CPU time while it holds its object, by tax.
    share: fn(u32) -> f64,
    /// Share of wall time it runs (0: asleep).
    cpu: f64,
    /// Relative noise of each sample's progress, +-.
    noise: f64,
    /// Chance that a sample's progress is garbage (huge or zero).
    garbage: f64,
}

fn always(_: u32) -> f64 {
    1.0
}

const B: Task = Task { rate: 700.0, gain: 1.0, share: always, cpu: 0.02, noise: 0.05, garbage: 0.0 };

/// Deterministic noise (xorshift64*), uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What one interval of `t` under decision `d` looks like.
fn sample(t: &Task, d: Decision, rng: &mut Rng) -> Sample {
    let wall_ns = INTERVAL_MS * 1_000_000;
    let share = if d.withdraw { 0.0 } else { (t.share)(d.tax) };
    // Fused part of the interval at the fused rate, the rest native.
    let rate = t.rate * (1.0 - share + share * t.gain) * (1.0 + t.noise * (2.0 * rng.next() - 1.0));
    let mut progress = (rate * TICK_S) as u64;
    if rng.next() < t.garbage {
        progress = if rng.next() < 0.5 { u64::MAX / 4 } else { 0 };
    }
    let cpu_ns = (t.cpu * wall_ns as f64) as u64;
    Sample { wall_ns, cpu_ns, fused_ns: (share * cpu_ns as f64) as u64, progress }
}

/// What a run did: the decision after each interval, and the tax of
/// normal intervals then (what the task pays outside explorations).
struct Trace {
    ds: Vec<Decision>,
    taxes: Vec<u32>,
}

/// Run `t` for `secs`.
fn run(t: Task, secs: f64, seed: u64) -> (Controller, Trace) {
    let mut c = Controller::new();
    let mut rng = Rng(seed);
    // The first interval has no sample (the agent needs a baseline).
    let mut d = c.step(None);
    let mut tr = Trace { ds: vec![d], taxes: vec![c.tax()] };
    for _ in 1..intervals(secs) {
        d = c.step(Some(sample(&t, d, &mut rng)));
        tr.ds.push(d);
        tr.taxes.push(c.tax());
    }
    (c, tr)
}

#[test]
fn the_ladder_and_the_mapping() {
    assert_eq!(rung_tax(BOTTOM_RUNG), 1);
    assert_eq!(rung_tax(0), 100);
    assert_eq!(rung_tax(-4), 10);
    assert_eq!(rung_tax(TOP_RUNG), 10_000);
    assert_eq!(rung_tax(99), 10_000, "clamped");
    for r in BOTTOM_RUNG..TOP_RUNG {
        assert!(rung_tax(r) < rung_tax(r + 1));
    }
    // No gain (or a loss) -> 100; a pair's full gain or more -> 0.01.
    assert_eq!(target_rung(0.5), TOP_RUNG as f64);
    assert_eq!(target_rung(1.0), TOP_RUNG as f64);
    assert_eq!(target_rung(SPEEDUP_FLAT), TOP_RUNG as f64);
    assert_eq!(target_rung(1.9), BOTTOM_RUNG as f64);
    assert_eq!(target_rung(f64::INFINITY), BOTTOM_RUNG as f64);
    assert_eq!(target_rung(f64::NAN), TOP_RUNG as f64, "no number, no discount");
    assert!((target_rung(1.3) - 0.0).abs() < 1e-9, "tax 1 half way");
    // Monotone: more gain never costs more tax.
    let mut prev = f64::INFINITY;
    for i in 0..300 {
        let r = target_rung(0.9 + i as f64 * 0.005);
        assert!(r <= prev);
        prev = r;
    }
}

#[test]
fn no_gain_is_driven_to_tax_100_within_the_bound() {
    // B of the VM test: fuses whenever it runs (its steps are short), no
    // faster for it.
    let (c, ds) = run(B, 20.0, 1);
    let taxes = ds.taxes;
    let at = taxes.iter().position(|&t| t >= 5000).expect("never reached 50");
    assert!(at < intervals(CONVERGE_S as f64), "tax >= 50 only after {} s", at as f64 * TICK_S);
    assert_eq!(c.tax(), 10_000);
    let s = c.speedup().unwrap();
    assert!((0.9..1.1).contains(&s), "speed-up {s}");
    // It got there through native samples it had to ask for.
    assert!(ds.ds.iter().any(|d| d.withdraw));

    // B as the VM test saw it under TCG: 1 ms sleeps that take 8 ms, so
    // 20-40 steps an interval (+-30 %), and slower fused (each wake fuses
    // and each sleep splits): speed-ups of 0.7-1.0 measured.
    let vm_b = Task { rate: 120.0, gain: 0.85, cpu: 0.1, noise: 0.3, ..B };
    for seed in 1..=50 {
        let (c, ds) = run(vm_b, 20.0, seed);
        let at = ds.taxes.iter().position(|&t| t >= 5000);
        assert!(at.is_some_and(|at| at < intervals(CONVERGE_S as f64)), "seed {seed}: {:?}", ds.taxes);
        assert!(c.tax() >= 5000, "seed {seed}: {}", c.tax());
    }
}

#[test]
fn a_task_that_gains_1_9_ends_at_a_low_tax() {
    let a = Task { rate: 10_000.0, gain: 1.9, cpu: 1.0, ..B };
    let (c, ds) = run(a, 20.0, 2);
    let taxes = ds.taxes;
    let at = taxes.iter().position(|&t| t <= 100).unwrap();
    assert!(at < intervals(CONVERGE_S as f64));
    // Never above its start (1.00) on the way.
    assert!(taxes.iter().all(|&t| t <= 100), "{taxes:?}");
    assert_eq!(c.tax(), 1);
    assert!(c.speedup().unwrap() > 1.7);
}

#[test]
fn the_emulated_pair_mostly_fused() {
    // The VM test's A: --emulate high gives a pair 75 % of a CPU against
    // 50 %, 1.5x per wall second; fused 90 % of the time it holds the object.
    let a = Task { rate: 10_000.0, gain: 1.5, share: |_| 0.9, cpu: 0.7, ..B };
    let (c, ds) = run(a, 20.0, 3);
    assert!(ds.taxes.iter().all(|&t| t <= 100));
    assert!(c.tax() <= 3, "tax {}", c.tax());
    let s = c.speedup().unwrap();
    assert!((1.4..1.5).contains(&s), "speed-up {s}");
    // As TCG shows it: each sample's rate +-25 % off (14 % standard
    // deviation, as A's in the VM test). The estimate moves by +-0.1; the
    // tax moves only on what the spread of the samples supports.
    let tcg = Task { rate: 100_000.0, gain: 1.5, cpu: 0.7, noise: 0.25, ..B };
    let (mut above, mut finals) = (0, Vec::new());
    for seed in 1..=200 {
        let (c, ds) = run(tcg, 60.0, seed);
        above += ds.taxes.iter().any(|&t| t > 100) as usize;
        finals.push(c.tax());
    }
    finals.sort_unstable();
    // Measured: above 1.00 at some point in 3 % of runs (at most 31.62),
    // and the median run ends at 0.01.
    assert!(above <= 12, "{above} of 200 runs went above 1.00");
    assert!(finals[100] <= 3, "median final tax {}", finals[100]);
}

#[test]
fn noise_and_garbage_do_not_flip_it() {
    // Each sample +-10 % off, and 15 % of them garbage (zero or 2^62).
    let noisy = Task { noise: 0.1, garbage: 0.15, ..B };
    let gainer = Task { rate: 10_000.0, gain: 1.9, cpu: 1.0, ..noisy };
    let mut dips = 0;
    for seed in 1..=200 {
        // Gains 1.9: once low, it stays at or below 1.00 for a minute.
        let (_, ds) = run(gainer, 70.0, seed);
        let after = &ds.taxes[intervals(CONVERGE_S as f64)..];
        assert!(after.iter().all(|&t| t <= 100), "seed {seed}: {after:?}");
        // Gains nothing: once high, it never comes down to where a gainer
        // is, and nearly always stays at 50 or above (measured: 1 run in
        // 1000 dips, to 10.00).
        let (_, ds) = run(noisy, 70.0, seed);
        let after = &ds.taxes[intervals(CONVERGE_S as f64)..];
        assert!(after.iter().all(|&t| t >= 500), "seed {seed}: {after:?}");
        if after.iter().any(|&t| t < 5000) {
            dips += 1;
        }
    }
    assert!(dips <= 10, "{dips} of 200 runs dipped below 50");
}

#[test]
fn a_speed_up_on_a_rungs_edge_wobbles_but_does_not_flap() {
    // Target rung 0.5: half way between tax 1.00 and 1.78. With 5 % noise
    // per sample the estimate moves by a rung or two (a rung is 0.019 of
    // speed-up) as samples come and go, more while the windows fill; the
    // confidence band keeps that from changing the tax every interval.
    let edge = SPEEDUP_FLAT + (SPEEDUP_FULL - SPEEDUP_FLAT) * (TOP_RUNG as f64 - 0.5) / (TOP_RUNG - BOTTOM_RUNG) as f64;
    let t = Task { rate: 10_000.0, gain: edge, cpu: 1.0, noise: 0.05, ..B };
    let (runs, mut changes, mut near, mut all, mut within3) = (100usize, 0, 0, 0, 0);
    for seed in 1..=runs as u64 {
        let (_, ds) = run(t, 70.0, seed);
        let taxes = ds.taxes;
        changes += taxes.windows(2).filter(|w| w[0] != w[1]).count();
        near += taxes.iter().filter(|&&t| (56..=178).contains(&t)).count();
        all += taxes.len();
        within3 += taxes.iter().all(|&t| (18..=562).contains(&t)) as usize;
    }
    // Measured: 3.5 changes per run (of 280 intervals), 94 % of the time
    // within a rung of the edge, every run within three rungs.
    assert!(changes / runs <= 8, "{} changes a run", changes / runs);
    assert!(near * 100 / all >= 85, "{} % of the time within a rung", near * 100 / all);
    assert!(within3 >= 95, "{within3} of {runs} runs within three rungs");
}

#[test]
fn exploration_asks_for_the_missing_kind() {
    // Always fused: native samples only by withdrawing the object, four
    // explorations of two samples each to fill the window (the estimate
    // starts after two), then one about every STALE intervals.
    let (_, ds) = run(B, 60.0, 4);
    let starts = |ds: &[Decision], f: fn(&Decision) -> bool| {
        ds.windows(2).enumerate().filter(|(_, w)| f(&w[1]) && !f(&w[0])).map(|(i, _)| i + 1).collect::<Vec<_>>()
    };
    let native = starts(&ds.ds, |d| d.withdraw);
    assert_eq!(native.iter().filter(|&&i| i < intervals(5.0)).count(), 4, "{native:?}");
    let later = native.iter().filter(|&&i| i >= intervals(5.0)).count();
    assert!((4..=6).contains(&later), "{native:?}");
    assert!(ds.ds.iter().all(|d| d.tax != EXPLORE_TAX), "fused samples come by themselves");
    // Each exploration lasts EXPLORE intervals.
    assert!(ds.ds.windows(EXPLORE as usize + 1).all(|w| !w.iter().all(|d| d.withdraw)));

    // Busy neighbours: it fuses only at the lowest tax. Fused samples are
    // explored at 0.01, and a task that gains then keeps a low tax (at which
    // it fuses on its own).
    let contended = Task { rate: 10_000.0, gain: 1.9, share: |tax| if tax <= 10 { 1.0 } else { 0.0 }, cpu: 1.0, ..B };
    let (c, ds) = run(contended, 20.0, 5);
    assert!(ds.ds.iter().any(|d| d.tax == EXPLORE_TAX));
    assert_eq!(c.tax(), 1);

    // Half fused (objects that come and go) unless the tax is the lowest:
    // neither kind by itself.
    let half = Task { share: |tax| if tax <= EXPLORE_TAX { 1.0 } else { 0.5 }, ..B };
    let (c, ds) = run(half, 20.0, 6);
    assert!(ds.ds.iter().any(|d| d.withdraw) && ds.ds.iter().any(|d| d.tax == EXPLORE_TAX));
    let (f, n) = c.samples();
    assert!(f >= MIN_SAMPLES && n >= MIN_SAMPLES, "{f} fused, {n} native samples");
    assert_eq!(c.tax(), 10_000);
}

#[test]
fn nothing_to_learn_nothing_explored() {
    // Asleep all along: no exploration, the tax stays at 1.
    let asleep = Task { cpu: 0.0, ..B };
    let (c, ds) = run(asleep, 30.0, 7);
    assert!(ds.ds.iter().all(|d| *d == Decision { tax: 100, withdraw: false }));
    assert_eq!(c.speedup(), None);
    // No progress at all, fused or not: measured, but nothing learnt.
    let stuck = Task { rate: 0.0, ..B };
    let (c, _) = run(stuck, 30.0, 7);
    assert_eq!((c.speedup(), c.tax()), (None, 100));
    // It never fuses, even at 0.01: fused explorations back off (doubling
    // up to STALE) instead of charging it 0.01 half the time: 3 intervals
    // in 43 at most.
    let never = Task { share: |_| 0.0, ..B };
    let (c, ds) = run(never, 120.0, 8);
    let fused_intervals = ds.ds.iter().filter(|d| d.tax == EXPLORE_TAX).count();
    assert!(fused_intervals * 100 / ds.ds.len() <= 9, "{fused_intervals} of {}", ds.ds.len());
    assert_eq!((c.speedup(), c.tax()), (None, 100));
}

#[test]
fn a_new_source_starts_over() {
    let (mut c, _) = run(B, 20.0, 9);
    assert!(c.speedup().is_some());
    c.reset_samples();
    assert_eq!((c.speedup(), c.samples()), (None, (0, 0)));
    // The tax stays where it was until the new source says otherwise.
    assert_eq!(c.tax(), 10_000);
}
