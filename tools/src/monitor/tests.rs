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
