//! Taking a trace (`scx_chameleon trace -d SECONDS -o FILE`): subscribe to
//! the running agent's event stream for the window and stream what comes
//! through `trace::Writer` into a temporary file next to FILE (buffered,
//! flushed each second and at the end, Ctrl-C included), so memory stays
//! the same however long the trace. The output file is prepared before the
//! window opens, so that a FILE we cannot write is refused at once, not
//! after the wait; it replaces FILE only once complete.

use chameleon::report::event::Event;
use chameleon::report::metrics::clock_ns;
use crate::trace::{self, Fused, Summary, TaskInfo, Window, Writer};
use anyhow::{bail, Context, Result};
use nix::time::ClockId;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

pub const MIN_SECONDS: u64 = 1;
/// An hour. Memory does not depend on it (the trace streams to the file);
/// the file grows with it, some tens of bytes an event.
pub const MAX_SECONDS: u64 = 3600;
/// How often what was written is flushed to the file.
const FLUSH: Duration = Duration::from_secs(1);
/// The file's write buffer.
const WRITE_BUFFER: usize = 64 * 1024;

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
    file: Option<BufWriter<std::fs::File>>,
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
        Ok(Output { path: path.to_path_buf(), tmp, file: Some(BufWriter::with_capacity(WRITE_BUFFER, file)) })
    }

    /// Where the trace is streamed to (the temporary file, buffered).
    pub fn stream(&mut self) -> &mut BufWriter<std::fs::File> {
        self.file.as_mut().expect("not committed yet")
    }

    /// Write `data` after what was streamed, then put the file in place.
    pub fn commit(mut self, data: &[u8]) -> Result<()> {
        let what = || format!("-o {}: writing {}", self.path.display(), self.tmp.display());
        let mut stream = self.file.take().expect("committed once");
        stream.write_all(data).with_context(what)?;
        let file = stream.into_inner().map_err(|e| e.into_error()).with_context(what)?;
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

/// How the recording went (the events themselves went to the file).
#[derive(Debug, Default)]
pub struct Recording {
    pub window: Option<Window>,
    pub summary: Summary,
    /// Bytes and packets written.
    pub bytes: u64,
    pub packets: u64,
    /// Lines that were not an event (a newer agent's schema): skipped.
    pub bad_lines: usize,
    /// Why the window closed before its time, if it did.
    pub cut_short: Option<String>,
    /// The agent wrote its status during the window (it names the objects
    /// fused when the trace began).
    pub status_seen: bool,
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

/// Subscribe and stream the events for `seconds` (less if `stop` is set or
/// the stream ends) into `out`; `status`: the agent's status file.
pub fn record<W: Write>(socket: &Path, status: &Path, seconds: u64, nr_cpus: u32, stop: &AtomicBool, out: W) -> Result<Recording> {
    if !socket.exists() {
        bail!("no scx_chameleon agent is running ({} missing): nothing to trace", socket.display());
    }
    let mut reader = chameleon::control::subscribe(socket).context("subscribing to the agent's events")?;
    let start_ns = clock_ns(ClockId::CLOCK_MONOTONIC);
    let boottime_at_start_ns = clock_ns(ClockId::CLOCK_BOOTTIME);
    let subscribed_at = SystemTime::now();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let writing = || "writing the trace";
    let mut w = Writer::new(out, start_ns, boottime_at_start_ns, nr_cpus).with_context(writing)?;
    let mut rec = Recording::default();
    let mut line = Vec::new();
    let mut status_checked = Instant::now();
    let mut flushed = Instant::now();
    // The status's objects' tasks are named from /proc like the events'.
    let take_status = |w: &mut Writer<W>, fused: Vec<Fused>| {
        for f in &fused {
            if !w.knows_task(f.pid) {
                w.add_task(f.pid, task_info(f.pid));
            }
        }
        w.set_fused(fused);
    };
    loop {
        // Never long away from the stream: a subscriber that lags is dropped.
        if !w.has_fused() && status_checked.elapsed() >= POLL {
            if let Some(fused) = fresh_status(status, subscribed_at) {
                take_status(&mut w, fused);
            }
            status_checked = Instant::now();
        }
        if flushed.elapsed() >= FLUSH {
            w.advance(clock_ns(ClockId::CLOCK_MONOTONIC)).with_context(writing)?;
            w.flush().with_context(writing)?;
            flushed = Instant::now();
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
                        if ev.pid > 0 && !w.knows_task(ev.pid) {
                            w.add_task(ev.pid, task_info(ev.pid));
                        }
                        w.push(ev).with_context(writing)?;
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
    if !w.has_fused() {
        if let Some(fused) = fresh_status(status, subscribed_at) {
            take_status(&mut w, fused);
        }
    }
    rec.status_seen = w.has_fused();
    let (mut out, summary, (bytes, packets)) = w.finish(end_ns).with_context(writing)?;
    out.flush().with_context(writing)?;
    (rec.summary, rec.bytes, rec.packets) = (summary, bytes, packets);
    rec.window = Some(Window { start_ns, end_ns, boottime_at_start_ns, nr_cpus });
    Ok(rec)
}

/// The whole command: prepare FILE, record into it, put it in place.
/// Returns the summary line.
pub fn run(socket: &Path, status: &Path, seconds: u64, out: &Path, nr_cpus: u32, stop: &AtomicBool) -> Result<String> {
    let mut output = Output::create(out)?;
    let rec = record(socket, status, seconds, nr_cpus, stop, output.stream())?;
    output.commit(&[])?;
    Ok(summary_line(out, &rec))
}

fn summary_line(out: &Path, rec: &Recording) -> String {
    let w = rec.window.expect("record sets the window");
    let s = &rec.summary;
    let mut line = format!(
        "wrote {} ({} bytes, {} packets): {}, {} events, {} tasks, {} slices, {} instants",
        out.display(),
        rec.bytes,
        rec.packets,
        crate::top::names::fmt_ns(w.end_ns - w.start_ns),
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
    if s.late > 0 {
        line += &format!("; {} events reported too late for their place (moved up to the last time written)", s.late);
    }
    if !rec.status_seen {
        line += "; the agent's status was not rewritten during the window: an object fused throughout it (no event) is missing";
    }
    if let Some(why) = &rec.cut_short {
        line += &format!("; cut short: {why}");
    }
    line + ". Open it in https://ui.perfetto.dev (Open trace file)."
}
