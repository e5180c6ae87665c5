//! `top` by cgroup: the `/` filter (a cgroup id, or a path and what is
//! below it) and the per-cgroup view (key `c`): one row per tagged cgroup
//! with its path, its tag, its objects and the CPUs they hold, and how much
//! its tasks ran fused and how often they fused over the last window.

use chameleon::report::status::Snapshot;
use crate::top::Model;
use crate::top::names::{fit_path, under, CgroupNames, Names};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Row, Table};
use ratatui::Frame;
use std::time::Instant;

/// What the `/` filter keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// One cgroup, by id.
    Id(u64),
    /// A cgroup path and everything below it ("/work" holds "/work/db").
    Path(String),
}

impl Filter {
    /// What was typed after '/': digits are an id, anything else a path
    /// (relative to the cgroup root; the leading '/' may be left out).
    /// Empty: no filter.
    pub fn parse(text: &str) -> Option<Filter> {
        let t = text.trim();
        if t.is_empty() {
            return None;
        }
        if let Ok(id) = t.parse() {
            return Some(Filter::Id(id));
        }
        let path = if t.starts_with('/') { t.to_string() } else { format!("/{t}") };
        let trimmed = path.trim_end_matches('/');
        Some(Filter::Path(if trimmed.is_empty() { "/".into() } else { trimmed.to_string() }))
    }

    /// Whether cgroup `id` is kept (a path filter keeps only ids whose path
    /// is known).
    pub fn matches(&self, id: u64, names: &CgroupNames) -> bool {
        match self {
            Filter::Id(f) => *f == id,
            Filter::Path(p) => names.get(id).is_some_and(|path| under(path, p)),
        }
    }

    /// The footer's words for it.
    pub fn describe(&self, names: &Names) -> String {
        match self {
            Filter::Id(id) => match names.cgroups.get(*id) {
                Some(p) => format!("cgroup {p} (id {id})"),
                None => format!("cgroup id {id}"),
            },
            Filter::Path(p) => format!("cgroups {p}{}", if p == "/" { "*" } else { "/*" }),
        }
    }
}

/// One field of a stored tag ("v1 level=1 weight=1 tax=1.00 smt=any").
pub fn tag_field<'a>(tag: &'a str, key: &str) -> Option<&'a str> {
    tag.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// One row of the per-cgroup view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupRow {
    pub id: u64,
    pub path: String,
    pub level: String,
    pub weight: String,
    pub tax: String,
    /// Execution objects of its tasks, and the CPUs they hold.
    pub objects: usize,
    pub cpus: usize,
    /// Time its tasks ran fused over the window, in percent of the window
    /// (summed over tasks: two tasks fused throughout are 200%).
    pub fused_pct: u64,
    /// Fuses (whole and partial) of its tasks over the window.
    pub fuses: usize,
}

/// The rows, one per tagged cgroup (those the filter keeps), by path.
pub fn rows(m: &Model, s: &Snapshot, now: Instant) -> Vec<CgroupRow> {
    let mut rows: Vec<CgroupRow> = s
        .tags
        .iter()
        .filter(|(id, _)| m.shown(*id))
        .map(|(id, tag)| {
            let objs: Vec<_> = s.objects.iter().filter(|o| o.cgroup == *id).collect();
            let field = |k| tag_field(tag, k).unwrap_or("-").to_string();
            CgroupRow {
                id: *id,
                path: m.names.cgroup(*id),
                level: field("level"),
                // None stored: the claim follows the cgroup's cpu.weight.
                weight: tag_field(tag, "weight").unwrap_or("cpu").to_string(),
                tax: field("tax"),
                objects: objs.len(),
                cpus: objs.iter().map(|o| o.cpus.len()).sum(),
                fused_pct: m.cgroup_fused_share(*id, now),
                fuses: m.cgroup_fuses(*id, now),
            }
        })
        .collect();
    rows.sort_by(|a, b| a.path.cmp(&b.path).then(a.id.cmp(&b.id)));
    rows
}

/// Draw the per-cgroup view in the objects' place; `key` toggles back.
pub fn render(f: &mut Frame, m: &Model, key: char, area: Rect) {
    let now = Instant::now();
    // What the fixed columns (and the spaces between) leave to the path.
    let path_w = area.width.saturating_sub(2 + 39 + 7).max(8) as usize;
    let table_rows: Vec<Row> = m
        .status
        .as_ref()
        .map(|s| rows(m, s, now))
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            Row::new(vec![
                fit_path(&r.path, path_w),
                r.level,
                r.weight,
                r.tax,
                r.objects.to_string(),
                r.cpus.to_string(),
                format!("{}%", r.fused_pct),
                r.fuses.to_string(),
            ])
        })
        .collect();
    let window = crate::top::names::fmt_ns(crate::top::SHARE_WINDOW.as_nanos() as u64);
    let table = Table::new(
        table_rows,
        [
            Constraint::Min(8),
            Constraint::Length(5),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(7),
            Constraint::Length(4),
            Constraint::Length(6),
            Constraint::Length(6),
        ],
    )
    .header(
        Row::new(vec!["cgroup", "level", "weight", "tax", "objects", "CPUs", "fused", "fuses"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(format!(" tagged cgroups, last {window} ({key}: execution objects) ")));
    f.render_widget(table, area);
}

#[cfg(test)]
mod tests;
