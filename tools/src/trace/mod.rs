//! The event stream over a window as a Perfetto trace (`perfetto.protos.Trace`,
//! what ui.perfetto.dev opens and scxtop writes): borrowing on a timeline.
//!
//! One track per CPU ("cpu N", under a parent track so that they stay in CPU
//! order) carries a slice for each period the CPU is a fused representative
//! ("fused: COMM pid P level L") or lent ("lent to COMM pid P"), an instant
//! for each split (its reason as an annotation) and for hotplug. One thread
//! track per task involved carries its demand / wake / sleep / exit instants
//! and a slice for each period it ran fused.
//!
//! Pure: [`build`] turns events and the window they were taken in into a
//! trace; taking them from the agent and writing the file is
//! `record.rs`. Slices never nest on a track (a track is in one state at
//! a time), so every begin has its end on the same track, in order: a slice
//! still open when the next one begins (a split reported after the fuse that
//! took the CPU over) is ended there, and one open at the end of the window
//! is ended at the end.

pub mod record;

use chameleon::report::event::{split_reason, Event, Kind};
use perfetto_protos::builtin_clock::BuiltinClock;
use perfetto_protos::clock_snapshot::{clock_snapshot::Clock, ClockSnapshot};
use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::thread_descriptor::ThreadDescriptor;
use perfetto_protos::trace::Trace;
use perfetto_protos::trace_packet::{trace_packet::SequenceFlags, TracePacket};
use perfetto_protos::trace_packet_defaults::TracePacketDefaults;
use perfetto_protos::track_descriptor::{track_descriptor::ChildTracksOrdering, TrackDescriptor};
use perfetto_protos::track_event::{track_event::Type, TrackEvent};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// One TrackEvent to be: kept in a list, then sorted by time.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    ts: u64,
    track: u64,
    what: What,
}

/// The slice open on a track: whose object it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Open {
    rep: i32,
}

#[derive(Default)]
struct Builder {
    items: Vec<Item>,
    open: HashMap<u64, Open>,
    summary: Summary,
}

impl Builder {
    /// Start a slice, ending whatever was open on the track first.
    fn begin(&mut self, ts: u64, track: u64, rep: i32, name: String, args: Args) {
        if self.open.remove(&track).is_some() {
            self.items.push(Item { ts, track, what: What::End });
        }
        self.open.insert(track, Open { rep });
        self.items.push(Item { ts, track, what: What::Begin(name, args) });
        self.summary.slices += 1;
    }

    /// End the slice of `rep`'s object on the track, if that is what is open.
    fn end(&mut self, ts: u64, track: u64, rep: i32) {
        match self.open.get(&track) {
            Some(o) if o.rep == rep => {
                self.open.remove(&track);
                self.items.push(Item { ts, track, what: What::End });
            }
            _ => self.summary.unmatched += 1,
        }
    }

    fn instant(&mut self, ts: u64, track: u64, name: String, args: Args) {
        self.items.push(Item { ts, track, what: What::Instant(name, args) });
        self.summary.instants += 1;
    }
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

/// Names of the tasks: the comm the kernel put in the task's own events
/// (the first one in the window), else what /proc said, else "?".
fn task_names(events: &[Event], tasks: &BTreeMap<i32, TaskInfo>) -> HashMap<i32, String> {
    let mut names: HashMap<i32, String> = tasks
        .iter()
        .filter(|(_, t)| !t.comm.trim().is_empty())
        .map(|(&pid, t)| (pid, t.comm.trim().to_string()))
        .collect();
    let mut from_events = BTreeSet::new();
    for ev in events {
        if ev.pid > 0 && !ev.comm.is_empty() && from_events.insert(ev.pid) {
            names.insert(ev.pid, ev.comm.clone());
        }
    }
    names
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

/// Open the slices of an object: on the representative, on each lent CPU
/// and on the owner's own track.
fn open_object(b: &mut Builder, ts: u64, ev: &Event, comm: &str, mut args: Args) {
    let level = level_of(ev);
    b.begin(ts, cpu_track(ev.cpu), ev.cpu, fused_name(comm, ev.pid, level), args.clone());
    for c in lent_cpus(ev) {
        b.begin(ts, cpu_track(c), ev.cpu, lent_name(comm, ev.pid), args.clone());
    }
    if ev.pid > 0 {
        args.retain(|(k, _)| *k != "representative");
        b.begin(ts, task_track(ev.pid), ev.cpu, task_slice_name(ev), args);
    }
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

/// The trace of `events`, taken over `window`. Events may come in any
/// order (a decision is reported when its CPUs are done, stamped with when
/// it was taken); times outside the window are moved to its edge. `fused`:
/// the objects fused when the window opened, as far as the agent's status
/// knows; those with no event in the window were fused throughout.
pub fn build(events: &[Event], window: &Window, tasks: &BTreeMap<i32, TaskInfo>, fused: &[Fused]) -> (Trace, Summary) {
    let (start, end) = (window.start_ns, window.end_ns.max(window.start_ns));
    let clamp = |ts: u64| ts.clamp(start, end);
    let mut sorted: Vec<&Event> = events.iter().collect();
    // Stable: one representative's decisions keep their order at equal times.
    sorted.sort_by_key(|ev| ev.ts_ns);
    let names = task_names(events, tasks);
    let comm = |pid: i32| names.get(&pid).map(String::as_str).unwrap_or("?");
    let mut b = Builder::default();

    // Objects fused before the window: their slices begin at its start.
    for (track, i) in fused_before(&sorted) {
        let ev = sorted[i];
        let name = if track == cpu_track(ev.cpu) {
            fused_name(comm(ev.pid), ev.pid, level_of(ev))
        } else if track == task_track(ev.pid) {
            task_slice_name(ev)
        } else {
            lent_name(comm(ev.pid), ev.pid)
        };
        let args = vec![("fused", Value::Str("before the trace started".into())), ("cpus", Value::Str(cpu_text(&ev.cpus)))];
        b.begin(start, track, ev.cpu, name, args);
    }

    let mut cpus: BTreeSet<i32> = (0..window.nr_cpus as i32).collect();
    let mut pids = BTreeSet::new();
    // Objects fused throughout: the status saw them, no event in the window.
    let reps_with_events: BTreeSet<i32> = sorted.iter().filter(|ev| is_object(ev)).map(|ev| ev.cpu).collect();
    for f in fused.iter().filter(|f| f.rep >= 0 && f.pid > 0 && !reps_with_events.contains(&f.rep)) {
        let ev = synthetic_fuse(f);
        let args = vec![("fused", Value::Str("before the trace started, and throughout".into())), ("cpus", Value::Str(cpu_text(&f.cpus)))];
        open_object(&mut b, start, &ev, comm(f.pid), args);
        cpus.extend(f.cpus.iter().copied().filter(|&c| c >= 0));
        pids.insert(f.pid);
    }
    for ev in &sorted {
        let ts = clamp(ev.ts_ns);
        b.summary.events += 1;
        if ev.cpu >= 0 {
            cpus.insert(ev.cpu);
        }
        cpus.extend(lent_cpus(ev));
        if ev.pid > 0 && !matches!(ev.kind, Kind::CpuOnline | Kind::CpuOffline | Kind::Unknown(_)) {
            pids.insert(ev.pid);
        }
        let task = task_track(ev.pid);
        match ev.kind {
            Kind::Fuse | Kind::PartialFuse if is_object(ev) => {
                let mut args = object_args(ev);
                args.push(("latency_ns", Value::Int(ev.latency_ns as i64)));
                args.push(("superseded", Value::Bool(ev.superseded)));
                open_object(&mut b, ts, ev, comm(ev.pid), args);
            }
            Kind::Split if is_object(ev) => {
                b.end(ts, cpu_track(ev.cpu), ev.cpu);
                for c in lent_cpus(ev) {
                    b.end(ts, cpu_track(c), ev.cpu);
                }
                if ev.pid > 0 {
                    b.end(ts, task, ev.cpu);
                }
                let reason = split_reason(ev.reason);
                let mut args = object_args(ev);
                args.push(("reason", Value::Str(reason.into())));
                args.push(("fused_ns", Value::Int(ev.run_ns as i64)));
                args.push(("latency_ns", Value::Int(ev.latency_ns as i64)));
                args.push(("superseded", Value::Bool(ev.superseded)));
                let name = format!("split ({reason}): {} pid {}", comm(ev.pid), ev.pid);
                b.instant(ts, cpu_track(ev.cpu), name, args);
            }
            Kind::CpuOnline | Kind::CpuOffline if ev.cpu >= 0 => {
                let name = if ev.kind == Kind::CpuOnline { "cpu online" } else { "cpu offline" };
                b.instant(ts, cpu_track(ev.cpu), name.into(), vec![]);
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
                b.instant(ts, task, name, args);
            }
            _ => {
                b.summary.events -= 1;
                b.summary.ignored += 1;
            }
        }
    }
    // Still fused when the window closed: ended there.
    let still_open: Vec<u64> = b.open.keys().copied().collect();
    for track in still_open {
        let rep = b.open[&track].rep;
        b.end(end, track, rep);
    }
    b.summary.tasks = pids.len();
    b.items.sort_by_key(|it| it.ts); // stable: an end stays before the begin at its time

    let mut trace = Trace::new();
    trace.packet.push(defaults_packet());
    trace.packet.push(clock_packet(window));
    trace.packet.push(track_packet(start, root_track()));
    for &c in &cpus {
        trace.packet.push(track_packet(start, cpu_track_descriptor(c)));
    }
    for &pid in &pids {
        let info = tasks.get(&pid);
        trace.packet.push(track_packet(start, task_track_descriptor(pid, comm(pid), info.and_then(|t| t.tgid))));
    }
    for it in b.items {
        trace.packet.push(event_packet(it));
    }
    (trace, b.summary)
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

/// CLOCK and BOOTTIME read together at the window's start; CLOCK is the
/// trace's clock, so times show as taken.
fn clock_packet(window: &Window) -> TracePacket {
    let mut snap = ClockSnapshot::new();
    for (id, ts) in [(CLOCK, window.start_ns), (BuiltinClock::BUILTIN_CLOCK_BOOTTIME, window.boottime_at_start_ns)] {
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

fn event_packet(it: Item) -> TracePacket {
    let mut e = TrackEvent::new();
    e.set_track_uuid(it.track);
    e.categories.push(CATEGORY.into());
    let (kind, name, args) = match it.what {
        What::Begin(n, a) => (Type::TYPE_SLICE_BEGIN, Some(n), a),
        What::End => (Type::TYPE_SLICE_END, None, vec![]),
        What::Instant(n, a) => (Type::TYPE_INSTANT, Some(n), a),
    };
    e.set_type(kind);
    if let Some(n) = name {
        e.set_name(n);
    }
    e.debug_annotations.extend(args.into_iter().map(|(k, v)| annotation(k, v)));
    let mut p = timed_packet(it.ts);
    // It relies on the state the first packet cleared (the default clock).
    p.set_sequence_flags(SequenceFlags::SEQ_NEEDS_INCREMENTAL_STATE as u32);
    p.set_track_event(e);
    p
}

#[cfg(test)]
mod tests;
