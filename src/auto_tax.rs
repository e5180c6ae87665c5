//! Automatic tax (`tax=auto`): Chameleon §4.3.3 says tax rates "can be set
//! automatically from the speedup a thread receives on a fused context" and
//! leaves it there. This is that controller, one per task, pure and
//! deterministic (no clock, no I/O: `assign.rs` feeds it one [`Sample`] every
//! [`INTERVAL_MS`] and publishes what it decides), so host tests drive it
//! through simulated seconds.
//!
//! - **Samples**: over one interval, the task's progress (its own counter or
//!   instructions retired, `progress.rs`), the wall time, the CPU time the
//!   kernel accounted to it and the time BPF counted it fused. Its fused
//!   share is fused / CPU time: at least [`FUSED_MIN`] makes a *fused*
//!   sample, at most [`NATIVE_MAX`] a *native* one, anything between (an
//!   object that came and went) is not used. (Fused time is wall time while
//!   its object lives, so under duty-cycle emulation the share exceeds 1.)
//!   An interval in which it did not run says nothing and is dropped.
//! - **Speed-up** = progress rate fused / natively, rates per *wall* second.
//!   Not per CPU second: what fusing buys may be more CPU time per wall
//!   second (the duty-cycle emulation, the paper's clock modulation, turbo)
//!   as well as more work per CPU second (an idle SMT sibling), and a task
//!   that sleeps between its steps is not sped up by either even if each
//!   step is, which per CPU time would miss. Each kind's rate is the mean of
//!   the samples of its last [`WINDOW`] that agree (within [`INLIER_FACTOR`]
//!   of the median of all, at least [`MIN_SAMPLES`] of them), so garbage (a
//!   counter that jumped or stalled) is outvoted, not averaged in; a rate
//!   above [`MAX_RATE`] is dropped outright. The spread of those samples
//!   gives the estimate's standard error.
//! - **Exploration**: a task that fuses whenever it runs never gives native
//!   samples, and one whose neighbours are busy may never give fused ones.
//!   When a kind is missing ([`GAP`] intervals in which the task ran without
//!   one until it has [`FILL`] samples, [`STALE`] after), the controller asks
//!   for it: native by withdrawing the object for [`EXPLORE`] intervals (the
//!   only way to be sure it runs natively: at tax 100 it still borrows idle
//!   CPUs), fused by publishing tax 0.01 for as long. The first interval of
//!   an exploration and the one after it straddle the change and are
//!   dropped. An exploration that yields nothing backs off (doubling, up to
//!   STALE), so a task that cannot fuse is not charged 0.01 half the time.
//!   A task that does not run is never explored.
//! - **Tax** from the speed-up s, on a ladder of quarter decades from 0.01
//!   to 100: s <= [`SPEEDUP_FLAT`] (1.15: too little for a whole neighbour's
//!   CPU, and about one sample's noise under TCG) gives 100 (it borrows only
//!   idle CPUs); s >= [`SPEEDUP_FULL`] (1.45: nearly all a fused pair gives,
//!   1.5 in Chameleon Table 2 and Fig. 5) gives 0.01; between, log-linear
//!   (tax 1 at s = 1.3). It starts at 1, the default tax, and moves one rung
//!   per interval, and only as far as the samples support: up only if even
//!   the top of the speed-up's band ([`CONFIDENCE`] standard errors) asks
//!   for more, down only if even its bottom does (each by more than
//!   [`DEADBAND`] rungs). So a noisy task's tax waits for evidence, and a
//!   speed-up near a rung's edge does not move it every interval.
//!   Bound: the first estimate needs 4 samples of each kind (two native
//!   explorations, after two intervals to find the source and baseline it:
//!   about 4 s), then 8 rungs from the start to either end at 4 a second:
//!   the tax is at its target [`CONVERGE_S`] = 10 s after the task starts
//!   running, for a steady speed-up whose samples agree (host tests: tax 100
//!   for no gain and 0.01 for a gain of 1.9 after 4.75 s; the VM test under
//!   TCG: 100 after 6.4 s). A task whose speed-up changes is
//!   re-explored within STALE intervals and crosses the ladder in 4 s.

use std::collections::VecDeque;

/// How often each task is sampled.
pub const INTERVAL_MS: u64 = 250;
/// A fused sample: fused at least this share of its CPU time.
pub const FUSED_MIN: f64 = 0.75;
/// A native sample: fused at most this share.
pub const NATIVE_MAX: f64 = 0.25;
/// Samples kept per kind.
pub const WINDOW: usize = 16;
/// Samples of a kind explored for at start (the rest of the window fills
/// as the task gives them, or one exploration every STALE).
pub const FILL: usize = 8;
/// Samples of each kind before the speed-up is estimated.
pub const MIN_SAMPLES: usize = 4;
/// Intervals in which the task ran without a sample of a kind before that
/// kind is explored (10 s): the estimate follows a task whose phases change.
pub const STALE: u32 = 40;
/// Intervals an exploration lasts: the first one settles, the others measure.
pub const EXPLORE: u32 = 3;
/// Normal intervals before the first exploration of a kind and between
/// explorations, doubling after each that yields no sample, up to STALE.
pub const GAP: u32 = 2;
/// No gain worth a neighbour's CPU at or below this speed-up: tax 100.
pub const SPEEDUP_FLAT: f64 = 1.15;
/// A fused pair's full gain at or above this speed-up: tax 0.01.
pub const SPEEDUP_FULL: f64 = 1.45;
/// Ladder of taxes: rung r is 10^(r / RUNGS_PER_DECADE) (r = 0: tax 1).
pub const RUNGS_PER_DECADE: i32 = 4;
pub const TOP_RUNG: i32 = 8; // 100
pub const BOTTOM_RUNG: i32 = -8; // 0.01
/// How sure the controller must be before the tax moves: the speed-up's
/// band is this many standard errors either side (of its log, from the
/// spread of the samples); the tax is raised only if even the top of the
/// band asks for more than half a rung above it, lowered only if even the
/// bottom asks for half a rung below. One standard error: decisions are
/// taken every interval, and noise that fools one is gone a few later.
pub const CONFIDENCE: f64 = 1.0;
pub const DEADBAND: f64 = 0.5;
/// A task's tax reaches its target this long after it starts running (s).
pub const CONVERGE_S: u64 = 10;
/// Tax published while exploring fused samples: 0.01.
pub const EXPLORE_TAX: u32 = 1;
/// The samples of a kind that count: those within this factor of the
/// kind's median, and only if there are MIN_SAMPLES of them (consensus), so
/// that garbage (a counter that jumped, a stalled interval) is outvoted
/// instead of averaged in, even while a kind has few samples.
pub const INLIER_FACTOR: f64 = 2.0;
/// Progress per second no task makes (10^12: a thousand times the
/// instructions a core retires): a counter that says so is garbage.
pub const MAX_RATE: f64 = 1e12;

/// What happened to a task over one interval (differences of counters).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub wall_ns: u64,
    /// CPU time the kernel accounted to it.
    pub cpu_ns: u64,
    /// Time BPF counted it fused.
    pub fused_ns: u64,
    /// Its progress (counter bumps, instructions).
    pub progress: u64,
}

/// What the controller is doing this interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Normal,
    /// Object withdrawn: native samples.
    ExploreNative,
    /// Tax 0.01: fused samples.
    ExploreFused,
}

/// What to publish for the next interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Hundredths, 1..=10000.
    pub tax: u32,
    /// Withdraw the task's object (it runs natively).
    pub withdraw: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fused,
    Native,
}

/// What a kind's samples agree on: their mean rate and its relative
/// standard error.
#[derive(Debug, Clone, Copy)]
struct Rate {
    mean: f64,
    rel_se: f64,
}

/// Per kind of sample: the recent rates and when to explore it.
#[derive(Debug, Clone, Default)]
struct Series {
    rates: VecDeque<f64>,
    /// Intervals the task ran since the last sample of this kind.
    missing: u32,
    /// Normal intervals the task ran since this kind was last explored.
    idle: u32,
    /// ... before it may be explored again: GAP, doubled by each exploration
    /// of it that gave nothing, up to STALE.
    backoff: u32,
    /// Samples gained during the exploration in progress.
    gained: bool,
}

impl Series {
    fn new() -> Self {
        Series { backoff: GAP, ..Default::default() }
    }

    fn push(&mut self, rate: f64) {
        if self.rates.len() == WINDOW {
            self.rates.pop_front();
        }
        self.rates.push_back(rate);
        self.gained = true;
    }

    /// The rate its samples agree on: the median of those within
    /// INLIER_FACTOR of the median of all, if MIN_SAMPLES are.
    fn consensus(&self) -> Option<Rate> {
        if self.rates.len() < MIN_SAMPLES {
            return None;
        }
        let m = median(&self.rates);
        let near = |r: f64| r == m || (m > 0.0 && r > 0.0 && (r / m).max(m / r) <= INLIER_FACTOR);
        let inliers: Vec<f64> = self.rates.iter().copied().filter(|&r| near(r)).collect();
        let n = inliers.len() as f64;
        if inliers.len() < MIN_SAMPLES {
            return None;
        }
        // Garbage is out: the mean of the rest is the better estimate.
        let mean = inliers.iter().sum::<f64>() / n;
        let var = inliers.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let rel_se = if mean > 0.0 { var.sqrt() / mean / n.sqrt() } else { 0.0 };
        Some(Rate { mean, rel_se })
    }

    /// One interval in which the task ran ended; `got`: with a sample of this kind.
    fn ran(&mut self, got: bool) {
        self.missing = if got { 0 } else { self.missing.saturating_add(1) };
    }

    /// Missing long enough to be explored: until it has WINDOW samples that
    /// agree on a rate, after GAP intervals without one; then after STALE;
    /// either way no sooner than its backoff. (The estimate starts at
    /// MIN_SAMPLES; the rest of the window makes it steadier.)
    fn due(&self) -> bool {
        let short = self.rates.len() < FILL || self.consensus().is_none();
        let wait = if short { GAP } else { STALE };
        self.missing >= wait && self.idle >= self.backoff
    }
}

#[derive(Debug, Clone)]
pub struct Controller {
    /// Rung of the tax published in normal intervals.
    rung: i32,
    fused: Series,
    native: Series,
    phase: Phase,
    phase_left: u32,
    /// Normal intervals since the last exploration ended.
    since_explore: u32,
    /// The next sample straddles a change of phase: dropped.
    settle: bool,
    speedup: Option<f64>,
}

impl Default for Controller {
    fn default() -> Self {
        Self::new()
    }
}

/// Tax in hundredths of ladder rung `rung` (0.01 .. 100).
pub fn rung_tax(rung: i32) -> u32 {
    let r = rung.clamp(BOTTOM_RUNG, TOP_RUNG);
    (100.0 * 10f64.powf(r as f64 / RUNGS_PER_DECADE as f64)).round() as u32
}

/// Where on the ladder a speed-up puts the tax (not rounded): TOP_RUNG at
/// SPEEDUP_FLAT and below, BOTTOM_RUNG at SPEEDUP_FULL and above, linear
/// (log-linear in tax) between.
pub fn target_rung(speedup: f64) -> f64 {
    if speedup.is_nan() {
        return TOP_RUNG as f64;
    }
    let t = ((speedup - SPEEDUP_FLAT) / (SPEEDUP_FULL - SPEEDUP_FLAT)).clamp(0.0, 1.0);
    TOP_RUNG as f64 - t * (TOP_RUNG - BOTTOM_RUNG) as f64
}

fn median(v: &VecDeque<f64>) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().collect();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

impl Controller {
    /// Starts at tax 1, the default tax, until it has measured.
    pub fn new() -> Self {
        Controller {
            rung: 0,
            fused: Series::new(),
            native: Series::new(),
            phase: Phase::Normal,
            phase_left: 0,
            since_explore: 0,
            settle: false,
            speedup: None,
        }
    }

    /// The tax of normal intervals (what the task pays outside explorations).
    pub fn tax(&self) -> u32 {
        rung_tax(self.rung)
    }

    pub fn speedup(&self) -> Option<f64> {
        self.speedup
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Samples held: (fused, native).
    pub fn samples(&self) -> (usize, usize) {
        (self.fused.rates.len(), self.native.rates.len())
    }

    /// The progress source changed: rates in other units are not comparable.
    pub fn reset_samples(&mut self) {
        self.fused = Series::new();
        self.native = Series::new();
        self.speedup = None;
    }

    /// One interval ended with `sample` (None: nothing could be measured);
    /// what to publish for the next one.
    pub fn step(&mut self, sample: Option<Sample>) -> Decision {
        let ran = sample.is_some_and(|s| s.cpu_ns > 0 && s.wall_ns > 0);
        let mut got = None;
        if let Some(s) = sample.filter(|_| ran && !self.settle) {
            let share = s.fused_ns as f64 / s.cpu_ns as f64;
            let rate = s.progress as f64 * 1e9 / s.wall_ns as f64;
            if rate.is_finite() && rate <= MAX_RATE {
                if share >= FUSED_MIN {
                    self.fused.push(rate);
                    got = Some(Kind::Fused);
                } else if share <= NATIVE_MAX {
                    self.native.push(rate);
                    got = Some(Kind::Native);
                }
            }
        }
        // A kind not seen while the task runs is missing; one it cannot
        // give while asleep is not.
        if ran {
            self.fused.ran(got == Some(Kind::Fused));
            self.native.ran(got == Some(Kind::Native));
        }
        self.settle = false;
        self.advance_phase(ran);
        self.estimate();
        match self.phase {
            Phase::Normal => Decision { tax: self.tax(), withdraw: false },
            Phase::ExploreNative => Decision { tax: self.tax(), withdraw: true },
            Phase::ExploreFused => Decision { tax: EXPLORE_TAX, withdraw: false },
        }
    }

    fn advance_phase(&mut self, ran: bool) {
        if self.phase != Phase::Normal {
            self.phase_left -= 1;
            if self.phase_left > 0 {
                return;
            }
            // Over: a kind it asked for and did not get waits longer next time.
            let series = if self.phase == Phase::ExploreNative { &mut self.native } else { &mut self.fused };
            series.backoff = if series.gained { GAP } else { (series.backoff * 2).min(STALE) };
            series.idle = 0;
            self.phase = Phase::Normal;
            self.settle = true;
            self.since_explore = 0;
            return;
        }
        self.fused.gained = false;
        self.native.gained = false;
        self.since_explore = self.since_explore.saturating_add(1);
        // Only a task that runs can be measured.
        if !ran {
            return;
        }
        self.fused.idle = self.fused.idle.saturating_add(1);
        self.native.idle = self.native.idle.saturating_add(1);
        // Explorations are GAP normal intervals apart at least.
        if self.since_explore < GAP {
            return;
        }
        let (native, fused) = (self.native.due(), self.fused.due());
        // Both missing: the scarcer kind first.
        let next = match (native, fused) {
            (true, true) if self.fused.rates.len() < self.native.rates.len() => Phase::ExploreFused,
            (true, _) => Phase::ExploreNative,
            (false, true) => Phase::ExploreFused,
            (false, false) => return,
        };
        self.phase = next;
        self.phase_left = EXPLORE;
        self.settle = true;
    }

    fn estimate(&mut self) {
        let (Some(fused), Some(native)) = (self.fused.consensus(), self.native.consensus()) else {
            return;
        };
        let (f, n) = (fused.mean, native.mean);
        let s = if n > 0.0 {
            f / n
        } else if f > 0.0 {
            // No progress at all natively, some fused: as large a gain as any.
            f64::INFINITY
        } else {
            // No progress either way: nothing learnt, the tax stays.
            return;
        };
        self.speedup = Some(s);
        // The least and the most tax the speed-up's band allows.
        let band = CONFIDENCE * fused.rel_se.hypot(native.rel_se);
        let (least, most) = (target_rung(s * band.exp()), target_rung(s * (-band).exp()));
        let rung = self.rung as f64;
        if least > rung + DEADBAND {
            self.rung += 1;
        } else if most < rung - DEADBAND {
            self.rung -= 1;
        }
    }
}

#[cfg(test)]
#[path = "auto_tax_tests.rs"]
mod tests;
