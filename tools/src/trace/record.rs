//! Taking a trace (`scx_chameleon trace -d SECONDS -o FILE`): subscribe to
//! the running agent's event stream for the window, then write what
//! `trace::build` makes of it. The output file is prepared before the
//! window opens, so that a FILE we cannot write is refused at once, not
//! after the wait; it replaces FILE only once complete.

use chameleon::report::event::Event;
use chameleon::report::metrics::clock_ns;
use crate::trace::{self, Fused, Summary, TaskInfo, Window};
use anyhow::{bail, Context, Result};
use nix::time::ClockId;
use protobuf::Message;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

pub const MIN_SECONDS: u64 = 1;
/// An hour: the events are kept in memory until the window closes.
pub const MAX_SECONDS: u64 = 3600;

/// How often the reader looks at the stop flag (Ctrl-C) while the stream is
/// quiet, and at the status file until it has a fresh one.
const POLL: Duration = Duration::from_millis(200);

/// The window's length, whole seconds in MIN_SECONDS..=MAX_SECONDS.
pub fn parse_seconds(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if (MIN_SECONDS..=MAX_SECONDS).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: the trace lasts whole seconds from {MIN_SECONDS} to {MAX_SECONDS}")),
    }
}

/// Where the trace goes: a temporary file next to FILE, created now and
/// renamed over FILE when complete; removed if we never get there (FILE,
/// if it existed, is left as it was).
pub struct Output {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<std::fs::File>,
}

impl Output {
    pub fn create(path: &Path) -> Result<Output> {
        if path.is_dir() {
            bail!("-o {}: is a directory, not a file", path.display());
        }
        let Some(name) = path.file_name() else {
            bail!("-o {}: not a file name", path.display());
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("-o {}: cannot write a file in {}", path.display(), dir.display()))?;
        Ok(Output { path: path.to_path_buf(), tmp, file: Some(file) })
    }

    pub fn commit(mut self, data: &[u8]) -> Result<()> {
        let mut file = self.file.take().expect("committed once");
        let what = || format!("-o {}: writing {}", self.path.display(), self.tmp.display());
        file.write_all(data).with_context(what)?;
        file.sync_all().with_context(what)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)
            .with_context(|| format!("-o {}: renaming {} to it", self.path.display(), self.tmp.display()))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// comm and process of a task, while it is still there to ask.
fn task_info(pid: i32) -> TaskInfo {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim_end().to_string();
    let tgid = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok())));
    TaskInfo { comm, tgid }
}

/// What came through the stream during the window.
#[derive(Debug, Default)]
pub struct Recording {
    pub events: Vec<Event>,
    pub window: Option<Window>,
    pub tasks: BTreeMap<i32, TaskInfo>,
    /// Lines that were not an event (a newer agent's schema): skipped.
    pub bad_lines: usize,
    /// Why the window closed before its time, if it did.
    pub cut_short: Option<String>,
    /// The objects fused in the first status the agent wrote after the
    /// window opened; None: it wrote none in the window.
    pub fused: Option<Vec<Fused>>,
}

/// The agent's status, if it was written after `since` (the agent rewrites
/// it each second): then it says what was fused inside the window, and an
/// object it shows with no event in the window was fused throughout.
fn fresh_status(path: &Path, since: SystemTime) -> Option<Vec<Fused>> {
    let written = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    if written <= since {
        return None;
    }
    let snap = chameleon::report::status::read(path).ok()?;
    Some(trace::fused_from_status(&snap.cpus))
}

/// Subscribe and collect events for `seconds` (less if `stop` is set or
/// the stream ends); `status`: the agent's status file.
pub fn record(socket: &Path, status: &Path, seconds: u64, nr_cpus: u32, stop: &AtomicBool) -> Result<Recording> {
    if !socket.exists() {
        bail!("no scx_chameleon agent is running ({} missing): nothing to trace", socket.display());
    }
    let mut reader = chameleon::control::subscribe(socket).context("subscribing to the agent's events")?;
    let start_ns = clock_ns(ClockId::CLOCK_MONOTONIC);
    let boottime_at_start_ns = clock_ns(ClockId::CLOCK_BOOTTIME);
    let subscribed_at = SystemTime::now();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut rec = Recording::default();
    let mut line = Vec::new();
    let mut status_checked = Instant::now();
    loop {
        // Never long away from the stream: a subscriber that lags is dropped.
        if rec.fused.is_none() && status_checked.elapsed() >= POLL {
            rec.fused = fresh_status(status, subscribed_at);
            status_checked = Instant::now();
        }
        if stop.load(Ordering::Relaxed) {
            rec.cut_short = Some("interrupted".into());
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        reader.get_ref().set_read_timeout(Some(left.min(POLL))).context("setting the read timeout")?;
        // A line cut by the timeout stays in `line` and is completed by the next read.
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => {
                rec.cut_short = Some("the agent closed the stream (it stopped, or dropped us for not keeping up)".into());
                break;
            }
            Ok(_) if line.ends_with(b"\n") => {
                match serde_json::from_slice::<Event>(&line) {
                    Ok(ev) => {
                        if ev.pid > 0 && !rec.tasks.contains_key(&ev.pid) {
                            rec.tasks.insert(ev.pid, task_info(ev.pid));
                        }
                        rec.events.push(ev);
                    }
                    Err(_) => rec.bad_lines += 1,
                }
                line.clear();
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e).context("reading the agent's events"),
        }
    }
    let end_ns = clock_ns(ClockId::CLOCK_MONOTONIC);
    if rec.fused.is_none() {
        rec.fused = fresh_status(status, subscribed_at);
    }
    rec.window = Some(Window { start_ns, end_ns, boottime_at_start_ns, nr_cpus });
    Ok(rec)
}

/// The whole command: prepare FILE, record, convert, write. Returns the
/// summary line.
pub fn run(socket: &Path, status: &Path, seconds: u64, out: &Path, nr_cpus: u32, stop: &AtomicBool) -> Result<String> {
    let output = Output::create(out)?;
    let mut rec = record(socket, status, seconds, nr_cpus, stop)?;
    let window = rec.window.expect("record sets the window");
    for f in rec.fused.iter().flatten() {
        rec.tasks.entry(f.pid).or_insert_with(|| task_info(f.pid));
    }
    let (trace, s) = trace::build(&rec.events, &window, &rec.tasks, rec.fused.as_deref().unwrap_or_default());
    let data = trace.write_to_bytes().context("encoding the trace")?;
    output.commit(&data)?;
    Ok(summary_line(out, &window, &s, data.len(), trace.packet.len(), &rec))
}

fn summary_line(out: &Path, w: &Window, s: &Summary, bytes: usize, packets: usize, rec: &Recording) -> String {
    let secs = (w.end_ns - w.start_ns) as f64 / 1e9;
    let mut line = format!(
        "wrote {} ({bytes} bytes, {packets} packets): {secs:.1} s, {} events, {} tasks, {} slices, {} instants",
        out.display(),
        s.events,
        s.tasks,
        s.slices,
        s.instants
    );
    if s.ignored + rec.bad_lines > 0 {
        line += &format!("; skipped {} of unknown kinds and {} unreadable lines", s.ignored, rec.bad_lines);
    }
    if s.unmatched > 0 {
        line += &format!("; {} slice ends without their begin (events lost?)", s.unmatched);
    }
    if rec.fused.is_none() {
        line += "; the agent's status was not rewritten during the window: an object fused throughout it (no event) is missing";
    }
    if let Some(why) = &rec.cut_short {
        line += &format!("; cut short: {why}");
    }
    line + ". Open it in https://ui.perfetto.dev (Open trace file)."
}
