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
mod tests;
