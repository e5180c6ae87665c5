//! `top`'s event pane: one short line per event, readable at a glance:
//! when, what, on which CPU, whose (`pid (comm)`, cgroup path) and the
//! kind's key figures in human units.
//!
//! ```text
//!    43.02 s fuse    cpu 0   141 (pgbench)    /work/db  cpus 0,1  latency 7.94 ms
//!    43.03 s split   cpu 0   141 (pgbench)    /work/db  tick  fused 11.9 ms  cpus 0,1
//! ```

use chameleon::report::event::{split_reason, Event, Kind};
use crate::top::Model;
use crate::top::names::{fmt_ns, Names};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// The kinds the pane shows (wakes and sleeps would drown the rest).
pub fn shown_kind(k: Kind) -> bool {
    matches!(k, Kind::Fuse | Kind::PartialFuse | Kind::Split | Kind::Demand | Kind::TaskExit | Kind::CpuOnline | Kind::CpuOffline)
}

fn short_kind(k: Kind) -> &'static str {
    match k {
        Kind::PartialFuse => "partial",
        Kind::CpuOnline => "online",
        Kind::CpuOffline => "offline",
        Kind::TaskExit => "exit",
        k => k.name(),
    }
}

fn cpus(list: &[i32]) -> String {
    list.iter().filter(|c| **c >= 0).map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// The pane's line for `ev`.
pub fn event_line(ev: &Event, names: &Names) -> String {
    let mut line = format!("{:>10} {:<7} cpu {:<3}", fmt_ns(ev.ts_ns), short_kind(ev.kind), ev.cpu);
    if matches!(ev.kind, Kind::CpuOnline | Kind::CpuOffline) {
        return line;
    }
    line += &format!(" {:<16} {}", names.pid(ev.pid), names.cgroup(ev.cgroup_id));
    // A superseded decision's latency is a lower bound.
    let latency = || format!("latency {}{}", if ev.superseded { "≥" } else { "" }, fmt_ns(ev.latency_ns));
    let figures = match ev.kind {
        Kind::Fuse => format!("cpus {}  {}", cpus(&ev.cpus), latency()),
        Kind::PartialFuse => format!("cpus {} of {}  {}", cpus(&ev.cpus), ev.level, latency()),
        Kind::Split => format!("{}  fused {}  cpus {}", split_reason(ev.reason), fmt_ns(ev.run_ns), cpus(&ev.cpus)),
        Kind::Demand if ev.level == 0 => "withdrawn".into(),
        Kind::Demand => format!("level {} ({} cpus)", ev.level, 1u64 << ev.level.min(63)),
        Kind::TaskExit => format!("ran {}  fused {}", fmt_ns(ev.run_ns), fmt_ns(ev.fused_ns)),
        _ => String::new(),
    };
    if !figures.is_empty() {
        line += "  ";
        line += &figures;
    }
    line
}

/// Draw the pane: the newest lines that fit, of the cgroups the filter keeps.
pub fn render(f: &mut Frame, m: &Model, area: Rect) {
    let height = area.height.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = m
        .log
        .iter()
        .rev()
        .filter(|e| shown_kind(e.kind))
        .filter(|e| e.cgroup_id == 0 || m.shown(e.cgroup_id))
        .take(height)
        .map(|e| Line::from(event_line(e, &m.names)))
        .collect();
    lines.reverse();
    let title = if m.paused { " events (paused) " } else { " events " };
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}
