//! `top`'s history band: the last minutes of borrowing as sparklines, so
//! that a burst of fuses or a slow drift of lent CPUs is visible after it
//! happened, not only while it happens. One sample a second in a ring of
//! SECONDS; a second without a scheduler is an absent sample (drawn '·'),
//! not a zero, so an outage does not read as "nothing fused".

use chameleon::report::status::Snapshot;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::widgets::{Block, Borders, RenderDirection, Sparkline};
use ratatui::Frame;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How much history is kept: 5 minutes at one sample a second.
pub const SECONDS: usize = 300;

/// One second of the machine, as the history band shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Fuses (whole and partial) in the last second, from the event stream.
    pub fuse_per_s: u64,
    /// Online CPUs inside a fused object (representatives and lent CPUs), in
    /// percent of the online CPUs.
    pub fused_pct: u64,
    /// CPUs lent to a representative.
    pub lent: u64,
}

/// The sample for this second from the agent's status (None: none running).
pub fn sample(status: Option<&Snapshot>, fuse_per_s: u64) -> Option<Sample> {
    let s = status?;
    let online = s.cpus.iter().filter(|c| c.online).count() as u64;
    let count = |role: &str| s.cpus.iter().filter(|c| c.online && c.role == role).count() as u64;
    let lent = count("borrowed");
    let fused = count("rep") + lent;
    Some(Sample { fuse_per_s, fused_pct: (fused * 100).checked_div(online).unwrap_or(0), lent })
}

#[derive(Debug, Default)]
pub struct History {
    /// Oldest first; None: no scheduler that second.
    samples: VecDeque<Option<Sample>>,
    /// The second the last sample stands for.
    last: Option<Instant>,
}

impl History {
    /// Add a sample (oldest dropped beyond SECONDS).
    pub fn push(&mut self, s: Option<Sample>) {
        self.samples.push_back(s);
        while self.samples.len() > SECONDS {
            self.samples.pop_front();
        }
    }

    /// Called on every tick: record `s` once for each whole second since
    /// the last sample (a stalled screen catches up with the same value,
    /// so the band's time axis stays one column a second). Returns how many
    /// samples were added.
    pub fn record(&mut self, now: Instant, s: Option<Sample>) -> usize {
        let Some(last) = self.last else {
            self.last = Some(now);
            self.push(s);
            return 1;
        };
        let secs = now.saturating_duration_since(last).as_secs();
        if secs == 0 {
            return 0;
        }
        self.last = Some(last + Duration::from_secs(secs));
        let n = (secs as usize).min(SECONDS);
        for _ in 0..n {
            self.push(s);
        }
        n
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// One series, newest first (the sparkline draws it right to left, so
    /// the newest second is at the right edge and the oldest fall off the left).
    fn series(&self, f: impl Fn(&Sample) -> u64) -> Vec<Option<u64>> {
        self.samples.iter().rev().map(|s| s.as_ref().map(&f)).collect()
    }
}

/// Title of one sparkline: the latest value and the largest over the window.
fn title(name: &str, series: &[Option<u64>], unit: &str) -> String {
    let now = series.first().copied().flatten().map_or("-".to_string(), |v| format!("{v}{unit}"));
    let max = series.iter().flatten().max().copied().unwrap_or(0);
    format!(" {name} {now} (max {max}{unit}) ")
}

/// Draw the three sparklines side by side in `area`.
pub fn render(f: &mut Frame, h: &History, area: Rect) {
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Ratio(1, 3), Constraint::Ratio(1, 3), Constraint::Ratio(1, 3)])
        .split(area);
    let window = format!("{}s", h.len());
    let fuse = h.series(|s| s.fuse_per_s);
    let share = h.series(|s| s.fused_pct);
    let lent = h.series(|s| s.lent);
    let parts = [
        (title("fuse/s", &fuse, ""), fuse, None, Color::Cyan),
        (title("fused CPUs", &share, "%"), share, Some(100), Color::Green),
        (title("lent CPUs", &lent, ""), lent, None, Color::Yellow),
    ];
    for (i, (name, data, max, color)) in parts.into_iter().enumerate() {
        let block = Block::default().borders(Borders::ALL).title(name).title_bottom(format!(" last {window} "));
        let mut spark = Sparkline::default()
            .block(block)
            .data(data)
            .direction(RenderDirection::RightToLeft)
            .style(Style::default().fg(color))
            .absent_value_symbol("·")
            .absent_value_style(Style::default().fg(Color::DarkGray));
        if let Some(max) = max {
            spark = spark.max(max);
        }
        f.render_widget(spark, cols[i]);
    }
}

#[cfg(test)]
mod tests {
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
}
