//! The automatic tax controller driven through simulated seconds: simulated
//! tasks whose progress rate, gain when fused and fused share (as a
//! function of the tax they pay) are known, with noise, garbage and a
//! guest whose speed drifts.

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
    /// The guest's speed at a time (s), a factor on every rate: TCG's
    /// instructions per guest second follow the host's load.
    drift: fn(f64) -> f64,
    /// From this time (s) on, its gain is this instead.
    later: Option<(f64, f64)>,
}

fn always(_: u32) -> f64 {
    1.0
}

fn steady(_: f64) -> f64 {
    1.0
}

const B: Task =
    Task { rate: 700.0, gain: 1.0, share: always, cpu: 0.02, noise: 0.05, garbage: 0.0, drift: steady, later: None };

/// Deterministic noise (xorshift64*), uniform in [0, 1).
struct Rng(u64);

impl Rng {
    /// The seed goes through splitmix64 first: xorshift from a small seed
    /// (few bits set) stays correlated for dozens of draws, which made runs
    /// with streaks of samples 2-3 standard deviations off in one direction.
    fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)).max(1))
    }

    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What one interval of `t` under decision `d` looks like, `secs` into the run.
fn sample(t: &Task, d: Decision, secs: f64, rng: &mut Rng) -> Sample {
    let wall_ns = INTERVAL_MS * 1_000_000;
    let share = if d.withdraw { 0.0 } else { (t.share)(d.tax) };
    let gain = match t.later {
        Some((from, gain)) if secs >= from => gain,
        _ => t.gain,
    };
    // Fused part of the interval at the fused rate, the rest native.
    let rate = t.rate * (t.drift)(secs) * (1.0 - share + share * gain) * (1.0 + t.noise * (2.0 * rng.next() - 1.0));
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
    let mut rng = Rng::new(seed);
    // The first interval has no sample (the agent needs a baseline).
    let mut d = c.step(None);
    let mut tr = Trace { ds: vec![d], taxes: vec![c.tax()] };
    for i in 1..intervals(secs) {
        d = c.step(Some(sample(&t, d, i as f64 * TICK_S, &mut rng)));
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
    // deviation, as A's in the VM test), each paired ratio about 12 %. The
    // estimate moves by +-0.1; the tax moves only where 4 ratios of 5 agree.
    let tcg = Task { rate: 100_000.0, gain: 1.5, cpu: 0.7, noise: 0.25, ..B };
    let (mut above, mut finals) = (0, Vec::new());
    for seed in 1..=200 {
        let (c, ds) = run(tcg, 60.0, seed);
        above += ds.taxes.iter().any(|&t| t > 100) as usize;
        finals.push(c.tax());
    }
    finals.sort_unstable();
    // Measured over 1000 runs: above 1.00 at some point in 1.9 % (at most
    // 10.00), and the median run ends at 0.01.
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
        // is, and nearly always stays at 50 or above (measured: no run in
        // 1000 dips below 100; nor is the gainer ever above 0.01 after 10 s).
        let (_, ds) = run(noisy, 70.0, seed);
        let after = &ds.taxes[intervals(CONVERGE_S as f64)..];
        assert!(after.iter().all(|&t| t >= 500), "seed {seed}: {after:?}");
        if after.iter().any(|&t| t < 5000) {
            dips += 1;
        }
    }
    assert!(dips <= 2, "{dips} of 200 runs dipped below 50");
}

#[test]
fn a_speed_up_on_a_rungs_edge_wobbles_but_does_not_flap() {
    // Target rung 0.5: half way between tax 1.00 and 1.78. With 5 % noise
    // per sample each paired ratio is a rung or two off (a rung is 0.019
    // of speed-up) and the median moves as ratios come and go; the band
    // (all ratios but one must agree) keeps that from changing the tax.
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
    // Measured: 2.7 changes per run (of 280 intervals), 91 % of the time
    // within a rung of the edge, every run within three rungs.
    assert!(changes / runs <= 8, "{} changes a run", changes / runs);
    assert!(near * 100 / all >= 85, "{} % of the time within a rung", near * 100 / all);
    assert!(within3 >= 95, "{within3} of {runs} runs within three rungs");
}

/// Intervals at which a run of decisions for which `f` holds starts.
fn starts(ds: &[Decision], f: fn(&Decision) -> bool) -> Vec<usize> {
    ds.windows(2).enumerate().filter(|(_, w)| f(&w[1]) && !f(&w[0])).map(|(i, _)| i + 1).collect()
}

#[test]
fn exploration_asks_for_the_missing_kind() {
    // Always fused: native samples only by withdrawing the object. Until it
    // has MIN_PAIRS ratios, an exploration as soon as 2 fused samples
    // follow the last (every 6 intervals: 3 withdrawn, 1 settling, 2
    // bracketing), then one every PERIOD.
    let (c, ds) = run(B, 60.0, 4);
    let native = starts(&ds.ds, |d| d.withdraw);
    assert_eq!(native[..MIN_PAIRS], [2, 8, 14], "{native:?}");
    assert!(native[MIN_PAIRS..].windows(2).all(|w| w[1] - w[0] == PERIOD as usize), "{native:?}");
    assert_eq!(native.len(), MIN_PAIRS + (intervals(60.0) - 1 - 14) / PERIOD as usize, "{native:?}");
    assert!(ds.ds.iter().all(|d| d.tax != EXPLORE_TAX), "fused samples come by themselves");
    // Each exploration lasts EXPLORE intervals.
    assert!(ds.ds.windows(EXPLORE as usize + 1).all(|w| !w.iter().all(|d| d.withdraw)));
    // The cost once estimated: a quarter of the time native.
    let late = &ds.ds[intervals(10.0)..];
    let withdrawn = late.iter().filter(|d| d.withdraw).count();
    assert!((24..=25).contains(&(withdrawn * 100 / late.len())), "{withdrawn} of {}", late.len());
    assert_eq!(c.pairs(), PAIRS);

    // Busy neighbours: it fuses only at the lowest tax. Fused samples are
    // explored at 0.01 and paired with the native ones around them; a task
    // that gains then keeps a low tax, at which it fuses on its own and is
    // explored natively instead.
    let contended = Task { rate: 10_000.0, gain: 1.9, share: |tax| if tax <= 10 { 1.0 } else { 0.0 }, cpu: 1.0, ..B };
    let (c, ds) = run(contended, 20.0, 5);
    let fused = starts(&ds.ds, |d| d.tax == EXPLORE_TAX);
    assert_eq!(fused[..MIN_PAIRS], [2, 8, 14], "{fused:?}");
    assert_eq!(c.tax(), 1);
    assert!(ds.ds[intervals(15.0)..].iter().any(|d| d.withdraw));

    // Half fused (objects that come and go) unless the tax is the lowest:
    // neither kind by itself. Native and fused explorations alternate, each
    // paired with its neighbours.
    let half = Task { share: |tax| if tax <= EXPLORE_TAX { 1.0 } else { 0.5 }, ..B };
    let (c, ds) = run(half, 20.0, 6);
    assert!(ds.ds.iter().any(|d| d.withdraw) && ds.ds.iter().any(|d| d.tax == EXPLORE_TAX));
    assert!(c.pairs() >= MIN_PAIRS, "{} pairs", c.pairs());
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
    // in 44 at most.
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
    assert_eq!((c.speedup(), c.pairs()), (None, 0));
    // The tax stays where it was until the new source says otherwise.
    assert_eq!(c.tax(), 10_000);
}

/// The guest's speed falls by 40 % over 20 s (then stays): under TCG a
/// rate measured at a task's start and one measured 10 s later differ by
/// that much whatever the task does.
fn falling(secs: f64) -> f64 {
    1.0 - 0.4 * (secs / 20.0).min(1.0)
}

/// And rises by as much (0.6 to 1), which flatters fused rates measured
/// after native ones.
fn rising(secs: f64) -> f64 {
    0.6 + 0.4 * (secs / 20.0).min(1.0)
}

#[test]
fn a_drifting_guest_speed_is_paired_out() {
    // Each sample +-15 % off besides the drift. A gains 1.5 (the VM test's
    // A), B nothing. Unpaired (the mean of the last 16 samples of each
    // kind, native ones from the start and refreshed every 10 s), the
    // falling drift read A's gain as 1.06-1.23 from 15 s on and raised its
    // tax above 1.00 in every run, and the rising one read B's as 1.35-1.48
    // and lowered its tax to 0.02.
    let a = Task { rate: 10_000.0, gain: 1.5, cpu: 0.7, noise: 0.15, ..B };
    let b = Task { noise: 0.15, ..B };
    let bound = intervals(CONVERGE_S as f64);
    for drift in [falling as fn(f64) -> f64, rising] {
        let mut finals = Vec::new();
        for seed in 1..=200 {
            // A never pays more than its start, 1.00, and ends low.
            let (c, ds) = run(Task { drift, ..a }, 30.0, seed);
            assert!(ds.taxes.iter().all(|&t| t <= 100), "seed {seed}: {:?}", ds.taxes);
            finals.push(c.tax());
            let s = c.speedup().unwrap();
            assert!((1.25..1.8).contains(&s), "seed {seed}: speed-up {s}");
            // B reaches 50 within the bound and stays there.
            let (c, ds) = run(Task { drift, ..b }, 30.0, seed);
            let at = ds.taxes.iter().position(|&t| t >= 5000);
            assert!(at.is_some_and(|at| at < bound), "seed {seed}: {:?}", ds.taxes);
            assert!(ds.taxes[bound..].iter().all(|&t| t >= 5000), "seed {seed}: {:?}", ds.taxes);
            let s = c.speedup().unwrap();
            assert!((0.8..1.2).contains(&s), "seed {seed}: speed-up {s}");
        }
        // Measured over 1000 runs either way (and as many without drift,
        // the same): A ends at 0.01 in the median run, at most 0.32 (its
        // speed-up 1.30-1.75: the median of 5 ratios of samples +-15 %
        // off); B at 50 after 6 s, 8.75 s at most, its speed-up 0.86-1.17.
        finals.sort_unstable();
        assert!(finals[100] <= 2 && finals[199] <= 56, "{finals:?}");
    }
}

#[test]
fn a_change_of_speed_up_is_followed() {
    // A task's gain changes at 30 s (a new phase of the program): its tax
    // follows once 4 of its 5 ratios are new, within 4 periods, then the
    // ladder. Measured over 1000 runs each way: median 12-13 s, 99 % within
    // 16 s, the slowest (a gain lost) 26 s.
    for (gain, then, want) in [(1.0, 1.9, 100u32), (1.9, 1.0, 5000)] {
        let t = Task { rate: 10_000.0, gain, cpu: 1.0, noise: 0.15, later: Some((30.0, then)), ..B };
        let mut took = Vec::new();
        for seed in 1..=200 {
            let (_, ds) = run(t, 70.0, seed);
            let after = &ds.taxes[intervals(30.0)..];
            let at = after.iter().position(|&t| if want == 100 { t <= 100 } else { t >= 5000 });
            took.push(at.map_or(f64::INFINITY, |at| (at + 1) as f64 * TICK_S));
        }
        took.sort_by(f64::total_cmp);
        assert!(took[100] <= 14.0 && took[197] <= 16.0 && took[199] <= 30.0, "{gain} -> {then}: {took:?}");
    }
}

#[test]
fn the_vm_tests_2x_gainer_keeps_its_tax_through_a_dip() {
    // The VM test's A (tests/vm/guest/auto_tax.sh): a level-2 object under
    // --emulate high, 2x per wall second, TCG's +-25 % per sample; steady,
    // and with the dip one CI run showed (1.43 down to 1.2: a sixth less)
    // from 10 s on.
    let steady = Task { rate: 100_000.0, gain: 2.0, cpu: 0.7, noise: 0.25, ..B };
    let dipped = Task { later: Some((10.0, 2.0 * 1.2 / 1.43)), ..steady };
    for seed in 1..=500 {
        for t in [steady, dipped] {
            let (_, ds) = run(t, 30.0, seed);
            assert!(ds.taxes.iter().all(|&t| t <= 100), "seed {seed}: {:?}", ds.taxes);
        }
    }
    // The level-1 pair the test used before, 1.43 pooled in the VM, with
    // the same dip: above 1.00 in most runs, which is what failed CI.
    let pair = Task { gain: 1.43, later: Some((10.0, 1.2)), ..steady };
    let above = (1..=200).filter(|&seed| run(pair, 30.0, seed).1.taxes.iter().any(|&t| t > 100)).count();
    assert!(above > 100, "{above} of 200");
}
