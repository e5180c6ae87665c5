//! The event stream as a Perfetto trace (`perfetto.protos.Trace`, what
//! ui.perfetto.dev opens and scxtop writes): borrowing on a timeline.
//!
//! One track per CPU ("cpu N", under a parent track so that they stay in CPU
//! order) carries a slice for each period the CPU is a fused representative
//! ("fused: COMM pid P level L") or lent ("lent to COMM pid P"), an instant
//! for each split (its reason as an annotation) and for hotplug. One thread
//! track per task involved carries its demand / wake / sleep / exit instants
//! and a slice for each period it ran fused.
//!
//! Streamed: a trace file is a `Trace` message whose only field is
//! `repeated TracePacket packet = 1`, so it is written as a run of
//! length-delimited field-1 records, packet by packet as the events come
//! ([`Writer`]); memory does not grow with the trace's length. Events come
//! slightly out of order (a decision is reported when its CPUs are done,
//! stamped with when it was taken): they wait in a small reorder buffer
//! (REORDER_NS of event time, at most MAX_PENDING events) and leave it in
//! time order, so timestamps in the file never go back (one reported later
//! still is moved up to the last time written, and counted). A track is
//! declared the first time it is needed, just before its first event; a
//! task's name is the comm of its first event seen by then, else /proc's.
//!
//! Slices never nest on a track (a track is in one state at a time), so
//! every begin has its end on the same track, in order: a slice still open
//! when the next one begins (a split reported after the fuse that took the
//! CPU over) is ended there, and one open at the end is ended at the end.
//! Objects fused before the trace began are found from the first events
//! (a split of an object whose fuse was never seen) and from the agent's
//! status (objects fused with no event yet): their slices start at the
//! trace's start. [`build`] does the whole thing in memory for tests.

pub mod record;

use chameleon::report::event::{split_reason, Event, Kind};
use perfetto_protos::builtin_clock::BuiltinClock;
use perfetto_protos::clock_snapshot::{clock_snapshot::Clock, ClockSnapshot};
use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::thread_descriptor::ThreadDescriptor;
#[cfg(test)]
use perfetto_protos::trace::Trace;
use perfetto_protos::trace_packet::{trace_packet::SequenceFlags, TracePacket};
use perfetto_protos::trace_packet_defaults::TracePacketDefaults;
use perfetto_protos::track_descriptor::{track_descriptor::ChildTracksOrdering, TrackDescriptor};
use perfetto_protos::track_event::{track_event::Type, TrackEvent};
use protobuf::Message;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet};
use std::io::{self, Write};

/// Every packet is ours and comes from one writer: one sequence. Any
/// non-zero id will do for a file nobody merges with a live session.
pub const SEQUENCE_ID: u32 = 1;
/// bpf_ktime_get_ns() reads CLOCK_MONOTONIC: the events' clock, and so the
/// trace's (Perfetto's default is BOOTTIME; the snapshot relates the two).
pub const CLOCK: BuiltinClock = BuiltinClock::BUILTIN_CLOCK_MONOTONIC;
pub const CATEGORY: &str = "scx_chameleon";

/// Track uuids: any unique non-zero u64. The kind lives in the high word so
/// that a CPU and a pid with the same number never collide.
const ROOT_TRACK: u64 = 1;
fn cpu_track(cpu: i32) -> u64 {
    1 << 32 | cpu as u32 as u64
}
fn task_track(pid: i32) -> u64 {
    2 << 32 | pid as u32 as u64
}

/// What the trace covers, on the events' clock (CLOCK_MONOTONIC ns), and a
/// CLOCK_BOOTTIME reading taken together with `start_ns` for the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    pub boottime_at_start_ns: u64,
    /// CPUs 0..nr_cpus get a track even if nothing happened on them.
    pub nr_cpus: u32,
}

/// What /proc said about a task seen in the events (they name a task only
/// in its own events; a fuse carries just the pid).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskInfo {
    pub comm: String,
    /// Its process, for the thread track; None: unknown (gone), the pid is used.
    pub tgid: Option<i32>,
}

/// An object the agent's status showed fused shortly after the window
/// opened. One that neither splits nor fuses during the window sends no
/// event: without this it would not be on the timeline at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fused {
    pub rep: i32,
    pub pid: i32,
    /// Representative first, then the CPUs lent to it.
    pub cpus: Vec<i32>,
}

/// The fused objects in the status file's CPU roles: a "rep" CPU runs the
/// object of task `with`; a "borrowed" one is lent to representative `with`.
pub fn fused_from_status(cpus: &[chameleon::report::status::CpuStatus]) -> Vec<Fused> {
    cpus.iter()
        .filter(|c| c.online && c.role == "rep" && c.with > 0)
        .map(|r| {
            let rep = r.cpu as i32;
            let mut all = vec![rep];
            all.extend(cpus.iter().filter(|c| c.role == "borrowed" && c.with == rep as i64).map(|c| c.cpu as i32));
            Fused { rep, pid: r.with as i32, cpus: all }
        })
        .collect()
}

/// What went into the trace, for the command's summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub events: usize,
    /// Events of a kind this agent does not know (a newer policy).
    pub ignored: usize,
    pub slices: usize,
    pub instants: usize,
    pub tasks: usize,
    /// Slice ends with nothing of theirs open on the track (an event lost
    /// to a full ring buffer in between); left out.
    pub unmatched: usize,
    /// Events that came after the reorder buffer had written later times:
    /// moved up to the last time written.
    pub late: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
}

type Args = Vec<(&'static str, Value)>;

#[derive(Debug, Clone, PartialEq)]
enum What {
    Begin(String, Args),
    End,
    Instant(String, Args),
}

/// The CPUs of an object event other than its representative (the lent ones).
fn lent_cpus(ev: &Event) -> impl Iterator<Item = i32> + '_ {
    ev.cpus.iter().copied().filter(move |&c| c >= 0 && c != ev.cpu)
}

fn cpu_text(cpus: &[i32]) -> String {
    cpus.iter().filter(|&&c| c >= 0).map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// Object level from its size (2^level CPUs): what the object is, fused in full or in part.
fn level_of(ev: &Event) -> u32 {
    ev.cpus.iter().filter(|&&c| c >= 0).count().max(1).ilog2()
}

/// A fuse or split with a representative (the policy always names one; a
/// record without is left out rather than drawn on a track nobody declared).
fn is_object(ev: &Event) -> bool {
    matches!(ev.kind, Kind::Fuse | Kind::PartialFuse | Kind::Split) && ev.cpu >= 0
}

/// The fuse an object fused throughout the window would have sent.
fn synthetic_fuse(f: &Fused) -> Event {
    Event {
        kind: Kind::Fuse,
        cpu: f.rep,
        pid: f.pid,
        reason: 0,
        ts_ns: 0,
        cgroup_id: 0,
        latency_ns: 0,
        cost_ns: 0,
        local_ns: 0,
        run_ns: 0,
        fused_ns: 0,
        start_ns: 0,
        level: f.cpus.len() as u32,
        cpus: f.cpus.clone(),
        superseded: false,
        comm: String::new(),
    }
}

/// The two slice names, as people read them on the timeline.
fn fused_name(comm: &str, pid: i32, level: u32) -> String {
    format!("fused: {comm} pid {pid} level {level}")
}
fn lent_name(comm: &str, pid: i32) -> String {
    format!("lent to {comm} pid {pid}")
}
fn task_slice_name(ev: &Event) -> String {
    format!("fused on cpus {} (level {})", cpu_text(&ev.cpus), level_of(ev))
}

fn object_args(ev: &Event) -> Args {
    let mut args = vec![
        ("kind", Value::Str(ev.kind.name().into())),
        ("cpus", Value::Str(cpu_text(&ev.cpus))),
        ("representative", Value::Int(ev.cpu as i64)),
        ("cgroup_id", Value::Int(ev.cgroup_id as i64)),
    ];
    if ev.kind != Kind::Split {
        args.push(("requested_cpus", Value::Int(ev.level as i64)));
    }
    args
}

/// Tracks that were in an object when the window opened: a split of the
/// object's representative came before any fuse of it touching the track.
/// Their slices start at the window's start. (Per representative, not per
/// track: another object's fuse may be stamped before the split that freed
/// the CPU for it, see `Builder::begin`.) Returns (track, index of the split).
fn fused_before(events: &[&Event]) -> Vec<(u64, usize)> {
    let mut seen = BTreeSet::new();
    let mut first: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, ev) in events.iter().enumerate().filter(|(_, ev)| is_object(ev)) {
        let mut tracks = vec![cpu_track(ev.cpu)];
        tracks.extend(lent_cpus(ev).map(cpu_track));
        if ev.pid > 0 {
            tracks.push(task_track(ev.pid));
        }
        for t in tracks {
            if seen.insert((t, ev.cpu)) && ev.kind == Kind::Split {
                // The earliest such split: a track is in one object at a time.
                first.entry(t).or_insert(i);
            }
        }
    }
    first.into_iter().collect()
}

/// How far back in event time the reorder buffer waits for a late report
/// (a fuse is reported when its CPUs are done: milliseconds, rarely more).
pub const REORDER_NS: u64 = 1_000_000_000;
/// Events the reorder buffer holds at most, whatever the rate: past it the
/// oldest is written at once.
pub const MAX_PENDING: usize = 16_384;
/// The first events wait for the agent's status (which says what was
/// fused when the trace began) until the reorder buffer's horizon is this
/// far past the start (so some 4 s), then are written without it.
pub const STATUS_WAIT_NS: u64 = 3_000_000_000;

/// The slice open on a track: whose object it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Open {
    rep: i32,
}

/// An event waiting in the reorder buffer: by time, then arrival.
struct Pending {
    ts: u64,
    seq: u64,
    ev: Event,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.ts, self.seq) == (o.ts, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.ts, self.seq).cmp(&(o.ts, o.seq))
    }
}

/// Writes a trace to `out` as the events come. Its state is per track and
/// per task (open slices, declared tracks, names), never per event, apart
/// from the bounded reorder buffer.
pub struct Writer<W: Write> {
    out: W,
    /// One packet's encoding, reused.
    scratch: Vec<u8>,
    start: u64,
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    /// The latest event time seen, and the last time written.
    newest: u64,
    last: u64,
    started: bool,
    /// The objects the agent's status showed fused (None: not yet read,
    /// or used when the trace began).
    fused: Option<Vec<Fused>>,
    /// A status was given (set_fused).
    status_given: bool,
    open: HashMap<u64, Open>,
    declared: HashSet<u64>,
    /// Tasks with an event (the summary's count).
    pids: HashSet<i32>,
    /// comm from a task's own event (first seen), and what /proc said.
    comms: HashMap<i32, String>,
    tasks: HashMap<i32, TaskInfo>,
    summary: Summary,
    bytes: u64,
    packets: u64,
}

impl<W: Write> Writer<W> {
    /// Start the trace: the sequence's defaults, the clock snapshot taken at
    /// `start_ns`, and the tracks of CPUs 0..nr_cpus.
    pub fn new(out: W, start_ns: u64, boottime_at_start_ns: u64, nr_cpus: u32) -> io::Result<Self> {
        let mut w = Writer {
            out,
            scratch: Vec::new(),
            start: start_ns,
            pending: BinaryHeap::new(),
            seq: 0,
            newest: start_ns,
            last: start_ns,
            started: false,
            fused: None,
            status_given: false,
            open: HashMap::new(),
            declared: HashSet::new(),
            pids: HashSet::new(),
            comms: HashMap::new(),
            tasks: HashMap::new(),
            summary: Summary::default(),
            bytes: 0,
            packets: 0,
        };
        w.write(&defaults_packet())?;
        w.write(&clock_packet(start_ns, boottime_at_start_ns))?;
        w.write(&track_packet(start_ns, root_track()))?;
        w.declared.insert(ROOT_TRACK);
        for c in 0..nr_cpus as i32 {
            w.declare_cpu(start_ns, c)?;
        }
        Ok(w)
    }

    /// What the agent's status said was fused just after the trace began
    /// (used if it comes before the first events are written).
    pub fn set_fused(&mut self, fused: Vec<Fused>) {
        if !self.started && !self.status_given {
            self.fused = Some(fused);
        }
        self.status_given = true;
    }

    /// Whether set_fused was called (even after the trace began, too late
    /// to be used: the first events then told what was fused).
    pub fn has_fused(&self) -> bool {
        self.status_given
    }

    /// What /proc says of a task (its thread track's process and a name
    /// if its events give none).
    pub fn add_task(&mut self, pid: i32, info: TaskInfo) {
        self.tasks.insert(pid, info);
    }

    pub fn knows_task(&self, pid: i32) -> bool {
        self.tasks.contains_key(&pid)
    }

    /// Take one event; what is old enough leaves the reorder buffer.
    pub fn push(&mut self, ev: Event) -> io::Result<()> {
        if ev.pid > 0 && !ev.comm.is_empty() && !self.comms.contains_key(&ev.pid) {
            self.comms.insert(ev.pid, ev.comm.clone());
        }
        let ts = ev.ts_ns;
        self.newest = self.newest.max(ts);
        self.seq += 1;
        self.pending.push(Reverse(Pending { ts, seq: self.seq, ev }));
        if self.pending.len() > MAX_PENDING {
            self.begin_trace()?;
            self.write_next(u64::MAX)?;
        }
        self.drain(self.newest.saturating_sub(REORDER_NS))
    }

    /// The time is `now_ns` (events' clock): write what is older than the
    /// reorder window, even if no event came since.
    pub fn advance(&mut self, now_ns: u64) -> io::Result<()> {
        self.drain(now_ns.max(self.newest).saturating_sub(REORDER_NS))
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Events waiting in the reorder buffer.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Entries of the per-track and per-task state (tests: bounded by
    /// tracks and tasks, not by events) and the packet buffer's capacity.
    #[cfg(test)]
    pub fn state_size(&self) -> (usize, usize) {
        let n = self.open.len() + self.declared.len() + self.pids.len() + self.comms.len() + self.tasks.len();
        (n, self.scratch.capacity())
    }



    /// End the trace at `end_ns`: everything still buffered is written
    /// (times past the end moved to it), slices still open end there.
    /// Returns the output, the summary and (bytes, packets) written.
    pub fn finish(mut self, end_ns: u64) -> io::Result<(W, Summary, (u64, u64))> {
        self.begin_trace()?;
        let end = end_ns.max(self.last);
        while !self.pending.is_empty() {
            self.write_next(end)?;
        }
        let mut still_open: Vec<(u64, i32)> = self.open.iter().map(|(t, o)| (*t, o.rep)).collect();
        still_open.sort_unstable();
        for (track, rep) in still_open {
            self.end(end, track, rep)?;
        }
        self.summary.tasks = self.pids.len();
        self.out.flush()?;
        Ok((self.out, self.summary, (self.bytes, self.packets)))
    }

    fn drain(&mut self, horizon: u64) -> io::Result<()> {
        if self.pending.peek().is_none_or(|p| p.0.ts > horizon) {
            return Ok(());
        }
        if !self.started {
            // Wait for the status a while: it names objects fused before the trace.
            if !self.status_given && horizon < self.start.saturating_add(STATUS_WAIT_NS) {
                return Ok(());
            }
            self.begin_trace()?;
        }
        while self.pending.peek().is_some_and(|p| p.0.ts <= horizon) {
            self.write_next(u64::MAX)?;
        }
        Ok(())
    }

    /// Once, before the first event is written: the objects fused when the
    /// trace began, from the events buffered so far and the status.
    fn begin_trace(&mut self) -> io::Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let start = self.start;
        let mut sorted: Vec<&Pending> = self.pending.iter().map(|r| &r.0).collect();
        sorted.sort();
        let sorted: Vec<Event> = sorted.into_iter().map(|p| p.ev.clone()).collect();
        let refs: Vec<&Event> = sorted.iter().collect();
        for (track, i) in fused_before(&refs) {
            let ev = refs[i];
            let name = if track == cpu_track(ev.cpu) {
                fused_name(self.comm(ev.pid), ev.pid, level_of(ev))
            } else if track == task_track(ev.pid) {
                task_slice_name(ev)
            } else {
                lent_name(self.comm(ev.pid), ev.pid)
            };
            let args = vec![("fused", Value::Str("before the trace started".into())), ("cpus", Value::Str(cpu_text(&ev.cpus)))];
            self.begin(start, track, ev.cpu, ev.pid, name, args)?;
        }
        // Fused with no event yet: from the status.
        let reps_with_events: BTreeSet<i32> = refs.iter().filter(|ev| is_object(ev)).map(|ev| ev.cpu).collect();
        for f in self.fused.take().unwrap_or_default() {
            if f.rep < 0 || f.pid <= 0 || reps_with_events.contains(&f.rep) {
                continue;
            }
            let ev = synthetic_fuse(&f);
            let args = vec![("fused", Value::Str("before the trace started".into())), ("cpus", Value::Str(cpu_text(&f.cpus)))];
            self.open_object(start, &ev, args)?;
            self.pids.insert(f.pid);
        }
        Ok(())
    }

    /// Write the oldest buffered event, at a time no later than `cap`.
    fn write_next(&mut self, cap: u64) -> io::Result<()> {
        let Some(Reverse(p)) = self.pending.pop() else { return Ok(()) };
        if p.ts < self.last && p.ts >= self.start {
            self.summary.late += 1;
        }
        let ts = p.ts.max(self.last).min(cap.max(self.last));
        self.last = ts;
        self.event(ts, &p.ev)
    }

    fn comm(&self, pid: i32) -> &str {
        self.comms
            .get(&pid)
            .map(String::as_str)
            .or_else(|| self.tasks.get(&pid).map(|t| t.comm.trim()).filter(|c| !c.is_empty()))
            .unwrap_or("?")
    }

    fn write(&mut self, p: &TracePacket) -> io::Result<()> {
        self.scratch.clear();
        p.write_to_vec(&mut self.scratch).map_err(io::Error::other)?;
        // Field 1 (Trace.packet), wire type 2 (length-delimited): tag 0x0a,
        // then the length as a varint.
        let mut head = [0u8; 11];
        head[0] = 0x0a;
        let mut n = 1;
        let mut len = self.scratch.len() as u64;
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            head[n] = if len == 0 { byte } else { byte | 0x80 };
            n += 1;
            if len == 0 {
                break;
            }
        }
        self.out.write_all(&head[..n])?;
        self.out.write_all(&self.scratch)?;
        self.bytes += (n + self.scratch.len()) as u64;
        self.packets += 1;
        Ok(())
    }

    fn declare_cpu(&mut self, ts: u64, cpu: i32) -> io::Result<()> {
        if self.declared.insert(cpu_track(cpu)) {
            self.write(&track_packet(ts, cpu_track_descriptor(cpu)))?;
        }
        Ok(())
    }

    /// Declare `track` (a CPU's, or task `pid`'s) if this is its first use.
    fn declare(&mut self, ts: u64, track: u64, pid: i32) -> io::Result<()> {
        if self.declared.contains(&track) {
            return Ok(());
        }
        if track >> 32 == 1 {
            return self.declare_cpu(ts, track as u32 as i32);
        }
        self.declared.insert(track);
        let tgid = self.tasks.get(&pid).and_then(|t| t.tgid);
        let desc = task_track_descriptor(pid, self.comm(pid), tgid);
        self.write(&track_packet(ts, desc))
    }

    fn emit(&mut self, ts: u64, track: u64, pid: i32, what: What) -> io::Result<()> {
        self.declare(ts, track, pid)?;
        self.write(&event_packet(ts, track, what))
    }

    /// Start a slice, ending whatever was open on the track first.
    fn begin(&mut self, ts: u64, track: u64, rep: i32, pid: i32, name: String, args: Args) -> io::Result<()> {
        if self.open.remove(&track).is_some() {
            self.emit(ts, track, pid, What::End)?;
        }
        self.open.insert(track, Open { rep });
        self.summary.slices += 1;
        self.emit(ts, track, pid, What::Begin(name, args))
    }

    /// End the slice of `rep`'s object on the track, if that is what is open.
    fn end(&mut self, ts: u64, track: u64, rep: i32) -> io::Result<()> {
        match self.open.get(&track) {
            Some(o) if o.rep == rep => {
                self.open.remove(&track);
                // Open: declared already.
                self.write(&event_packet(ts, track, What::End))
            }
            _ => {
                self.summary.unmatched += 1;
                Ok(())
            }
        }
    }

    fn instant(&mut self, ts: u64, track: u64, pid: i32, name: String, args: Args) -> io::Result<()> {
        self.summary.instants += 1;
        self.emit(ts, track, pid, What::Instant(name, args))
    }

    /// Open the slices of an object: on the representative, on each lent
    /// CPU and on the owner's own track.
    fn open_object(&mut self, ts: u64, ev: &Event, mut args: Args) -> io::Result<()> {
        let level = level_of(ev);
        let comm = self.comm(ev.pid).to_string();
        self.begin(ts, cpu_track(ev.cpu), ev.cpu, ev.pid, fused_name(&comm, ev.pid, level), args.clone())?;
        for c in lent_cpus(ev) {
            self.begin(ts, cpu_track(c), ev.cpu, ev.pid, lent_name(&comm, ev.pid), args.clone())?;
        }
        if ev.pid > 0 {
            args.retain(|(k, _)| *k != "representative");
            self.begin(ts, task_track(ev.pid), ev.cpu, ev.pid, task_slice_name(ev), args)?;
        }
        Ok(())
    }

    /// One event, in time order, at `ts`.
    fn event(&mut self, ts: u64, ev: &Event) -> io::Result<()> {
        self.summary.events += 1;
        if ev.pid > 0 && !matches!(ev.kind, Kind::CpuOnline | Kind::CpuOffline | Kind::Unknown(_)) {
            self.pids.insert(ev.pid);
        }
        let task = task_track(ev.pid);
        match ev.kind {
            Kind::Fuse | Kind::PartialFuse if is_object(ev) => {
                let mut args = object_args(ev);
                args.push(("latency_ns", Value::Int(ev.latency_ns as i64)));
                args.push(("superseded", Value::Bool(ev.superseded)));
                self.open_object(ts, ev, args)?;
            }
            Kind::Split if is_object(ev) => {
                self.end(ts, cpu_track(ev.cpu), ev.cpu)?;
                for c in lent_cpus(ev) {
                    self.end(ts, cpu_track(c), ev.cpu)?;
                }
                if ev.pid > 0 {
                    self.end(ts, task, ev.cpu)?;
                }
                let reason = split_reason(ev.reason);
                let mut args = object_args(ev);
                args.push(("reason", Value::Str(reason.into())));
                args.push(("fused_ns", Value::Int(ev.run_ns as i64)));
                args.push(("latency_ns", Value::Int(ev.latency_ns as i64)));
                args.push(("superseded", Value::Bool(ev.superseded)));
                let name = format!("split ({reason}): {} pid {}", self.comm(ev.pid), ev.pid);
                self.instant(ts, cpu_track(ev.cpu), ev.pid, name, args)?;
            }
            Kind::CpuOnline | Kind::CpuOffline if ev.cpu >= 0 => {
                let name = if ev.kind == Kind::CpuOnline { "cpu online" } else { "cpu offline" };
                self.instant(ts, cpu_track(ev.cpu), 0, name.into(), vec![])?;
            }
            Kind::Demand | Kind::Wake | Kind::Sleep | Kind::TaskExit if ev.pid > 0 => {
                let mut args = vec![("cpu", Value::Int(ev.cpu as i64)), ("cgroup_id", Value::Int(ev.cgroup_id as i64))];
                let name = match ev.kind {
                    Kind::Demand if ev.level == 0 => "demand withdrawn".to_string(),
                    Kind::Demand => format!("demand level {}", ev.level),
                    Kind::TaskExit => {
                        args.push(("run_ns", Value::Int(ev.run_ns as i64)));
                        args.push(("fused_ns", Value::Int(ev.fused_ns as i64)));
                        "exit".to_string()
                    }
                    k => k.name().to_string(),
                };
                self.instant(ts, task, ev.pid, name, args)?;
            }
            _ => {
                self.summary.events -= 1;
                self.summary.ignored += 1;
            }
        }
        Ok(())
    }
}

/// The trace of `events`, taken over `window`, in memory (the tests' way
/// in; the command streams with [`Writer`]). Events may come in any order;
/// times outside the window are moved to its edge. `fused`: the objects
/// fused when the window opened, as far as the agent's status knows; those
/// with no event in the window were fused throughout.
#[cfg(test)]
pub fn build(events: &[Event], window: &Window, tasks: &BTreeMap<i32, TaskInfo>, fused: &[Fused]) -> (Trace, Summary) {
    let (start, end) = (window.start_ns, window.end_ns.max(window.start_ns));
    let mut w = Writer::new(Vec::new(), start, window.boottime_at_start_ns, window.nr_cpus).expect("writing to memory");
    for (&pid, info) in tasks {
        w.add_task(pid, info.clone());
    }
    w.set_fused(fused.to_vec());
    for ev in events {
        let mut ev = ev.clone();
        ev.ts_ns = ev.ts_ns.clamp(start, end);
        w.push(ev).expect("writing to memory");
    }
    let (bytes, summary, _) = w.finish(end).expect("writing to memory");
    (Trace::parse_from_bytes(&bytes).expect("a trace we wrote parses"), summary)
}

fn packet() -> TracePacket {
    let mut p = TracePacket::new();
    p.set_trusted_packet_sequence_id(SEQUENCE_ID);
    p
}

/// First on the sequence: clears its incremental state (which the track
/// events below then need) and makes CLOCK the default timestamp clock.
fn defaults_packet() -> TracePacket {
    let mut p = packet();
    p.set_sequence_flags(SequenceFlags::SEQ_INCREMENTAL_STATE_CLEARED as u32);
    p.set_first_packet_on_sequence(true);
    let mut d = TracePacketDefaults::new();
    d.set_timestamp_clock_id(CLOCK as u32);
    p.trace_packet_defaults = Some(d).into();
    p
}

/// CLOCK and BOOTTIME read together at the trace's start; CLOCK is the
/// trace's clock, so times show as taken.
fn clock_packet(start_ns: u64, boottime_at_start_ns: u64) -> TracePacket {
    let mut snap = ClockSnapshot::new();
    for (id, ts) in [(CLOCK, start_ns), (BuiltinClock::BUILTIN_CLOCK_BOOTTIME, boottime_at_start_ns)] {
        let mut c = Clock::new();
        c.set_clock_id(id as u32);
        c.set_timestamp(ts);
        snap.clocks.push(c);
    }
    snap.set_primary_trace_clock(CLOCK);
    let mut p = packet();
    p.set_clock_snapshot(snap);
    p
}

fn timed_packet(ts: u64) -> TracePacket {
    let mut p = packet();
    p.set_timestamp(ts);
    p.set_timestamp_clock_id(CLOCK as u32);
    p
}

fn track_packet(ts: u64, desc: TrackDescriptor) -> TracePacket {
    let mut p = timed_packet(ts);
    p.set_track_descriptor(desc);
    p
}

fn root_track() -> TrackDescriptor {
    let mut d = TrackDescriptor::new();
    d.set_uuid(ROOT_TRACK);
    d.set_name("scx_chameleon CPUs".into());
    // Children by rank (CPU number): by name, "cpu 10" would come before "cpu 2".
    d.set_child_ordering(ChildTracksOrdering::EXPLICIT);
    d
}

fn cpu_track_descriptor(cpu: i32) -> TrackDescriptor {
    let mut d = TrackDescriptor::new();
    d.set_uuid(cpu_track(cpu));
    d.set_parent_uuid(ROOT_TRACK);
    d.set_name(format!("cpu {cpu}"));
    d.set_sibling_order_rank(cpu);
    d
}

fn task_track_descriptor(pid: i32, comm: &str, tgid: Option<i32>) -> TrackDescriptor {
    let mut t = ThreadDescriptor::new();
    t.set_pid(tgid.unwrap_or(pid));
    t.set_tid(pid);
    t.set_thread_name(comm.to_string());
    let mut d = TrackDescriptor::new();
    d.set_uuid(task_track(pid));
    d.thread = Some(t).into();
    d
}

fn annotation(name: &str, v: Value) -> DebugAnnotation {
    let mut a = DebugAnnotation::new();
    a.set_name(name.to_string());
    match v {
        Value::Str(s) => a.set_string_value(s),
        Value::Int(i) => a.set_int_value(i),
        Value::Bool(x) => a.set_bool_value(x),
    }
    a
}

fn event_packet(ts: u64, track: u64, what: What) -> TracePacket {
    let mut e = TrackEvent::new();
    e.set_track_uuid(track);
    e.categories.push(CATEGORY.into());
    let (kind, name, args) = match what {
        What::Begin(n, a) => (Type::TYPE_SLICE_BEGIN, Some(n), a),
        What::End => (Type::TYPE_SLICE_END, None, vec![]),
        What::Instant(n, a) => (Type::TYPE_INSTANT, Some(n), a),
    };
    e.set_type(kind);
    if let Some(n) = name {
        e.set_name(n);
    }
    e.debug_annotations.extend(args.into_iter().map(|(k, v)| annotation(k, v)));
    let mut p = timed_packet(ts);
    // It relies on the state the first packet cleared (the default clock).
    p.set_sequence_flags(SequenceFlags::SEQ_NEEDS_INCREMENTAL_STATE as u32);
    p.set_track_event(e);
    p
}

#[cfg(test)]
mod tests;
