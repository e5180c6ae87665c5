//! `scx_chameleon top`: watch borrowing live. The model (what is shown) and
//! the rendering are plain functions so that they are tested with ratatui's
//! TestBackend; `run` wires them to the terminal, the agent's event stream,
//! its status file (the view) and its scx_stats socket (the counters) on a
//! tokio runtime. The history band is history.rs,
//! the panes and the CPU views layout.rs, the keys keys.rs, the event pane
//! events.rs, the filter and the per-cgroup view cgroups.rs, and the names
//! shown for ids (cgroup paths, comms) and times (human units) names.rs.

pub mod cgroups;
pub mod events;
pub mod history;
pub mod keys;
pub mod layout;
pub mod names;

use chameleon::report::event::{Event, Kind};
use chameleon::report::metrics::Metrics;
use chameleon::report::status::Snapshot;
use crate::top::cgroups::Filter;
use crate::top::history::History;
use crate::top::keys::KeyMap;
use crate::top::layout::View;
use crate::top::names::{fit_path, fmt_ns, Names};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

const LOG_LINES: usize = 500;
const LATENCIES: usize = 2000;
/// Histogram buckets of fuse latency, upper bounds in µs (the last is open).
const BUCKETS_US: [u64; 7] = [10, 100, 1_000, 5_000, 10_000, 100_000, u64::MAX];
/// Window of the fused share shown per object (and fuses per cgroup).
pub const SHARE_WINDOW: Duration = Duration::from_secs(5);

/// Everything the screen shows.
#[derive(Debug, Default)]
pub struct Model {
    pub connected: bool,
    pub paused: bool,
    pub show_help: bool,
    /// Only events and objects of these cgroups.
    pub filter: Option<Filter>,
    /// Text typed after '/', until Enter.
    pub filter_input: Option<String>,
    pub status: Option<Snapshot>,
    /// The counters as the scx_stats socket last served them (None: not
    /// read, or the agent is gone).
    pub metrics: Option<Metrics>,
    pub log: VecDeque<Event>,
    pub fuse_latency_us: VecDeque<u64>,
    /// (when, kind) of recent fuses and splits, for rates.
    recent: VecDeque<(Instant, Kind)>,
    /// (when, pid, fused ns, cgroup) of recent splits: each closes a fused interval.
    fused: VecDeque<(Instant, i32, u64, u64)>,
    /// Objects fused now, since when (the interval their next split closes), and their cgroup.
    fused_since: std::collections::HashMap<i32, (Instant, u64)>,
    /// (when, cgroup) of the fuses in the last SHARE_WINDOW.
    fuses: VecDeque<(Instant, u64)>,
    /// Cgroup paths and comms for the ids and pids shown.
    pub names: Names,
    /// The per-cgroup view in the objects' place.
    pub show_cgroups: bool,
    pub keys: KeyMap,
    /// Per-CPU grid or one row per node.
    pub view: View,
    pub hide_history: bool,
    pub history: History,
    /// A problem with the key file, shown until a key is pressed.
    pub notice: Option<String>,
}

impl Model {
    pub fn on_event(&mut self, ev: Event, now: Instant) {
        self.names.comms.learn(ev.pid, &ev.comm, now);
        self.names.comms.resolve(ev.pid, now);
        self.names.cgroups.resolve(ev.cgroup_id, now);
        if matches!(ev.kind, Kind::Fuse | Kind::PartialFuse | Kind::Split) {
            self.recent.push_back((now, ev.kind));
            if matches!(ev.kind, Kind::Fuse | Kind::PartialFuse) && !ev.superseded {
                self.fuse_latency_us.push_back(ev.latency_ns / 1000);
                if self.fuse_latency_us.len() > LATENCIES {
                    self.fuse_latency_us.pop_front();
                }
            }
        }
        match ev.kind {
            Kind::Split => {
                self.fused.push_back((now, ev.pid, ev.run_ns, ev.cgroup_id));
                self.fused_since.remove(&ev.pid);
            }
            Kind::Fuse | Kind::PartialFuse => {
                self.fused_since.entry(ev.pid).or_insert((now, ev.cgroup_id));
                self.fuses.push_back((now, ev.cgroup_id));
            }
            _ => {}
        }
        while self.recent.front().is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(1)) {
            self.recent.pop_front();
        }
        while self.fused.front().is_some_and(|(t, ..)| now.duration_since(*t) > SHARE_WINDOW) {
            self.fused.pop_front();
        }
        while self.fuses.front().is_some_and(|(t, _)| now.duration_since(*t) > SHARE_WINDOW) {
            self.fuses.pop_front();
        }
        if !self.paused {
            self.log.push_back(ev);
            if self.log.len() > LOG_LINES {
                self.log.pop_front();
            }
        }
    }

    /// Share of the last SHARE_WINDOW that `pid` ran fused, in percent (from
    /// the fused time its splits report).
    pub fn fused_share(&self, pid: i32, now: Instant) -> u64 {
        let closed: u64 = self.fused.iter().filter(|(_, p, ..)| *p == pid).map(|(_, _, n, _)| n).sum();
        let open = self.fused_since.get(&pid).map_or(0, |(t, _)| Self::open_ns(*t, now));
        ((closed + open) * 100 / SHARE_WINDOW.as_nanos() as u64).min(100)
    }

    fn open_ns(since: Instant, now: Instant) -> u64 {
        now.saturating_duration_since(since).min(SHARE_WINDOW).as_nanos() as u64
    }

    /// Time the tasks of `cgroup` ran fused over the last SHARE_WINDOW, in
    /// percent of it, summed over its tasks (each at most 100%).
    pub fn cgroup_fused_share(&self, cgroup: u64, now: Instant) -> u64 {
        let mut per_pid: std::collections::HashMap<i32, u64> = std::collections::HashMap::new();
        for (_, pid, ns, cg) in &self.fused {
            if *cg == cgroup {
                *per_pid.entry(*pid).or_default() += ns;
            }
        }
        for (pid, (t, cg)) in &self.fused_since {
            if *cg == cgroup {
                *per_pid.entry(*pid).or_default() += Self::open_ns(*t, now);
            }
        }
        let window = SHARE_WINDOW.as_nanos() as u64;
        per_pid.values().map(|ns| (ns * 100 / window).min(100)).sum()
    }

    /// Fuses of the tasks of `cgroup` over the last SHARE_WINDOW.
    pub fn cgroup_fuses(&self, cgroup: u64, now: Instant) -> usize {
        self.fuses.iter().filter(|(t, cg)| *cg == cgroup && now.saturating_duration_since(*t) <= SHARE_WINDOW).count()
    }

    /// Fuses and splits in the second before `now` (what arrived earlier is
    /// dropped only when the next event comes: a quiet stream must read 0).
    pub fn rates_at(&self, now: Instant) -> (usize, usize) {
        let last: Vec<Kind> =
            self.recent.iter().filter(|(t, _)| now.saturating_duration_since(*t) <= Duration::from_secs(1)).map(|(_, k)| *k).collect();
        let fuse = last.iter().filter(|k| **k != Kind::Split).count();
        (fuse, last.len() - fuse)
    }

    pub fn rates(&self) -> (usize, usize) {
        self.rates_at(Instant::now())
    }

    /// On every screen tick: the history's sample for this second (none
    /// while no scheduler is connected).
    pub fn tick(&mut self, now: Instant) {
        self.resolve_status_names(now);
        let status = if self.connected { self.status.as_ref() } else { None };
        let sample = crate::top::history::sample(status, self.rates_at(now).0 as u64);
        self.history.record(now, sample);
    }

    /// Names for the ids and pids the status shows (cached: cheap when known).
    fn resolve_status_names(&mut self, now: Instant) {
        let Some(s) = &self.status else { return };
        for o in &s.objects {
            self.names.cgroups.resolve(o.cgroup, now);
            self.names.comms.resolve(o.pid, now);
        }
        for (id, _) in &s.tags {
            self.names.cgroups.resolve(*id, now);
        }
        for (pid, ..) in &s.requesters {
            self.names.comms.resolve(*pid, now);
        }
        for c in s.cpus.iter().filter(|c| c.role == "rep" && c.with > 0) {
            self.names.comms.resolve(c.with as i32, now);
        }
    }

    /// p50 and p99 of the recent fuse latencies, in µs.
    pub fn percentiles(&self) -> Option<(u64, u64)> {
        if self.fuse_latency_us.is_empty() {
            return None;
        }
        let mut v: Vec<u64> = self.fuse_latency_us.iter().copied().collect();
        v.sort_unstable();
        let at = |p: usize| v[((v.len() * p).div_ceil(100)).clamp(1, v.len()) - 1];
        Some((at(50), at(99)))
    }

    /// A key was pressed; returns false to quit.
    pub fn on_key(&mut self, c: char) -> bool {
        self.notice = None;
        // Ctrl-C quits whatever the key file says.
        if c == '\x03' {
            return false;
        }
        if let Some(input) = &mut self.filter_input {
            match c {
                '\n' => {
                    self.filter = Filter::parse(input);
                    self.filter_input = None;
                }
                '\x1b' => self.filter_input = None,
                '\x08' => {
                    input.pop();
                }
                c if !c.is_control() && input.len() < 256 => input.push(c),
                _ => {}
            }
            return true;
        }
        let k = &self.keys;
        if c == k.quit {
            return false;
        } else if c == k.pause {
            self.paused = !self.paused;
        } else if c == k.help {
            self.show_help = !self.show_help;
        } else if c == k.filter {
            self.filter_input = Some(String::new());
        } else if c == k.view {
            self.view = self.view.toggled();
        } else if c == k.history {
            self.hide_history = !self.hide_history;
        } else if c == k.cgroups {
            self.show_cgroups = !self.show_cgroups;
        } else if c == '\x1b' {
            self.filter = None;
        }
        true
    }

    /// Whether the filter keeps `cgroup`.
    pub fn shown(&self, cgroup: u64) -> bool {
        self.filter.as_ref().is_none_or(|f| f.matches(cgroup, &self.names.cgroups))
    }
}

/// Draw the whole screen.
pub fn render(f: &mut Frame, m: &Model) {
    let area = f.area();
    let cpu_lines = crate::top::layout::cpu_lines(m.status.as_ref(), m.view, area.width.saturating_sub(2), &m.names);
    let a = crate::top::layout::split(area, cpu_lines.len(), !m.hide_history);
    crate::top::layout::render_cpus(f, cpu_lines, m.view, m.keys.view, a.cpus);
    if let Some(h) = a.history {
        crate::top::history::render(f, &m.history, h);
    }
    if m.show_cgroups {
        crate::top::cgroups::render(f, m, m.keys.cgroups, a.objects);
    } else {
        render_objects(f, m, a.objects);
    }
    render_histogram(f, m, a.latency);
    crate::top::events::render(f, m, a.log);
    f.render_widget(Paragraph::new(module_line(m.status.as_ref(), m.metrics.as_ref())), a.module);
    render_footer(f, m, a.footer);
    if m.show_help {
        let k = &m.keys;
        let mut lines = vec![
            Line::from(format!("{} quit   {} pause the log   {} filter: cgroup path (and below) or id, Enter", k.quit, k.pause, k.filter)),
            Line::from(format!("Esc clear the filter   {} this help", k.help)),
            Line::from(format!("{} CPU grid / one row per node   {} history on/off", k.view, k.history)),
            Line::from(format!("{} execution objects / one row per tagged cgroup (fused: % of the window", k.cgroups)),
            Line::from("  its tasks ran fused, summed over tasks; fuses: how many in the window)"),
            Line::from("CPU grid: rep = runs a fused object, lent = borrowed by it"),
            Line::from("nodes: R rep, L lent, n native, . idle, x offline"),
        ];
        let path = crate::top::keys::default_path().map_or("~/.config/scx_chameleon/top.toml".into(), |p| p.display().to_string());
        lines.push(Line::from(format!("keys from [keys] in {path}")));
        let help = Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" help "));
        let area = Rect { x: 2, y: 2, width: area.width.saturating_sub(4).min(84), height: 10.min(area.height.saturating_sub(2)) };
        f.render_widget(ratatui::widgets::Clear, area);
        f.render_widget(help, area);
    }
}

fn render_objects(f: &mut Frame, m: &Model, area: Rect) {
    let mut rows = Vec::new();
    // What the fixed columns leave to the cgroup's path.
    let path_w = area.width.saturating_sub(2 + 16 + 5 + 10 + 6 + 5 + 5 + 6).max(10) as usize;
    if let Some(s) = &m.status {
        for (pid, level, weight) in &s.requesters {
            let obj = s.objects.iter().find(|o| o.pid == *pid);
            let cgroup = obj.map_or(0, |o| o.cgroup);
            if obj.is_some() && !m.shown(cgroup) {
                continue;
            }
            let granted = obj.map_or("native".to_string(), |o| format!("{} {:?}", o.cpus.len(), o.cpus));
            // An automatic tax: this task's, marked.
            let tax = match s.auto_tax.iter().find(|a| a.pid == *pid) {
                Some(a) => format!("{}*", chameleon::tags::tag::tax_text(a.tax)),
                None => s.tags.iter().find(|(id, _)| *id == cgroup).map_or("-".to_string(), |(_, t)| {
                    t.split_whitespace().find_map(|w| w.strip_prefix("tax=")).unwrap_or("-").to_string()
                }),
            };
            let path = if obj.is_some() { m.names.cgroup(cgroup) } else { "-".into() };
            rows.push(Row::new(vec![
                m.names.pid(*pid),
                fit_path(&path, path_w),
                format!("{}", 1u32 << level),
                granted,
                weight.to_string(),
                tax,
                format!("{}%", m.fused_share(*pid, Instant::now())),
            ]));
        }
    }
    let table = Table::new(
        rows,
        [
            Constraint::Length(16),
            Constraint::Min(10),
            Constraint::Length(5),
            Constraint::Length(10),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(5),
        ],
    )
    .header(Row::new(vec!["pid (comm)", "cgroup", "wants", "granted", "weight", "tax", "fused"]).style(Style::default().add_modifier(Modifier::BOLD)))
    .block(Block::default().borders(Borders::ALL).title(format!(" execution objects ({}: per cgroup) ", m.keys.cgroups)));
    f.render_widget(table, area);
}

fn render_histogram(f: &mut Frame, m: &Model, area: Rect) {
    let mut counts = [0usize; BUCKETS_US.len()];
    for &us in &m.fuse_latency_us {
        let i = BUCKETS_US.iter().position(|&b| us <= b).unwrap_or(BUCKETS_US.len() - 1);
        counts[i] += 1;
    }
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let width = area.width.saturating_sub(16) as usize;
    let mut lines: Vec<Line> = BUCKETS_US
        .iter()
        .zip(counts)
        .map(|(&b, n)| {
            // The bounds are round: "≤10 µs", "≤5 ms" read better than fmt_ns's "≤5.00 ms".
            let label = if b == u64::MAX { ">100 ms".to_string() } else if b >= 1000 { format!("≤{} ms", b / 1000) } else { format!("≤{b} µs") };
            Line::from(format!("{label:>7} {:<w$} {n}", "#".repeat(n * width / max), w = width))
        })
        .collect();
    lines.push(match m.percentiles() {
        Some((p50, p99)) => {
            Line::from(format!("p50 {}  p99 {}  n={}", fmt_ns(p50 * 1000), fmt_ns(p99 * 1000), m.fuse_latency_us.len()))
        }
        None => Line::from("p50 -  p99 -  (no fuse yet)"),
    });
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" fuse latency ")), area);
}

/// The companion module's line: which CPU is lent to which representative
/// (processor proxies, from the status) and the interruptions lent CPUs
/// still took (from the metrics).
fn module_line(status: Option<&Snapshot>, metrics: Option<&Metrics>) -> String {
    let Some(s) = status else { return String::new() };
    let Some(md) = &s.module else {
        return " module: not loaded (no processor proxies: lent CPUs keep their IRQs)".into();
    };
    if !md.kfuncs {
        return " module: loaded after the scheduler, kfuncs not bound (no processor proxies)".into();
    }
    let proxies: Vec<String> = md.proxies.iter().map(|(c, r)| format!("{c}>{r}")).collect();
    let mut line = format!(" proxies: {}", if proxies.is_empty() { "none".to_string() } else { proxies.join(" ") });
    match metrics {
        Some(c) => {
            line += &format!(
                "  lends {} reclaims {}  IRQs moved {}  while lent: irq {} softirq {} ipi {} timer {}",
                c.proxy_lends,
                c.proxy_reclaims,
                c.proxy_irqs_moved,
                c.proxy_lent_irqs,
                c.proxy_lent_softirqs,
                c.proxy_lent_ipis,
                c.proxy_lent_timers
            )
        }
        None => line += "  (counters unavailable)",
    }
    if !s.parked.is_empty() {
        line += &format!("  parked {:?}", s.parked);
    }
    if let Some(e) = &md.emulate {
        line += &format!("  emulate {e}");
    }
    line
}

fn render_footer(f: &mut Frame, m: &Model, area: Rect) {
    let (fuse, split) = m.rates();
    let proxy = m.metrics.as_ref().map_or("-".to_string(), |c| c.proxy_served.to_string());
    let state = if m.connected { Span::styled("connected", Style::default().fg(Color::Green)) } else {
        Span::styled("DISCONNECTED: scheduler not running, retrying", Style::default().fg(Color::Red))
    };
    let filter = match (&m.filter_input, &m.filter) {
        (Some(i), _) => format!("  filter (cgroup path or id): {i}_"),
        (None, Some(f)) => format!("  filter: {}", f.describe(&m.names)),
        _ => String::new(),
    };
    let line = match &m.notice {
        Some(n) => Line::from(vec![state, Span::styled(format!("  {n}"), Style::default().fg(Color::Red))]),
        None => Line::from(vec![
            state,
            Span::raw(format!(
                "  fuse/s {fuse}  split/s {split}  kernel work on lent CPUs {proxy}{filter}  {} help  {} quit",
                m.keys.help, m.keys.quit
            )),
        ]),
    };
    f.render_widget(Paragraph::new(line), area);
}

/// Retry delay after the n-th failed attempt to reach the agent.
pub fn reconnect_delay(attempt: u32) -> Duration {
    Duration::from_millis((250u64 << attempt.min(3)).min(2000))
}

enum Msg {
    Event(Box<Event>),
    /// The counters just fetched (None: the socket did not answer).
    Metrics(Option<Box<Metrics>>),
    Connected,
    Disconnected,
    Key(char),
    Redraw,
}

impl Model {
    /// Apply one message; false when it asks to quit.
    fn on_msg(&mut self, msg: Msg, now: Instant) -> bool {
        match msg {
            Msg::Event(ev) => self.on_event(*ev, now),
            Msg::Metrics(m) => self.metrics = m.map(|m| *m),
            Msg::Connected => self.connected = true,
            Msg::Disconnected => {
                self.connected = false;
                self.status = None;
            }
            Msg::Key(c) => return self.on_key(c),
            Msg::Redraw => {}
        }
        true
    }
}

/// Follow the agent's event stream, reconnecting whenever it goes away.
fn follow_events(socket: std::path::PathBuf, tx: tokio::sync::mpsc::UnboundedSender<Msg>) {
    use std::io::BufRead;
    let mut attempt = 0;
    loop {
        if let Ok(reader) = chameleon::control::subscribe(&socket) {
            attempt = 0;
            if tx.send(Msg::Connected).is_err() {
                return;
            }
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if let Ok(ev) = serde_json::from_str::<Event>(&line) {
                    if tx.send(Msg::Event(Box::new(ev))).is_err() {
                        return;
                    }
                }
            }
        }
        attempt += 1;
        if tx.send(Msg::Disconnected).is_err() {
            return;
        }
        std::thread::sleep(reconnect_delay(attempt));
    }
}

/// Fetch the counters from the scx_stats socket each second, as often as the
/// agent publishes them. A thread of its own: a stuck agent holds it (for
/// up to the timeout), not the screen.
fn follow_metrics(tx: tokio::sync::mpsc::UnboundedSender<Msg>) {
    loop {
        let m = chameleon::report::metrics::fetch_within(Some(Duration::from_secs(1))).ok();
        if tx.send(Msg::Metrics(m.map(Box::new))).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Turn terminal input into keys for the model.
fn read_keys(tx: tokio::sync::mpsc::UnboundedSender<Msg>) {
    use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
    loop {
        if !event::poll(Duration::from_millis(200)).unwrap_or(false) {
            continue;
        }
        let msg = match event::read() {
            Ok(TermEvent::Key(k)) if k.kind == KeyEventKind::Press => match k.code {
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Msg::Key('\x03'),
                KeyCode::Char(c) => Msg::Key(c),
                KeyCode::Enter => Msg::Key('\n'),
                KeyCode::Esc => Msg::Key('\x1b'),
                KeyCode::Backspace => Msg::Key('\x08'),
                _ => continue,
            },
            Ok(TermEvent::Resize(..)) => Msg::Redraw,
            Ok(_) => continue,
            Err(_) => return,
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// Run the TUI until q (or SIGINT/SIGTERM); the terminal is restored on
/// every way out, panics included (ratatui::init installs the hook). Keys
/// come from `config` (default: keys::default_path()).
pub fn run(socket: &std::path::Path, status_path: &std::path::Path, config: Option<&std::path::Path>) -> anyhow::Result<()> {
    let (keys, notice) = match (config, crate::top::keys::default_path()) {
        (Some(p), _) => crate::top::keys::load(p, true),
        (None, Some(p)) => crate::top::keys::load(&p, false),
        (None, None) => (KeyMap::default(), None),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    {
        let (tx, socket) = (tx.clone(), socket.to_path_buf());
        std::thread::spawn(move || follow_events(socket, tx));
    }
    {
        let tx = tx.clone();
        std::thread::spawn(move || follow_metrics(tx));
    }
    std::thread::spawn(move || read_keys(tx));
    let mut terminal = ratatui::init();
    let result: anyhow::Result<()> = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut m = Model { keys, notice: notice.clone(), names: Names::host(), ..Default::default() };
        loop {
            tokio::select! {
                msg = rx.recv() => {
                    let Some(msg) = msg else { return Ok(()) };
                    // Take everything queued before drawing once: a draw per
                    // event falls behind a busy stream (and a slow terminal),
                    // and the screen would then show the past.
                    let mut batch = vec![msg];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                    }
                    if !batch.into_iter().all(|msg| m.on_msg(msg, Instant::now())) {
                        return Ok(());
                    }
                }
                _ = tick.tick() => {
                    if m.connected {
                        m.status = chameleon::report::status::read(status_path).ok();
                    }
                    m.tick(Instant::now());
                }
                _ = term.recv() => return Ok(()),
                _ = int.recv() => return Ok(()),
            }
            terminal.draw(|f| render(f, &m))?;
        }
    });
    ratatui::restore();
    // Said on the screen too, but that is gone now: keep it in the scrollback.
    if let Some(n) = notice {
        eprintln!("scx_chameleon top: {n}");
    }
    result
}

#[cfg(test)]
mod tests;
