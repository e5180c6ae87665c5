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
mod tests {
    use super::*;

    fn sample(fuse: u64, busy_ms: u64, fallback: u64) -> Metrics {
        let mut m = Metrics { fuse, split: fuse, enqueued: fuse * 10, busy_ms, sampled_ms: 0, ..Default::default() };
        m.kernel_events.insert("select_cpu_fallback".into(), fallback);
        m.kernel_events.insert("dispatch_keep_last".into(), 5);
        m
    }

    fn stdout(o: &[Output]) -> Vec<&str> {
        o.iter().filter_map(|l| if let Output::Stdout(s) = l { Some(s.as_str()) } else { None }).collect()
    }

    #[test]
    fn first_line_has_totals_then_rates_and_changed_kernel_events() {
        let first = human_line("12:00:00", None, None, &sample(100, 0, 0));
        assert!(first.starts_with("12:00:00 fuse 100 partial 0 split 100"), "{first}");
        assert!(first.contains("busy -"), "{first}");
        assert!(first.contains("| kernel: dispatch_keep_last=5"), "non-zero totals: {first}");
        assert!(!first.contains("select_cpu_fallback"), "zero: {first}");
        let a = sample(100, 1000, 0);
        let line = human_line("12:00:02", Some((&a, 2.0)), Some(&a.kernel_events), &sample(108, 4000, 3));
        assert!(line.contains("fuse 108 (+4.0/s)"), "{line}");
        assert!(line.contains("enq 1080 (+40.0/s)"), "{line}");
        assert!(line.contains("busy 1.50 cpus"), "{line}");
        assert!(line.ends_with("| kernel: select_cpu_fallback +3"), "only the one that changed: {line}");
        let fast = human_line("t", Some((&a, 0.5)), None, &sample(200, 1000, 0));
        assert!(fast.contains("fuse 200 (+200/s)"), "large rates without decimals: {fast}");
    }

    #[test]
    fn counters_going_down_mean_a_new_agent() {
        let old = sample(500, 9000, 40);
        let line = human_line("t", Some((&old, 1.0)), Some(&old.kernel_events), &sample(3, 100, 2));
        assert!(line.contains("fuse 3 partial"), "no rate: {line}");
        assert!(line.contains("| kernel: dispatch_keep_last=5 select_cpu_fallback=2 "), "totals: {line}");
        assert!(line.ends_with("(counters restarted)"), "{line}");
        // A new scheduler instance under the same agent (the kernel asked for
        // a restart): only the kernel's counters went down.
        let line = human_line("t", Some((&old, 1.0)), Some(&old.kernel_events), &sample(600, 9500, 2));
        assert!(line.contains("fuse 600 (+100/s)") && line.ends_with("| kernel: dispatch_keep_last=5 select_cpu_fallback=2"), "{line}");
    }

    #[test]
    fn lent_cpus_only_with_the_module() {
        assert!(!human_line("t", None, None, &Metrics::default()).contains("lent"));
        let m = Metrics { proxy_module_loaded: 1, proxy_lent_cpus: 2, ..Default::default() };
        assert!(human_line("t", None, None, &m).contains("lent 2"));
    }

    #[test]
    fn an_outage_is_said_once_and_retried_with_a_bounded_backoff() {
        let every = Duration::from_secs(1);
        let mut mon = Monitor::new(every, false);
        let (out, wait) = mon.step(Ok(sample(1, 0, 0)), 0.0, "a");
        assert_eq!((stdout(&out).len(), wait), (1, every));
        let mut waits = Vec::new();
        let mut said = 0;
        for i in 0..8 {
            let (out, wait) = mon.step(Err(anyhow::anyhow!("no socket")), 1.0 + i as f64, "b");
            said += stdout(&out).iter().filter(|l| **l == NOT_RUNNING).count();
            waits.push(wait.as_millis());
        }
        assert_eq!(said, 1, "once per outage");
        assert_eq!(waits, [250, 500, 1000, 2000, 2000, 2000, 2000, 2000]);
        // Back: a line with no rates (a new agent's counters), then rates again.
        let (out, wait) = mon.step(Ok(sample(4, 0, 0)), 20.0, "c");
        assert_eq!(wait, every);
        assert!(stdout(&out)[0].starts_with("c fuse 4 partial"), "{out:?}");
        let (out, _) = mon.step(Ok(sample(6, 0, 0)), 21.0, "d");
        assert!(stdout(&out)[0].contains("fuse 6 (+2.0/s)"), "{out:?}");
        // A second outage is said again.
        let (out, _) = mon.step(Err(anyhow::anyhow!("gone")), 22.0, "e");
        assert_eq!(stdout(&out), [NOT_RUNNING]);
    }

    #[test]
    fn rates_are_over_the_agents_period_whatever_the_polling() {
        // The agent reads its counters each second, the monitor asks every
        // 0.5 s: the same sample twice, then the next.
        let mut mon = Monitor::new(Duration::from_millis(500), false);
        let at = |ms, fuse, fallback| Metrics { sampled_ms: ms, ..sample(fuse, 0, fallback) };
        let mut lines = Vec::new();
        for (i, m) in [at(1000, 10, 0), at(1000, 10, 0), at(2000, 14, 1), at(2000, 14, 1), at(3000, 18, 1), at(3000, 18, 4)]
            .into_iter()
            .enumerate()
        {
            let (out, _) = mon.step(Ok(m), 0.1 + i as f64 * 0.5, "t");
            lines.push(stdout(&out)[0].to_string());
        }
        assert!(lines[1].contains("fuse 10 partial"), "no second sample yet: {}", lines[1]);
        for l in &lines[2..] {
            assert!(l.contains("(+4.0/s)"), "4 fuses a second each line: {l}");
        }
        // The kernel's counters are fresh at each request: changes since the last line.
        assert!(lines[2].ends_with("select_cpu_fallback +1"), "{}", lines[2]);
        assert!(!lines[3].contains("kernel"), "{}", lines[3]);
        assert!(lines[5].ends_with("select_cpu_fallback +3"), "{}", lines[5]);
    }

    #[test]
    fn json_lines_stay_json_and_the_notice_goes_to_stderr() {
        let mut mon = Monitor::new(Duration::from_millis(500), true);
        let (out, _) = mon.step(Err(anyhow::anyhow!("none yet")), 0.0, "a");
        assert_eq!(out, [Output::Stderr(NOT_RUNNING.into())]);
        let (out, _) = mon.step(Ok(sample(7, 0, 2)), 1.0, "b");
        let line = stdout(&out)[0];
        let back: Metrics = serde_json::from_str(line).unwrap();
        assert_eq!((back.fuse, back.kernel_events["select_cpu_fallback"]), (7, 2));
        assert!(line.contains("\"fuse\":7"), "{line}");
    }
}
