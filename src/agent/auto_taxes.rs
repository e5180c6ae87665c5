//! The requesters whose tag says `tax=auto`, each with its controller
//! (nodes/auto_tax.rs) and where its progress comes from. Once per interval
//! each is sampled and its controller decides the tax to publish, or that
//! its object be withdrawn for a native exploration; what changed is handed
//! to the Assigner, which writes it through the ObjectMap like any tax.
//!
//! Each may hold an instruction counter (a perf fd) while its PMU allows,
//! at most `perf_cap` of them (fd_budget.rs): those tracked past it count
//! by their progress file only, and are counted.
//!
//! Invariant: a pid is here only while it is a requester with an auto tag
//! (`track` on its DEMAND, `forget` when it leaves or is retagged);
//! `perf_held` is the number here whose probe may count instructions.

use crate::agent::decisions::{monotonic_ns, DECISIONS};
use crate::nodes::auto_tax::{Controller, Decision, Phase, INTERVAL_MS, MIN_PAIRS};
use crate::nodes::progress::{fused_ns, Probe};
use crate::report::status::AutoTaxStatus;
use crate::tags::tag::tax_text;
use libbpf_rs::MapCore;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tracing::debug;

const AUTO_EVERY: Duration = Duration::from_millis(INTERVAL_MS);

/// A tagged task whose tag says `tax=auto`: its controller, where its
/// progress comes from, and what is published for it now.
struct AutoTask {
    ctl: Controller,
    probe: Probe,
    now: Decision,
    /// The tax last printed, and whether a speed-up was printed with it:
    /// the first estimate is printed even if it leaves the tax where it
    /// was (a task measured at 1.3x stays at 1.00, and a reader of the log
    /// would see no speed-up at all).
    shown: Option<(u32, bool)>,
}

impl AutoTask {
    fn new(pid: i32, may_count: bool) -> Self {
        let ctl = Controller::new();
        let now = Decision { tax: ctl.tax(), withdraw: false };
        AutoTask { ctl, probe: Probe::new(pid, may_count), now, shown: None }
    }
}

pub struct AutoTaxes {
    tasks: HashMap<i32, AutoTask>,
    /// When the last interval was sampled.
    last: Instant,
    /// At most this many tasks may hold an instruction counter.
    perf_cap: usize,
    /// Tasks here whose probe may count instructions.
    perf_held: usize,
    /// Tasks tracked without one (the cap reached), since the start.
    perf_refused: u64,
}

impl AutoTaxes {
    /// At most `perf_cap` instruction counters held.
    pub fn with_perf_cap(perf_cap: usize) -> AutoTaxes {
        AutoTaxes { tasks: HashMap::new(), last: Instant::now(), perf_cap, perf_held: 0, perf_refused: 0 }
    }

    /// Tasks tracked without an instruction counter for the cap.
    pub fn perf_refused(&self) -> u64 {
        self.perf_refused
    }

    /// Requester `pid` has an auto tag (kept as it is if it had one already).
    pub fn track(&mut self, pid: i32) {
        if self.tasks.contains_key(&pid) {
            return;
        }
        let may_count = self.perf_held < self.perf_cap;
        if may_count {
            self.perf_held += 1;
        } else {
            self.perf_refused += 1;
        }
        self.tasks.insert(pid, AutoTask::new(pid, may_count));
    }

    /// Requester `pid` left, or is retagged to a fixed tax.
    pub fn forget(&mut self, pid: i32) {
        if self.tasks.remove(&pid).is_some_and(|t| t.probe.may_count_instructions()) {
            self.perf_held -= 1;
        }
    }

    /// The tax its controller publishes now (None: not an auto-tax task).
    pub fn tax(&self, pid: i32) -> Option<u32> {
        self.tasks.get(&pid).map(|a| a.now.tax)
    }

    /// Is its object withdrawn for a native exploration?
    pub fn withdrawn(&self, pid: i32) -> bool {
        self.tasks.get(&pid).is_some_and(|a| a.now.withdraw)
    }

    /// Once per interval (auto_tax.rs): sample each task and step its
    /// controller. Returns those whose decision changed, with the new one,
    /// to publish (its tax, or its object withdrawn). `key_of`: the held
    /// pidfd of a task, its key in `task_ctxs` (object_map.rs).
    pub fn tick(&mut self, task_ctxs: &dyn MapCore, key_of: impl Fn(i32) -> Option<[u8; 4]>) -> Vec<(i32, Decision)> {
        if self.tasks.is_empty() || self.last.elapsed() < AUTO_EVERY {
            return Vec::new();
        }
        self.last = Instant::now();
        let mut changed = Vec::new();
        for (&pid, at) in self.tasks.iter_mut() {
            let fused = key_of(pid).and_then(|key| fused_ns(task_ctxs, &key));
            if let Some(now) = at.step(pid, fused) {
                changed.push((pid, now));
            }
        }
        changed
    }

    /// Each task's controller, as `status` shows it, by pid.
    pub fn status(&self) -> Vec<AutoTaxStatus> {
        let mut all: Vec<AutoTaxStatus> = self
            .tasks
            .iter()
            .map(|(&pid, a)| AutoTaxStatus {
                pid,
                tax: a.ctl.tax(),
                speedup: a.ctl.speedup().filter(|s| s.is_finite()),
                source: a.probe.source().name().into(),
                pairs: a.ctl.pairs(),
                exploring: match a.ctl.phase() {
                    Phase::Normal => None,
                    Phase::ExploreNative => Some("native".into()),
                    Phase::ExploreFused => Some("fused".into()),
                },
            })
            .collect();
        all.sort_by_key(|a| a.pid);
        all
    }
}

impl AutoTask {
    /// One interval of task `pid` (`fused`: BPF's count of its fused time):
    /// sample it, step the controller, log what it learnt. The new decision
    /// if it changed.
    fn step(&mut self, pid: i32, fused: Option<u64>) -> Option<Decision> {
        let (sample, changed) = self.probe.sample(monotonic_ns(), fused);
        if changed {
            self.ctl.reset_samples();
            debug!(target: DECISIONS, "autotax pid={pid} source={}", self.probe.source().name());
        }
        if let Some(s) = sample {
            debug!(
                "autotax pid={pid} sample wall_us={} cpu_us={} fused_us={} progress={} phase={:?}",
                s.wall_ns / 1000,
                s.cpu_ns / 1000,
                s.fused_ns / 1000,
                s.progress,
                self.ctl.phase()
            );
        }
        let was = self.now;
        self.now = self.ctl.step(sample);
        let now = self.now;
        if let Some(r) = self.ctl.take_pair() {
            debug!("autotax pid={pid} pair={r:.3} pairs={}", self.ctl.pairs());
        }
        let explore = match self.ctl.phase() {
            Phase::ExploreNative if !was.withdraw => Some("native"),
            Phase::ExploreFused if was.tax != now.tax => Some("fused"),
            _ => None,
        };
        if let Some(kind) = explore {
            // Once it has its first ratios there is one every 3 s: debug.
            if self.ctl.pairs() < MIN_PAIRS {
                debug!(target: DECISIONS, "autotax pid={pid} explore={kind}");
            } else {
                debug!("autotax pid={pid} explore={kind}");
            }
        }
        let tax = self.ctl.tax();
        let shown = Some((tax, self.ctl.speedup().is_some()));
        if self.shown != shown {
            self.shown = shown;
            let speedup = self.ctl.speedup().map_or("-".into(), |s| format!("{s:.2}"));
            debug!(target: DECISIONS, "autotax pid={pid} speedup={speedup} tax={}", tax_text(tax));
        }
        (now != was).then_some(now)
    }
}

#[cfg(test)]
mod tests;
