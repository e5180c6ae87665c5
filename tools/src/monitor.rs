//! `scx_chameleon --monitor N`: the running scheduler's counters every N
//! seconds, read from its scx_stats socket. It outlives the scheduler: while
//! none answers it says so once and keeps asking (a restart, an upgrade), and
//! picks up again when one is back.
//!
//! `Monitor::step` decides what to print and how long to wait from one
//! fetch's outcome; it is pure (the clock text and the time are passed in) so
//! the host tests drive outages and restarts through it.

use chameleon::report::metrics::Metrics;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Said once per outage (not every retry), on stdout in the human form and
/// on stderr with JSON, where stdout must stay one JSON object a line.
pub const NOT_RUNNING: &str = "scx_chameleon not running, retrying";

/// A line to print, and where.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Stdout(String),
    Stderr(String),
}

#[derive(Debug)]
pub struct Monitor {
    every: Duration,
    json: bool,
    /// The agent's last two distinct samples (it reads its counters once a
    /// second), each with when we fetched it (seconds on the caller's
    /// clock): rates are over the period between them, so polling faster
    /// or slower than the agent does not make them jump. None at start and
    /// after an outage.
    older: Option<(f64, Metrics)>,
    newer: Option<(f64, Metrics)>,
    /// The kernel's event counters at the last line (read fresh at each
    /// request): the line shows those that changed since.
    kernel_last: Option<BTreeMap<String, u64>>,
    /// Failed fetches in a row (0: connected).
    failures: u32,
}

/// Wait before the n-th retry in a row (n >= 1): quick at first, since a
/// restart takes about a second, then every 2 s at most.
pub fn retry_delay(failures: u32) -> Duration {
    Duration::from_millis((250u64 << failures.saturating_sub(1).min(3)).min(2000))
}

impl Monitor {
    pub fn new(every: Duration, json: bool) -> Monitor {
        Monitor { every, json, older: None, newer: None, kernel_last: None, failures: 0 }
    }

    /// One fetch's outcome at `now` (seconds), with `clock` the wall-clock
    /// text for the line: what to print and how long to wait before the next.
    pub fn step(&mut self, fetched: anyhow::Result<Metrics>, now: f64, clock: &str) -> (Vec<Output>, Duration) {
        let m = match fetched {
            Ok(m) => m,
            Err(_) => {
                let mut out = Vec::new();
                if self.failures == 0 {
                    out.push(if self.json { Output::Stderr(NOT_RUNNING.into()) } else { Output::Stdout(NOT_RUNNING.into()) });
                }
                // The next agent starts its counters from zero: no rate
                // across the gap.
                (self.older, self.newer, self.kernel_last) = (None, None, None);
                self.failures += 1;
                return (out, retry_delay(self.failures));
            }
        };
        self.failures = 0;
        if self.json {
            return (vec![Output::Stdout(serde_json::to_string(&m).unwrap_or_default())], self.every);
        }
        // The same sample as last time (the agent has not read its counters
        // again): the rates stay those of its last period.
        let same = self.newer.as_ref().is_some_and(|(_, n)| m.sampled_ms != 0 && n.sampled_ms == m.sampled_ms);
        if !same {
            self.older = self.newer.take();
            self.newer = Some((now, m.clone()));
        }
        let base = self.older.as_ref().map(|(t, o)| {
            let (fetched, newer) = self.newer.as_ref().map(|(t, n)| (*t, n)).unwrap();
            // The agent's own clock when both samples carry it.
            let secs = if o.sampled_ms != 0 && newer.sampled_ms > o.sampled_ms {
                (newer.sampled_ms - o.sampled_ms) as f64 / 1000.0
            } else {
                fetched - t
            };
            (o, secs)
        });
        let line = human_line(clock, base, self.kernel_last.as_ref(), &m);
        self.kernel_last = Some(m.kernel_events);
        (vec![Output::Stdout(line)], self.every)
    }
}

/// A count and, after the first line, its rate: "fuse 120 (+4.0/s)".
fn counter(name: &str, now: u64, prev: Option<(u64, f64)>) -> String {
    match prev {
        Some((p, secs)) if secs > 0.0 => {
            let rate = now.saturating_sub(p) as f64 / secs;
            if rate >= 100.0 {
                format!("{name} {now} (+{rate:.0}/s)")
            } else {
                format!("{name} {now} (+{rate:.1}/s)")
            }
        }
        _ => format!("{name} {now}"),
    }
}

/// The counters that only grow, as (name in the line, value).
fn counters(m: &Metrics) -> [(&'static str, u64); 8] {
    [
        ("fuse", m.fuse),
        ("partial", m.partial_fuse),
        ("split", m.split),
        ("denied", m.fuse_denied),
        ("stolen", m.stolen),
        ("enq", m.enqueued),
        ("proxy", m.proxy_served),
        ("dropped", m.events_dropped),
    ]
}

/// One human-readable line: the main counters with their rates since `prev`
/// (an earlier sample and the seconds between), the CPUs busy on average
/// over that time, lent CPUs when the module is loaded, and the kernel's
/// event counters that changed since `kernel_prev` (all non-zero ones on a
/// first line). A counter that went down means another agent (and another
/// scheduler instance, whose kernel counters start again) started: the line
/// is then a first one.
pub fn human_line(
    clock: &str,
    prev: Option<(&Metrics, f64)>,
    kernel_prev: Option<&BTreeMap<String, u64>>,
    m: &Metrics,
) -> String {
    let restarted = prev.is_some_and(|(p, _)| counters(m).iter().zip(counters(p)).any(|(a, b)| a.1 < b.1));
    let prev = if restarted { None } else { prev };
    let kernel_prev = kernel_prev
        .filter(|k| !restarted && !k.iter().any(|(name, v)| m.kernel_events.get(name).is_some_and(|now| now < v)));
    let mut parts = vec![clock.to_string()];
    let before = prev.map(|(p, _)| counters(p));
    for (i, (name, v)) in counters(m).into_iter().enumerate() {
        parts.push(counter(name, v, before.map(|b| (b[i].1, prev.unwrap().1))));
    }
    match prev {
        Some((p, secs)) if secs > 0.0 => {
            let busy = m.busy_ms.saturating_sub(p.busy_ms) as f64 / (secs * 1000.0);
            parts.push(format!("busy {busy:.2} cpus"));
        }
        _ => parts.push("busy -".into()),
    }
    if m.proxy_module_loaded == 1 {
        parts.push(format!("lent {}", m.proxy_lent_cpus));
    }
    let kernel: Vec<String> = match kernel_prev {
        Some(p) => m
            .kernel_events
            .iter()
            .filter_map(|(k, &v)| {
                let d = v - p.get(k).copied().unwrap_or(0);
                (d != 0).then(|| format!("{k} +{d}"))
            })
            .collect(),
        None => m.kernel_events.iter().filter(|(_, v)| **v != 0).map(|(k, v)| format!("{k}={v}")).collect(),
    };
    if !kernel.is_empty() {
        parts.push(format!("| kernel: {}", kernel.join(" ")));
    }
    if restarted {
        parts.push("(counters restarted)".into());
    }
    parts.join(" ")
}

/// Local time of day, "HH:MM:SS", for the human lines.
fn clock_now() -> String {
    chrono::Local::now().format("%H:%M:%S").to_string()
}

/// Print the counters every `every` until stdout is closed (`| head`), the
/// scheduler coming and going underneath.
pub fn run(every: Duration, json: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let start = Instant::now();
    let mut mon = Monitor::new(every, json);
    loop {
        let (lines, wait) = mon.step(chameleon::report::metrics::fetch(), start.elapsed().as_secs_f64(), &clock_now());
        for line in lines {
            match line {
                Output::Stdout(l) => {
                    let mut out = std::io::stdout().lock();
                    if writeln!(out, "{l}").and_then(|_| out.flush()).is_err() {
                        return Ok(());
                    }
                }
                Output::Stderr(l) => eprintln!("{l}"),
            }
        }
        std::thread::sleep(wait);
    }
}

#[cfg(test)]
mod tests;
