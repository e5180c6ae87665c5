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
//!   step is, which per CPU time would miss.
//! - **Paired in time**: rates measured seconds apart are not comparable.
//!   Under QEMU's TCG the guest's speed drifts by tens of percent over
//!   seconds with the host's load (a task's native rate measured at its
//!   start against its fused rate 10 s later read a 1.5x gain as 1.07), and
//!   on hardware so do frequency, thermal state and the neighbours. So each
//!   ratio is measured side by side: an *exploration* forces the kind the
//!   task does not give by itself for [`EXPLORE`] intervals (native: its
//!   object is withdrawn, the only way to be sure it runs natively, as at
//!   tax 100 it still borrows idle CPUs; fused: tax 0.01), and its samples
//!   are compared with the other kind's [`BRACKET`] samples right before and
//!   right after it (within [`HORIZON`] intervals). The mean of the two
//!   sides is the other kind's rate at the exploration's middle: a linear
//!   drift cancels (the brackets are placed symmetrically about the
//!   explored samples), and what remains is the curvature of the drift over
//!   two seconds. One side alone is used if the other has nothing. Each
//!   exploration gives one *paired ratio*; the last [`PAIRS`] are kept.
//! - **Estimate**: the median of the paired ratios, from [`MIN_PAIRS`] on.
//!   Garbage (a counter that jumped or stalled) is screened per sample first
//!   (no progress at all, a rate above [`MAX_RATE`] or more than
//!   [`INLIER_FACTOR`] from the median of its kind's last [`SCREEN`] is not
//!   used), and a pair it spoilt anyway is outvoted by the median. The
//!   spread of the pairs is the confidence band: the second lowest to the
//!   second highest ratio (all of them while there are fewer than 4), so
//!   the tax moves only where all pairs but one agree.
//! - **When**: while it has fewer than MIN_PAIRS ratios, an exploration as
//!   soon as BRACKET samples of the kind it gives by itself follow the last
//!   one (half the time native for the first 5 s); then one every [`PERIOD`] intervals (3 s): a quarter of
//!   its running time native, which leaves a task that gains 1.5x fused
//!   1.375x on average (0.75 x 1.5 + 0.25 x 1), and costs one that gains
//!   nothing nothing. An exploration whose kind did not come (a task that
//!   cannot fuse even at 0.01) backs off, doubling up to [`STALE`], so it
//!   is not charged 0.01 a quarter of the time. A task that gives neither
//!   kind by itself (objects that come and go) alternates native and fused
//!   explorations, each paired with the one before or after. The first
//!   interval of an exploration and the one after it straddle the change
//!   and are dropped. A task that does not run is never explored.
//! - **Tax** from the speed-up s, on a ladder of quarter decades from 0.01
//!   to 100: s <= [`SPEEDUP_FLAT`] (1.15: too little for a whole neighbour's
//!   CPU, and about one sample's noise under TCG) gives 100 (it borrows only
//!   idle CPUs); s >= [`SPEEDUP_FULL`] (1.45: nearly all a fused pair gives,
//!   1.5 in Chameleon Table 2 and Fig. 5) gives 0.01; between, log-linear
//!   (tax 1 at s = 1.3). It starts at 1, the default tax, and moves one rung
//!   per interval (two while the band is more than two rungs away), and
//!   only as far as the band supports: up only if even its top asks for
//!   more, down only if even its bottom does (each by more than
//!   [`DEADBAND`] rungs). So a noisy task's tax waits for evidence, and a
//!   speed-up near a rung's edge does not move it.
//!   Bound: the first estimate needs MIN_PAIRS = 3 explorations, each
//!   after 2 samples (and the first after the interval that baselines the
//!   counters): 5.25 s; then 8 rungs from the start to either end in 5
//!   intervals: the tax is at its target [`CONVERGE_S`] = 10 s after the
//!   task starts running, for a steady speed-up whose pairs agree (host
//!   tests: tax 50 or more for no gain after 6 s, at most 8.75 s with
//!   samples +-15 % off, also while the guest's speed drifts by 40 % in
//!   20 s; the VM test under TCG: 6.7-7.4 s in 5 runs).
//!   A task whose speed-up changes has 4 new pairs of 5 within 4 periods:
//!   its tax follows within about 15 s (host test: 12-13 s in the median
//!   run, 16 s in 99 of 100).

use std::collections::VecDeque;

/// How often each task is sampled.
pub const INTERVAL_MS: u64 = 250;
/// A fused sample: fused at least this share of its CPU time.
pub const FUSED_MIN: f64 = 0.75;
/// A native sample: fused at most this share.
pub const NATIVE_MAX: f64 = 0.25;
/// Intervals an exploration lasts: the first one settles, the others measure.
pub const EXPLORE: u32 = 3;
/// Samples of the other kind compared with an exploration's, each side:
/// as many as it gives (EXPLORE - 1), and symmetric about them once the
/// interval after it is dropped.
pub const BRACKET: usize = 2;
/// A bracket's samples lie within this many intervals of the exploration:
/// 1.5 s, over which the guest's drift is close to linear.
pub const HORIZON: u64 = 6;
/// Paired ratios kept.
pub const PAIRS: usize = 5;
/// Paired ratios before the speed-up is estimated.
pub const MIN_PAIRS: usize = 3;
/// Intervals from one exploration's start to the next once estimated (3 s):
/// EXPLORE of them native. Shorter costs a gainer more of its gain, longer
/// follows a change of speed-up more slowly (it takes 4 new pairs).
pub const PERIOD: u32 = 12;
/// Most usable intervals between explorations of a kind that keep giving
/// nothing (10 s), the backoff doubling up to it.
pub const STALE: u32 = 40;
/// Samples of each kind a sample is screened against: seconds of them, so
/// that the garbage of one bad stretch is not most of them.
pub const SCREEN: usize = 16;
/// No gain worth a neighbour's CPU at or below this speed-up: tax 100.
pub const SPEEDUP_FLAT: f64 = 1.15;
/// A fused pair's full gain at or above this speed-up: tax 0.01.
pub const SPEEDUP_FULL: f64 = 1.45;
/// Ladder of taxes: rung r is 10^(r / RUNGS_PER_DECADE) (r = 0: tax 1).
pub const RUNGS_PER_DECADE: i32 = 4;
pub const TOP_RUNG: i32 = 8; // 100
pub const BOTTOM_RUNG: i32 = -8; // 0.01
/// The tax is raised only if even the top of the band asks for more than
/// half a rung above it, lowered only if even the bottom asks for half a
/// rung below.
pub const DEADBAND: f64 = 0.5;
/// A task's tax reaches its target this long after it starts running (s).
pub const CONVERGE_S: u64 = 10;
/// Tax published while exploring fused samples: 0.01.
pub const EXPLORE_TAX: u32 = 1;
/// A sample counts only within this factor of the median of its kind's
/// last SCREEN samples, so that garbage (a counter that jumped) is left out
/// instead of averaged in. Wide enough for TCG's noise and the guest's
/// drift over those samples (4 s of fused ones; up to 24 s of native ones,
/// 8 explorations': a drift of 40 % in 20 s puts their median 25 % off).
pub const INLIER_FACTOR: f64 = 2.0;
/// Progress per second no task makes (10^12: a thousand times the
/// instructions a core retires): a counter that says so is garbage.
pub const MAX_RATE: f64 = 1e12;
/// A paired ratio is clamped to 1/MAX_GAIN..MAX_GAIN: a rate that slipped
/// through the screen makes one far ratio, which the median outvotes,
/// never an infinite one.
pub const MAX_GAIN: f64 = 100.0;

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
    Fused = 0,
    Native = 1,
}

impl Kind {
    fn other(self) -> Kind {
        match self {
            Kind::Fused => Kind::Native,
            Kind::Native => Kind::Fused,
        }
    }
}

/// A sample used: in which interval, of which kind, its progress rate.
#[derive(Debug, Clone, Copy)]
struct Seen {
    at: u64,
    kind: Kind,
    rate: f64,
}

/// An exploration over, its ratio not yet paired: of which kind, over
/// which intervals (inclusive).
#[derive(Debug, Clone, Copy)]
struct Explored {
    kind: Kind,
    first: u64,
    last: u64,
}

#[derive(Debug, Clone)]
pub struct Controller {
    /// Rung of the tax published in normal intervals.
    rung: i32,
    /// Index of the next interval.
    now: u64,
    /// Samples used, of the last HISTORY intervals: the brackets.
    history: VecDeque<Seen>,
    /// Each kind's last SCREEN rates, to screen samples against.
    recent: [VecDeque<f64>; 2],
    /// Explorations whose bracket after them is still open.
    pending: Vec<Explored>,
    /// Logs of the last PAIRS paired ratios fused / native.
    pairs: VecDeque<f64>,
    /// The last ratio paired, until it is taken (for the log).
    new_pair: Option<f64>,
    phase: Phase,
    phase_left: u32,
    /// First interval of the exploration under way, and whether it gave
    /// a sample of its kind.
    explore_first: u64,
    gained: bool,
    /// The kind explored last.
    last_explored: Option<Kind>,
    /// Usable normal intervals (it ran, not settling) since the last
    /// exploration, and the samples of each kind they gave.
    since: u32,
    given: [u32; 2],
    /// Per kind: usable intervals to wait before exploring it, 0 until an
    /// exploration of it gives nothing.
    backoff: [u32; 2],
    /// The next sample straddles a change of phase: dropped.
    settle: bool,
    speedup: Option<f64>,
}

/// Intervals of samples kept for brackets: before, during and after the
/// oldest exploration not yet paired.
const HISTORY: u64 = 2 * HORIZON + EXPLORE as u64 + 1;

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

/// Median of a non-empty set.
fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut s: Vec<f64> = v.collect();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

impl Controller {
    /// Starts at tax 1, the default tax, until it has measured.
    pub fn new() -> Self {
        Controller {
            rung: 0,
            now: 0,
            history: VecDeque::new(),
            recent: [VecDeque::new(), VecDeque::new()],
            pending: Vec::new(),
            pairs: VecDeque::new(),
            new_pair: None,
            phase: Phase::Normal,
            phase_left: 0,
            explore_first: 0,
            gained: false,
            last_explored: None,
            since: 0,
            given: [0; 2],
            backoff: [0; 2],
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

    /// Paired ratios held.
    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }

    /// The ratio paired in the last step, once.
    pub fn take_pair(&mut self) -> Option<f64> {
        self.new_pair.take()
    }

    /// The progress source changed: rates in other units are not comparable.
    pub fn reset_samples(&mut self) {
        self.history.clear();
        self.recent = [VecDeque::new(), VecDeque::new()];
        self.pending.clear();
        self.pairs.clear();
        self.speedup = None;
    }

    /// One interval ended with `sample` (None: nothing could be measured);
    /// what to publish for the next one.
    pub fn step(&mut self, sample: Option<Sample>) -> Decision {
        let at = self.now;
        self.now += 1;
        let ran = sample.is_some_and(|s| s.cpu_ns > 0 && s.wall_ns > 0);
        let usable = ran && !self.settle;
        self.settle = false;
        let mut got = None;
        if let Some(s) = sample.filter(|_| usable) {
            let share = s.fused_ns as f64 / s.cpu_ns as f64;
            let rate = s.progress as f64 * 1e9 / s.wall_ns as f64;
            let kind = if share >= FUSED_MIN {
                Some(Kind::Fused)
            } else if share <= NATIVE_MAX {
                Some(Kind::Native)
            } else {
                None
            };
            got = kind;
            // No progress while it ran is a counter that stalled (or a unit
            // of work longer than an interval): no rate. A stuck task then
            // gives none, and nothing is learnt from it, as it should.
            if let Some(kind) = kind.filter(|_| rate > 0.0 && rate <= MAX_RATE) {
                self.history.push_back(Seen { at, kind, rate });
                let recent = &mut self.recent[kind as usize];
                if recent.len() == SCREEN {
                    recent.pop_front();
                }
                recent.push_back(rate);
            }
        }
        while self.history.front().is_some_and(|s| s.at + HISTORY <= at) {
            self.history.pop_front();
        }
        self.pair_explorations(at);
        self.advance_phase(at, usable, got);
        self.estimate();
        match self.phase {
            Phase::Normal => Decision { tax: self.tax(), withdraw: false },
            Phase::ExploreNative => Decision { tax: self.tax(), withdraw: true },
            Phase::ExploreFused => Decision { tax: EXPLORE_TAX, withdraw: false },
        }
    }

    /// A rate of `kind` that agrees with its kind's recent ones: within
    /// INLIER_FACTOR of their median.
    fn agrees(&self, kind: Kind, rate: f64) -> bool {
        let recent = &self.recent[kind as usize];
        if recent.is_empty() {
            return false;
        }
        let m = median(recent.iter().copied());
        (rate / m).max(m / rate) <= INLIER_FACTOR
    }

    /// Pair each exploration whose bracket after it is full or out of reach
    /// (interval `at` just ended).
    fn pair_explorations(&mut self, at: u64) {
        let mut i = 0;
        while i < self.pending.len() {
            let e = self.pending[i];
            let other = e.kind.other();
            let after = self.history.iter().filter(|s| s.kind == other && s.at > e.last && s.at <= e.last + HORIZON);
            if after.count() < BRACKET && at < e.last + HORIZON {
                i += 1;
                continue;
            }
            self.pending.remove(i);
            if let Some(r) = self.pair(e) {
                if self.pairs.len() == PAIRS {
                    self.pairs.pop_front();
                }
                self.pairs.push_back(r.ln());
                self.new_pair = Some(r);
            }
        }
    }

    /// The ratio fused / native of exploration `e` against its brackets.
    fn pair(&self, e: Explored) -> Option<f64> {
        let other = e.kind.other();
        let good = |s: &&Seen| self.agrees(s.kind, s.rate);
        let rates = |v: Vec<&Seen>| v.iter().map(|s| s.rate).collect::<Vec<f64>>();
        let during: Vec<&Seen> = self
            .history
            .iter()
            .filter(|s| s.kind == e.kind && (e.first..=e.last).contains(&s.at))
            .filter(good)
            .collect();
        let mut before: Vec<&Seen> = self
            .history
            .iter()
            .filter(|s| s.kind == other && s.at < e.first && s.at + HORIZON >= e.first)
            .filter(good)
            .collect();
        let older = before.len().saturating_sub(BRACKET);
        before.drain(..older);
        let after: Vec<&Seen> = self
            .history
            .iter()
            .filter(|s| s.kind == other && s.at > e.last && s.at <= e.last + HORIZON)
            .filter(good)
            .take(BRACKET)
            .collect();
        let explored = mean(&rates(during))?;
        // Both sides: their mean is the other kind's rate at the
        // exploration's middle, whichever way the guest's speed drifts.
        let reference = match (mean(&rates(before)), mean(&rates(after))) {
            (Some(b), Some(a)) => (b + a) / 2.0,
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return None,
        };
        let (f, n) = if e.kind == Kind::Native { (reference, explored) } else { (explored, reference) };
        Some((f / n).clamp(1.0 / MAX_GAIN, MAX_GAIN))
    }

    /// The kind to explore: the one the task did not give by itself since
    /// the last exploration, or if it gave neither (or both), the one not
    /// explored last.
    fn wanted(&self) -> Kind {
        let (f, n) = (self.given[Kind::Fused as usize], self.given[Kind::Native as usize]);
        if f > n {
            Kind::Native
        } else if n > f {
            Kind::Fused
        } else {
            self.last_explored.map_or(Kind::Native, Kind::other)
        }
    }

    /// Interval `at` ended: go on with the exploration under way, end it,
    /// or start one.
    fn advance_phase(&mut self, at: u64, usable: bool, got: Option<Kind>) {
        if self.phase != Phase::Normal {
            let kind = if self.phase == Phase::ExploreNative { Kind::Native } else { Kind::Fused };
            self.gained |= got == Some(kind);
            self.phase_left -= 1;
            if self.phase_left > 0 {
                return;
            }
            self.pending.push(Explored { kind, first: self.explore_first, last: at });
            // A kind it asked for and did not get waits longer next time.
            let b = &mut self.backoff[kind as usize];
            *b = if self.gained { 0 } else { (*b * 2).clamp(2 * BRACKET as u32, STALE) };
            self.phase = Phase::Normal;
            self.settle = true;
            self.since = 0;
            self.given = [0; 2];
            return;
        }
        // Only a task that runs can be measured.
        if !usable {
            return;
        }
        self.since += 1;
        if let Some(k) = got {
            self.given[k as usize] += 1;
        }
        let kind = self.wanted();
        let bracket = self.given[kind.other() as usize] as usize;
        let ready = if self.pairs.len() < MIN_PAIRS {
            // Until it has a few pairs, as soon as a bracket is there: BRACKET
            // samples of the kind it gives by itself (an interval between
            // kinds gives none), or if it gives neither, BRACKET intervals
            // (explorations of both kinds then bracket each other); at most
            // HORIZON.
            let neither = self.given == [0, 0];
            let since = self.since as usize;
            since >= BRACKET && (bracket >= BRACKET || neither) || since >= HORIZON as usize
        } else {
            self.since >= PERIOD - EXPLORE - 1
        };
        if !ready || self.since < self.backoff[kind as usize] {
            return;
        }
        self.phase = if kind == Kind::Native { Phase::ExploreNative } else { Phase::ExploreFused };
        self.phase_left = EXPLORE;
        self.explore_first = at + 1;
        self.gained = false;
        self.last_explored = Some(kind);
        self.settle = true;
    }

    /// The speed-up from the pairs, and the tax one rung towards where all
    /// of them but one (all, while there are fewer than 4) put it.
    fn estimate(&mut self) {
        if self.pairs.len() < MIN_PAIRS {
            return;
        }
        let mut v: Vec<f64> = self.pairs.iter().copied().collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        self.speedup = Some(median(v.iter().copied()).exp());
        let trim = usize::from(n >= 4);
        let (low, high) = (v[trim].exp(), v[n - 1 - trim].exp());
        // The least and the most tax the band allows.
        let (least, most) = (target_rung(high), target_rung(low));
        let rung = self.rung as f64;
        // Two rungs an interval while the band is more than two away: the
        // first estimate comes 5 s in, and a task should not wait 2 s more
        // for a tax all its ratios agree on.
        let stride = |gap: f64| if gap > 2.0 + DEADBAND { 2 } else { 1 };
        if least > rung + DEADBAND {
            self.rung = (self.rung + stride(least - rung)).min(TOP_RUNG);
        } else if most < rung - DEADBAND {
            self.rung = (self.rung - stride(rung - most)).max(BOTTOM_RUNG);
        }
    }
}

#[cfg(test)]
mod tests;
