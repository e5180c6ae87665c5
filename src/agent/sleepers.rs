//! Tagged tasks asleep, and those whose object was released for it: CPUs
//! are not reserved for a thread that does not run (§4.3.5). A requester
//! that sleeps SLEEP_RELEASE or longer becomes dormant (the Assigner
//! releases its object); when it wakes it asks again.
//!
//! Invariant: a dormant pid is asleep (`dormant` ⊆ `asleep`): only
//! `due_release` makes one dormant, from `asleep`, and `wake` and `forget`
//! clear both.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// A tagged task asleep this long gives its object up until it wakes.
pub const SLEEP_RELEASE: Duration = Duration::from_millis(100);

#[derive(Default)]
pub struct Sleepers {
    /// Since when each is asleep (its first sleep event since it last woke).
    asleep: HashMap<i32, Instant>,
    /// Those whose object was released for it.
    dormant: HashSet<i32>,
}

impl Sleepers {
    /// Task `pid` went to sleep at `now` (a repeated sleep event keeps the
    /// first time).
    pub fn sleep(&mut self, pid: i32, now: Instant) {
        self.asleep.entry(pid).or_insert(now);
    }

    /// Task `pid` woke: whether it was dormant (its object must be asked
    /// for again).
    pub fn wake(&mut self, pid: i32) -> bool {
        self.asleep.remove(&pid);
        self.dormant.remove(&pid)
    }

    /// The sleepers asleep SLEEP_RELEASE or longer at `now` and not dormant
    /// yet: dormant from now, their objects to release.
    pub fn due_release(&mut self, now: Instant) -> Vec<i32> {
        let due: Vec<i32> = self
            .asleep
            .iter()
            .filter(|(pid, since)| now.saturating_duration_since(**since) >= SLEEP_RELEASE && !self.dormant.contains(pid))
            .map(|(&pid, _)| pid)
            .collect();
        self.dormant.extend(&due);
        due
    }

    /// Task `pid` is no requester any more.
    pub fn forget(&mut self, pid: i32) {
        self.asleep.remove(&pid);
        self.dormant.remove(&pid);
    }

    pub fn is_empty(&self) -> bool {
        self.asleep.is_empty()
    }
}

#[cfg(test)]
mod tests;
