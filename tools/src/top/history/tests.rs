use super::*;
use chameleon::report::status::CpuStatus;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// The rows of a rendered history band.
fn rows(h: &History, width: u16, height: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
    t.draw(|f| render(f, h, f.area())).unwrap();
    let buf = t.backend().buffer().clone();
    let cells: Vec<&str> = buf.content().iter().map(|c| c.symbol()).collect();
    cells.chunks(width as usize).map(|r| r.concat()).collect()
}

/// Bars drawn in the first sparkline's one row of bars (inside its border).
fn bars(row: &str, col_width: usize) -> usize {
    row.chars().skip(1).take(col_width - 2).filter(|c| "▁▂▃▄▅▆▇█".contains(*c)).count()
}

#[test]
fn the_sparkline_has_one_bar_per_second_recorded() {
    let mut h = History::default();
    for i in 1..=7 {
        h.push(Some(Sample { fuse_per_s: i, fused_pct: 50, lent: 1 }));
    }
    let r = rows(&h, 90, 3);
    assert!(r[0].contains("fuse/s 7 (max 7)"), "{r:?}");
    assert!(r[0].contains("fused CPUs 50% (max 50%)"), "{r:?}");
    assert!(r[0].contains("lent CPUs 1 (max 1)"), "{r:?}");
    assert!(r[2].contains("last 7s"), "{r:?}");
    assert_eq!(bars(&r[1], 30), 7, "{r:?}");
    // Newest at the right edge: the tallest bar is the last one drawn.
    let spark: Vec<char> = r[1].chars().skip(1).take(28).collect();
    assert_eq!(spark[27], '█', "{r:?}");
}

#[test]
fn the_newest_seconds_fill_a_narrow_band_and_outages_show_as_absent() {
    let mut h = History::default();
    for _ in 0..100 {
        h.push(Some(Sample { fuse_per_s: 3, fused_pct: 10, lent: 2 }));
    }
    h.push(None);
    let r = rows(&h, 60, 3);
    assert_eq!(bars(&r[1], 20), 17, "18 columns, the newest absent: {r:?}");
    assert!(r[1].chars().nth(18) == Some('·'), "{r:?}");
    assert!(r[0].contains("fuse/s - (max 3)"), "{r:?}");
}

#[test]
fn keeps_five_minutes_one_sample_a_second() {
    let mut h = History::default();
    let t0 = Instant::now();
    let s = Some(Sample::default());
    assert_eq!(h.record(t0, s), 1);
    assert_eq!(h.record(t0 + Duration::from_millis(500), s), 0);
    assert_eq!(h.record(t0 + Duration::from_millis(1000), s), 1);
    assert_eq!(h.record(t0 + Duration::from_millis(4200), s), 3, "a stall catches up");
    assert_eq!(h.record(t0 + Duration::from_millis(4900), s), 0);
    assert_eq!(h.record(t0 + Duration::from_millis(5000), s), 1);
    assert_eq!(h.len(), 6);
    h.record(t0 + Duration::from_secs(3600), s);
    assert_eq!(h.len(), SECONDS);
}

#[test]
fn a_sample_counts_fused_and_lent_cpus() {
    let cpu = |cpu, online, role: &str| CpuStatus { cpu, online, role: role.into(), with: 0, perf: None };
    let snap = Snapshot {
        agent_pid: 1,
        cpus: vec![cpu(0, true, "rep"), cpu(1, true, "borrowed"), cpu(2, true, "native"), cpu(3, true, "idle"), cpu(4, false, "native")],
        ..Default::default()
    };
    assert_eq!(sample(Some(&snap), 4), Some(Sample { fuse_per_s: 4, fused_pct: 50, lent: 1 }));
    assert_eq!(sample(None, 4), None);
}
