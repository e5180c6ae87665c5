//! A periodic chore on the agent's loop (the reconcile, the audit, the
//! automatic taxes' interval, the accounting period of the fast contexts):
//! due once `period` has passed since it last ran. The loop is not a timer:
//! a run starts when the loop comes round after it is due, and the next is
//! counted from then, so a late run does not make the next one early.

use std::time::{Duration, Instant};

pub struct Every {
    period: Duration,
    last: Instant,
}

impl Every {
    /// Counted from now: the first run is one period away.
    pub fn new(period: Duration) -> Self {
        Every { period, last: Instant::now() }
    }

    /// If it is due, it runs from now: true. Otherwise false.
    pub fn start_if_due(&mut self) -> bool {
        if self.last.elapsed() < self.period {
            return false;
        }
        self.last = Instant::now();
        true
    }

    /// How long until it is due (zero if it is).
    pub fn remaining(&self) -> Duration {
        self.period.saturating_sub(self.last.elapsed())
    }

    /// How long past due it is, if it is due.
    pub fn overdue(&self) -> Option<Duration> {
        let since = self.last.elapsed();
        (since >= self.period).then(|| since - self.period)
    }
}

#[cfg(test)]
mod tests;
