//! How late the agent's loop runs what is due on its clock: the 20 ms tick
//! and the share rotation. The loop sleeps in poll() until the next of them
//! is due; anything it then does inline (a scan, a client, an ioctl) delays
//! the one after. Each tick and rotation records `now - due` here, and the
//! histogram goes out with the other counters (scx_stats, OpenMetrics), so
//! a loop held up shows from outside, not only as a slower rotation.
//!
//! Buckets are powers of two in microseconds (`BOUNDS_US`); the last is open.
//! Counts only grow: a reader takes differences between two samples.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Upper bounds of the buckets in µs (inclusive); a last, open bucket
/// takes the rest. 1 µs to about 4 s: a tick is "on time" in the first few
/// and held up by a blocking call in the last ones.
pub const BOUNDS_US: [u64; 23] = [
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1 << 10, 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16,
    1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22,
];

/// A histogram of lateness (one bucket more than there are bounds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lateness {
    /// Count per bucket (not cumulative); `BOUNDS_US.len() + 1` entries.
    pub counts: Vec<u64>,
    /// Sum of every lateness recorded, in µs.
    pub sum_us: u64,
    pub max_us: u64,
}

/// The bucket `us` falls in.
pub fn bucket(us: u64) -> usize {
    BOUNDS_US.partition_point(|&b| b < us)
}

impl Lateness {
    pub fn record(&mut self, late: Duration) {
        let us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        if self.counts.len() != BOUNDS_US.len() + 1 {
            self.counts.resize(BOUNDS_US.len() + 1, 0);
        }
        self.counts[bucket(us)] += 1;
        self.sum_us = self.sum_us.saturating_add(us);
        self.max_us = self.max_us.max(us);
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// What was recorded since `earlier` (a sample of the same histogram).
    pub fn since(&self, earlier: &Lateness) -> Lateness {
        let counts = (0..self.counts.len())
            .map(|i| self.counts[i].saturating_sub(earlier.counts.get(i).copied().unwrap_or(0)))
            .collect();
        // The max cannot be taken apart: the window's own is unknown, so
        // the whole run's stands (an upper bound of it).
        Lateness { counts, sum_us: self.sum_us.saturating_sub(earlier.sum_us), max_us: self.max_us }
    }

    /// The upper bound of the bucket holding the `q` quantile (0..=1), in
    /// µs; the open bucket answers with the largest lateness seen. None
    /// when nothing was recorded.
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        // The rank of the quantile, 1-based: p99 of 100 samples is the 99th.
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(BOUNDS_US.get(i).copied().unwrap_or(self.max_us).min(self.max_us.max(1)));
            }
        }
        Some(self.max_us)
    }

    /// (upper bound, count) per bucket for an OpenMetrics histogram (the
    /// open bucket's bound is f64::MAX, which the encoder writes as +Inf), in seconds.
    pub fn buckets_s(&self) -> Vec<(f64, u64)> {
        (0..=BOUNDS_US.len())
            .map(|i| {
                let bound = BOUNDS_US.get(i).map_or(f64::MAX, |&b| b as f64 / 1e6);
                (bound, self.counts.get(i).copied().unwrap_or(0))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
