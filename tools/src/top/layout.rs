//! Where `top`'s panes go, and the CPU pane in its two views: the per-CPU
//! grid (wrapped over as many rows as it needs, up to a third of the screen)
//! and, for machines where a grid no longer reads, one row per node (an LLC,
//! or a capacity class of one, as the agent formed them) with counts.

use chameleon::report::status::Snapshot;
use crate::top::names::Names;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// What the CPU pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    #[default]
    Grid,
    Nodes,
}

impl View {
    pub fn toggled(self) -> View {
        match self {
            View::Grid => View::Nodes,
            View::Nodes => View::Grid,
        }
    }
}

/// Rows of the history band (borders and two rows of bars).
pub const HISTORY_ROWS: u16 = 4;

/// The screen's panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub cpus: Rect,
    pub history: Option<Rect>,
    pub objects: Rect,
    pub latency: Rect,
    pub log: Rect,
    pub module: Rect,
    pub footer: Rect,
}

/// Split the screen: the CPU pane gets its `cpu_lines` (plus borders) up to a
/// third of the height, so that the objects and the log keep room.
pub fn split(area: Rect, cpu_lines: usize, history: bool) -> Areas {
    let cap = (area.height / 3).max(3);
    let cpu_h = (cpu_lines as u16).saturating_add(2).clamp(3, cap);
    let mut constraints = vec![Constraint::Length(cpu_h)];
    if history {
        constraints.push(Constraint::Length(HISTORY_ROWS));
    }
    constraints.extend([Constraint::Min(6), Constraint::Min(6), Constraint::Length(1), Constraint::Length(1)]);
    let rows = Layout::default().direction(Direction::Vertical).constraints(constraints).split(area);
    let (history, rest) = if history { (Some(rows[1]), &rows[2..]) } else { (None, &rows[1..]) };
    let mid = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(60), Constraint::Percentage(40)])
        .split(rest[0]);
    Areas { cpus: rows[0], history, objects: mid[0], latency: mid[1], log: rest[1], module: rest[2], footer: rest[3] }
}

fn cpu_style(role: &str, online: bool) -> Style {
    match (online, role) {
        (false, _) => Style::default().fg(Color::DarkGray),
        (_, "rep") => Style::default().fg(Color::Black).bg(Color::Green),
        (_, "borrowed") => Style::default().fg(Color::Black).bg(Color::Yellow),
        (_, "idle") => Style::default().fg(Color::DarkGray),
        _ => Style::default(),
    }
}

/// The grid: one cell a CPU, packed into lines of `width` columns without
/// splitting a cell (a wrapped "12:lent>8" would read as two CPUs).
fn grid_lines(s: &Snapshot, width: usize, names: &Names) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let (mut line, mut used) = (Vec::new(), 0);
    for c in &s.cpus {
        let text = match (c.online, c.role.as_str()) {
            (false, _) => format!(" {}:off ", c.cpu),
            (_, "rep") => format!(" {}:rep {} ", c.cpu, names.pid(c.with as i32)),
            (_, "borrowed") => format!(" {}:lent>{} ", c.cpu, c.with),
            (_, "idle") => format!(" {}:idle ", c.cpu),
            _ => format!(" {}:native ", c.cpu),
        };
        let w = text.chars().count();
        if used > 0 && used + w > width {
            lines.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        used += w;
        line.push(Span::styled(text, cpu_style(&c.role, c.online)));
    }
    if !line.is_empty() {
        lines.push(Line::from(line));
    }
    lines
}

/// One node's CPUs by state, and the objects placed on it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeRow {
    /// "node 0", or "other" for CPUs in no node (outside the manager).
    pub name: String,
    pub cpus: Vec<usize>,
    pub rep: usize,
    pub lent: usize,
    pub native: usize,
    pub idle: usize,
    pub offline: usize,
    pub objects: usize,
    /// One character a CPU: R rep, L lent, n native, . idle, x offline.
    pub strip: String,
    /// The owners of those objects: (pid, cgroup id).
    pub owners: Vec<(i32, u64)>,
}

/// The rows of the node view, from the status's nodes and CPU states.
pub fn node_rows(s: &Snapshot) -> Vec<NodeRow> {
    let row = |name: String, cpus: &[usize]| {
        let mut r = NodeRow { name, cpus: cpus.to_vec(), ..Default::default() };
        for &cpu in cpus {
            let st = s.cpus.iter().find(|c| c.cpu == cpu);
            let ch = match st.map(|c| (c.online, c.role.as_str())) {
                None | Some((false, _)) => {
                    r.offline += 1;
                    'x'
                }
                Some((_, "rep")) => {
                    r.rep += 1;
                    'R'
                }
                Some((_, "borrowed")) => {
                    r.lent += 1;
                    'L'
                }
                Some((_, "idle")) => {
                    r.idle += 1;
                    '.'
                }
                Some(_) => {
                    r.native += 1;
                    'n'
                }
            };
            r.strip.push(ch);
        }
        let here: Vec<_> = s.objects.iter().filter(|o| o.cpus.first().is_some_and(|c| cpus.contains(c))).collect();
        r.objects = here.len();
        r.owners = here.iter().map(|o| (o.pid, o.cgroup)).collect();
        r
    };
    let mut rows: Vec<NodeRow> = s.nodes.iter().enumerate().map(|(i, cpus)| row(format!("node {i}"), cpus)).collect();
    let other: Vec<usize> = s.cpus.iter().map(|c| c.cpu).filter(|c| !s.nodes.iter().any(|n| n.contains(c))).collect();
    if !other.is_empty() {
        rows.push(row("other".into(), &other));
    }
    rows
}

fn node_lines(s: &Snapshot, names: &Names) -> Vec<Line<'static>> {
    node_rows(s)
        .into_iter()
        .map(|r| {
            let head = format!(" {:<7} cpus {:<12}", r.name, chameleon::module::park::list(&r.cpus));
            let counts = format!(
                " rep {:<3} lent {:<3} native {:<3} idle {:<3} offline {:<3} objects {:<3} ",
                r.rep, r.lent, r.native, r.idle, r.offline, r.objects
            );
            let busy = if r.rep + r.lent > 0 { Style::default().fg(Color::Green) } else { Style::default() };
            let owners: Vec<String> = r.owners.iter().map(|(pid, cg)| format!("{} {}", names.pid(*pid), names.cgroup(*cg))).collect();
            let owners = if owners.is_empty() { String::new() } else { format!("  {}", owners.join(", ")) };
            Line::from(vec![Span::raw(head), Span::styled(counts, busy), Span::raw(r.strip), Span::raw(owners)])
        })
        .collect()
}

/// The CPU pane's lines in `view` for an inner width of `width`.
pub fn cpu_lines(status: Option<&Snapshot>, view: View, width: u16, names: &Names) -> Vec<Line<'static>> {
    match status {
        None => vec![Line::from(" no status yet")],
        Some(s) => match view {
            View::Grid => grid_lines(s, width as usize, names),
            View::Nodes => node_lines(s, names),
        },
    }
}

/// Draw the CPU pane; `key` is the view toggle, named in the title.
pub fn render_cpus(f: &mut Frame, lines: Vec<Line<'static>>, view: View, key: char, area: Rect) {
    let title = match view {
        View::Grid => format!(" CPUs ({key}: one row per node) "),
        View::Nodes => format!(" nodes ({key}: CPU grid) "),
    };
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
}

#[cfg(test)]
mod tests;
