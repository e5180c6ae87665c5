//! Host tests of the Perfetto conversion: synthetic events in, the bytes
//! parsed back with the protobuf crate, and the trace checked as a reader
//! (the Perfetto UI) would need it.

use super::*;
use crate::trace::record::{parse_seconds, Output};
use protobuf::Message;
use std::collections::HashSet;

const MS: u64 = 1_000_000;
/// The window: 1 s to 2 s on the monotonic clock, 4 CPUs.
const W: Window = Window { start_ns: 1000 * MS, end_ns: 2000 * MS, boottime_at_start_ns: 1500 * MS, nr_cpus: 4 };

fn ev(kind: Kind, ts_ms: u64, cpu: i32, pid: i32) -> Event {
    Event {
        kind,
        cpu,
        pid,
        reason: 0,
        ts_ns: ts_ms * MS,
        cgroup_id: 7,
        latency_ns: 0,
        cost_ns: 0,
        local_ns: 0,
        run_ns: 0,
        fused_ns: 0,
        start_ns: 0,
        level: 0,
        cpus: vec![],
        superseded: false,
        comm: String::new(),
    }
}

fn object(kind: Kind, ts_ms: u64, cpus: &[i32], pid: i32) -> Event {
    let mut e = ev(kind, ts_ms, cpus[0], pid);
    e.cpus = cpus.to_vec();
    e.level = 2;
    e
}

fn split(ts_ms: u64, cpus: &[i32], pid: i32, reason: u32) -> Event {
    let mut e = object(Kind::Split, ts_ms, cpus, pid);
    e.reason = reason;
    e
}

fn task(kind: Kind, ts_ms: u64, cpu: i32, pid: i32, comm: &str) -> Event {
    let mut e = ev(kind, ts_ms, cpu, pid);
    e.comm = comm.into();
    e
}

/// The brief's scene. Task 100 ("spin", level 1) fuses CPUs 2,3 at 1100 ms
/// and splits at 1300 ms (tick); task 200 ("seq") was fused on 0,1 before
/// the window and splits at 1200 ms; task 100 fuses 2,3 again at 1500 ms
/// and is still fused when the window closes. Given in arrival order, not
/// time order (a report waits for its CPUs); CPU 1 goes offline and back.
fn scene() -> Vec<Event> {
    let tick = chameleon::bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_TICK;
    let mut d = task(Kind::Demand, 1050, 2, 100, "spin");
    d.level = 1;
    vec![
        d,
        object(Kind::Fuse, 1100, &[2, 3], 100),
        split(1300, &[2, 3], 100, tick),
        split(1200, &[0, 1], 200, tick),
        task(Kind::Sleep, 1250, 0, 200, "seq"),
        ev(Kind::CpuOffline, 1260, 1, 0),
        ev(Kind::CpuOnline, 1270, 1, 0),
        task(Kind::Wake, 1450, 2, 100, "spin"),
        object(Kind::Fuse, 1500, &[2, 3], 100),
        ev(Kind::Unknown(99), 1600, 0, 0),
    ]
}

fn tasks() -> BTreeMap<i32, TaskInfo> {
    // /proc's view: 200's comm comes from its own events first.
    [(100, TaskInfo { comm: "spin".into(), tgid: Some(100) }), (200, TaskInfo { comm: "other".into(), tgid: None })]
        .into_iter()
        .collect()
}

/// Build, serialize, parse back: the tests look at what a reader gets.
fn round_trip(events: &[Event]) -> (Trace, Summary) {
    round_trip_with(events, &[])
}

fn round_trip_with(events: &[Event], fused: &[Fused]) -> (Trace, Summary) {
    let (trace, summary) = build(events, &W, &tasks(), fused);
    let bytes = trace.write_to_bytes().unwrap();
    (Trace::parse_from_bytes(&bytes).unwrap(), summary)
}

/// track uuid -> name (CPU tracks) or "COMM TID" (task tracks).
fn track_names(t: &Trace) -> HashMap<u64, String> {
    t.packet
        .iter()
        .filter(|p| p.has_track_descriptor())
        .map(|p| {
            let d = p.track_descriptor();
            let name = if d.thread.is_some() {
                format!("{} {}", d.thread.thread_name(), d.thread.tid())
            } else {
                d.name().to_string()
            };
            (d.uuid(), name)
        })
        .collect()
}

/// (timestamp, track name, type, name) of every track event, in packet order.
fn events_of(t: &Trace) -> Vec<(u64, String, Type, String)> {
    let names = track_names(t);
    t.packet
        .iter()
        .filter(|p| p.has_track_event())
        .map(|p| {
            let e = p.track_event();
            let track = names.get(&e.track_uuid()).cloned().unwrap_or_else(|| panic!("event on an undeclared track"));
            (p.timestamp(), track, e.type_(), e.name().to_string())
        })
        .collect()
}

/// Slices per track: (begin ts, end ts, name), checking the pairing on
/// the way: no end without its begin, nothing nested, nothing left open.
fn slices(t: &Trace) -> BTreeMap<String, Vec<(u64, u64, String)>> {
    let mut open: HashMap<String, (u64, String)> = HashMap::new();
    let mut done: BTreeMap<String, Vec<(u64, u64, String)>> = BTreeMap::new();
    for (ts, track, ty, name) in events_of(t) {
        match ty {
            Type::TYPE_SLICE_BEGIN => {
                assert!(open.insert(track.clone(), (ts, name)).is_none(), "{track}: begin inside a slice at {ts}");
            }
            Type::TYPE_SLICE_END => {
                let (b, name) = open.remove(&track).unwrap_or_else(|| panic!("{track}: end without begin at {ts}"));
                assert!(b <= ts, "{track}: slice ends before it begins");
                done.entry(track).or_default().push((b, ts, name));
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "slices left open: {open:?}");
    done
}

#[test]
fn sequence_and_clock_are_as_perfetto_needs() {
    let (t, _) = round_trip(&scene());
    let first = &t.packet[0];
    assert_eq!(first.sequence_flags(), SequenceFlags::SEQ_INCREMENTAL_STATE_CLEARED as u32);
    assert!(first.first_packet_on_sequence());
    assert_eq!(first.trace_packet_defaults.timestamp_clock_id(), CLOCK as u32);
    let mut last = 0;
    for p in &t.packet {
        assert_eq!(p.trusted_packet_sequence_id(), SEQUENCE_ID, "one sequence");
        if p.has_timestamp() {
            assert_eq!(p.timestamp_clock_id(), BuiltinClock::BUILTIN_CLOCK_MONOTONIC as u32);
            assert!(p.timestamp() >= last, "timestamps go back: {} after {last}", p.timestamp());
            last = p.timestamp();
        }
        if p.has_track_event() {
            assert_eq!(p.sequence_flags(), SequenceFlags::SEQ_NEEDS_INCREMENTAL_STATE as u32);
        }
    }
    let snap = t.packet.iter().find(|p| p.has_clock_snapshot()).expect("a clock snapshot").clock_snapshot();
    assert_eq!(snap.primary_trace_clock(), BuiltinClock::BUILTIN_CLOCK_MONOTONIC);
    let clocks: Vec<(u32, u64)> = snap.clocks.iter().map(|c| (c.clock_id(), c.timestamp())).collect();
    assert_eq!(clocks, vec![(3, W.start_ns), (6, W.boottime_at_start_ns)]);
    // The snapshot comes before anything timed on its clock.
    let snap_at = t.packet.iter().position(|p| p.has_clock_snapshot()).unwrap();
    assert!(t.packet[..snap_at].iter().all(|p| !p.has_timestamp()));
}

#[test]
fn one_track_per_cpu_and_per_task() {
    let (t, s) = round_trip(&scene());
    let names = track_names(&t);
    for c in 0..4 {
        assert_eq!(names[&cpu_track(c)], format!("cpu {c}"));
    }
    assert_eq!(names[&task_track(100)], "spin 100");
    assert_eq!(names[&task_track(200)], "seq 200", "the event's comm wins over /proc's");
    let d: Vec<_> = t.packet.iter().filter(|p| p.has_track_descriptor()).map(|p| p.track_descriptor()).collect();
    let uuids: BTreeSet<u64> = d.iter().map(|d| d.uuid()).collect();
    assert_eq!(uuids.len(), d.len(), "track uuids unique");
    let cpu2 = d.iter().find(|d| d.uuid() == cpu_track(2)).unwrap();
    assert_eq!((cpu2.parent_uuid(), cpu2.sibling_order_rank()), (ROOT_TRACK, 2));
    let spin = d.iter().find(|d| d.uuid() == task_track(100)).unwrap();
    assert_eq!((spin.thread.pid(), spin.thread.tid()), (100, 100));
    let seq = d.iter().find(|d| d.uuid() == task_track(200)).unwrap();
    assert_eq!((seq.thread.pid(), seq.thread.tid()), (200, 200), "no tgid known: the pid stands in");
    assert_eq!((s.tasks, s.events, s.ignored, s.unmatched), (2, 9, 1, 0));
}

#[test]
fn fused_and_lent_slices_pair_up_with_their_times() {
    let (t, s) = round_trip(&scene());
    let sl = slices(&t);
    let spans = |track: &str| -> Vec<(u64, u64, String)> { sl.get(track).cloned().unwrap_or_default() };
    // Task 100's first object: fused on 2, 3 lent; then still fused at the end.
    assert_eq!(
        spans("cpu 2"),
        vec![
            (1100 * MS, 1300 * MS, "fused: spin pid 100 level 1".into()),
            (1500 * MS, W.end_ns, "fused: spin pid 100 level 1".into()),
        ]
    );
    assert_eq!(
        spans("cpu 3"),
        vec![(1100 * MS, 1300 * MS, "lent to spin pid 100".into()), (1500 * MS, W.end_ns, "lent to spin pid 100".into())]
    );
    // Task 200 fused before the window: from its start to the split.
    assert_eq!(spans("cpu 0"), vec![(W.start_ns, 1200 * MS, "fused: seq pid 200 level 1".into())]);
    assert_eq!(spans("cpu 1"), vec![(W.start_ns, 1200 * MS, "lent to seq pid 200".into())]);
    // The tasks' own tracks.
    assert_eq!(
        spans("spin 100"),
        vec![
            (1100 * MS, 1300 * MS, "fused on cpus 2,3 (level 1)".into()),
            (1500 * MS, W.end_ns, "fused on cpus 2,3 (level 1)".into()),
        ]
    );
    assert_eq!(spans("seq 200"), vec![(W.start_ns, 1200 * MS, "fused on cpus 0,1 (level 1)".into())]);
    assert_eq!(s.slices, 9);
}

#[test]
fn instants_name_what_happened() {
    let (t, s) = round_trip(&scene());
    let inst: Vec<(u64, String, String)> = events_of(&t)
        .into_iter()
        .filter(|e| e.2 == Type::TYPE_INSTANT)
        .map(|(ts, track, _, name)| (ts / MS, track, name))
        .collect();
    let want = [
        (1050, "spin 100", "demand level 1"),
        (1200, "cpu 0", "split (tick): seq pid 200"),
        (1250, "seq 200", "sleep"),
        (1260, "cpu 1", "cpu offline"),
        (1270, "cpu 1", "cpu online"),
        (1300, "cpu 2", "split (tick): spin pid 100"),
        (1450, "spin 100", "wake"),
    ];
    let want: Vec<(u64, String, String)> = want.iter().map(|(t, k, n)| (*t, k.to_string(), n.to_string())).collect();
    assert_eq!(inst, want);
    assert_eq!(s.instants, 7);
    // The split's reason and the object as annotations.
    let p = t.packet.iter().find(|p| p.has_track_event() && p.track_event().name() == "split (tick): spin pid 100").unwrap();
    let args: HashMap<String, String> = p
        .track_event()
        .debug_annotations
        .iter()
        .map(|a| {
            let v = if a.has_string_value() { a.string_value().to_string() } else { a.int_value().to_string() };
            (a.name().to_string(), v)
        })
        .collect();
    assert_eq!(args["reason"], "tick");
    assert_eq!(args["cpus"], "2,3");
    assert_eq!(p.track_event().categories, vec![CATEGORY.to_string()]);
}

#[test]
fn a_cpu_taken_over_before_its_split_is_reported_ends_its_slice_first() {
    // Task 300 fused 0,1 before the window; its split (at 1200) is stamped
    // after the fuse of task 400 (at 1150) that took CPU 1 over. CPU 1's
    // lent-to-300 slice ends at the takeover; the late split ends nothing there.
    let events = vec![object(Kind::Fuse, 1150, &[2, 1], 400), split(1200, &[0, 1], 300, 0)];
    let (t, s) = round_trip(&events);
    let sl = slices(&t);
    assert_eq!(
        sl["cpu 1"],
        vec![(W.start_ns, 1150 * MS, "lent to ? pid 300".into()), (1150 * MS, W.end_ns, "lent to ? pid 400".into())]
    );
    assert_eq!(sl["cpu 0"], vec![(W.start_ns, 1200 * MS, "fused: ? pid 300 level 1".into())]);
    assert_eq!(s.unmatched, 1);
}

#[test]
fn times_outside_the_window_go_to_its_edges_and_partial_fuses_show_their_size() {
    // Decided just before the window opened, reported inside it.
    let mut early = object(Kind::PartialFuse, 900, &[0, 1], 100);
    early.level = 4; // asked for 4 CPUs, got 2
    let (t, _) = round_trip(&[early, split(2500, &[0, 1], 100, 0)]);
    let sl = slices(&t);
    assert_eq!(sl["cpu 0"], vec![(W.start_ns, W.end_ns, "fused: spin pid 100 level 1".into())]);
    let begin = t.packet.iter().find(|p| p.has_track_event() && p.track_event().type_() == Type::TYPE_SLICE_BEGIN).unwrap();
    let asked = begin.track_event().debug_annotations.iter().find(|a| a.name() == "requested_cpus").unwrap();
    assert_eq!(asked.int_value(), 4);
}

#[test]
fn an_object_fused_throughout_comes_from_the_status() {
    use chameleon::report::status::CpuStatus;
    let cpu = |cpu: usize, role: &str, with: i64| CpuStatus { cpu, online: true, role: role.into(), with, perf: None };
    // CPU 2 runs task 100's object with 3 lent; 0 runs 200's with 1 lent
    // (and 200 splits inside the window, so its events tell its story).
    let status = [cpu(0, "rep", 200), cpu(1, "borrowed", 0), cpu(2, "rep", 100), cpu(3, "borrowed", 2)];
    let fused = fused_from_status(&status);
    assert_eq!(
        fused,
        vec![Fused { rep: 0, pid: 200, cpus: vec![0, 1] }, Fused { rep: 2, pid: 100, cpus: vec![2, 3] }]
    );
    let (t, s) = round_trip_with(&[split(1200, &[0, 1], 200, 0)], &fused);
    let sl = slices(&t);
    assert_eq!(sl["cpu 2"], vec![(W.start_ns, W.end_ns, "fused: spin pid 100 level 1".into())]);
    assert_eq!(sl["cpu 3"], vec![(W.start_ns, W.end_ns, "lent to spin pid 100".into())]);
    assert_eq!(sl["spin 100"], vec![(W.start_ns, W.end_ns, "fused on cpus 2,3 (level 1)".into())]);
    // Not twice: from its split, as before.
    assert_eq!(sl["cpu 0"], vec![(W.start_ns, 1200 * MS, "fused: other pid 200 level 1".into())]);
    assert_eq!((s.slices, s.tasks, s.unmatched), (6, 2, 0));
    // A representative offline, or a CPU lent to nobody fused, makes no object.
    let odd = [CpuStatus { online: false, ..cpu(0, "rep", 5) }, cpu(1, "borrowed", 3), cpu(2, "native", -1)];
    assert!(fused_from_status(&odd).is_empty());
}

#[test]
fn an_object_without_a_representative_is_left_out() {
    let mut bad = object(Kind::Fuse, 1100, &[2, 3], 100);
    bad.cpu = -1;
    let (t, s) = round_trip(&[bad]);
    assert!(events_of(&t).is_empty());
    assert_eq!((s.events, s.ignored), (0, 1));
}

#[test]
fn an_empty_window_still_declares_its_cpus() {
    let (t, s) = round_trip(&[]);
    assert_eq!(track_names(&t).values().filter(|n| n.starts_with("cpu ")).count(), 4);
    assert!(events_of(&t).is_empty());
    assert_eq!(s, Summary::default());
}

#[test]
fn the_window_is_whole_seconds_from_one_to_an_hour() {
    assert_eq!(parse_seconds("1"), Ok(1));
    assert_eq!(parse_seconds("3600"), Ok(3600));
    for bad in ["0", "3601", "-1", "1.5", "", "three"] {
        let e = parse_seconds(bad).unwrap_err();
        assert!(e.contains("from 1 to 3600"), "{bad}: {e}");
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chameleon-trace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_output_replaces_the_file_only_when_complete() {
    let dir = scratch("output");
    let path = dir.join("t.pftrace");
    std::fs::write(&path, b"old").unwrap();
    // Abandoned (an error while recording): the old file stays, no leftovers.
    drop(Output::create(&path).unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    Output::create(&path).unwrap().commit(b"new").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_output_that_cannot_be_written_is_refused_naming_it() {
    let dir = scratch("bad-output");
    let e = Output::create(&dir).err().unwrap().to_string();
    assert!(e.contains("-o") && e.contains("is a directory"), "{e}");
    let missing = dir.join("no/such/dir/t.pftrace");
    let e = format!("{:#}", Output::create(&missing).err().unwrap());
    assert!(e.contains(&format!("-o {}", missing.display())) && e.contains("cannot write"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Read a trace file back packet by packet, the way `Trace` is encoded
/// (field 1, length-delimited, repeated): each record must be a
/// TracePacket; `each` sees them in file order.
fn read_packets(path: &std::path::Path, mut each: impl FnMut(TracePacket)) -> usize {
    let mut file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut is = protobuf::CodedInputStream::from_buf_read(&mut file);
    let mut n = 0;
    while let Some(tag) = is.read_raw_tag_or_eof().unwrap() {
        assert_eq!(tag, 1 << 3 | 2, "a Trace holds only field 1, length-delimited (packet {n})");
        each(is.read_message::<TracePacket>().unwrap());
        n += 1;
    }
    n
}

#[test]
fn a_long_stream_is_written_as_it_comes_in_bounded_memory() {
    const N: u64 = 1_000_000;
    const STEP: u64 = 50_000; // an event every 50 µs: 50 s of events
    let dir = scratch("long");
    let path = dir.join("long.pftrace");
    let file = std::io::BufWriter::with_capacity(64 * 1024, std::fs::File::create(&path).unwrap());
    let mut w = Writer::new(file, W.start_ns, W.boottime_at_start_ns, W.nr_cpus).unwrap();
    w.set_fused(vec![]);
    w.add_task(100, TaskInfo { comm: "spin".into(), tgid: Some(100) });
    let (mut max_pending, mut max_state, mut max_scratch) = (0, 0, 0);
    let mut size_half_way = 0;
    let mut e = object(Kind::Fuse, 0, &[2, 3], 100);
    for i in 0..N {
        // Task 100's object fuses and splits every 100 events; task 200
        // wakes and sleeps in between, each pair reported out of order.
        let ts = W.start_ns + i * STEP;
        e = match i % 100 {
            0 => object(Kind::Fuse, 0, &[2, 3], 100),
            50 => split(0, &[2, 3], 100, 0),
            k if k % 2 == 1 => task(Kind::Sleep, 0, 1, 200, "seq"),
            _ => {
                e.kind = Kind::Wake;
                e
            }
        };
        e.ts_ns = if i % 100 > 50 && i % 2 == 1 { ts + STEP } else if i % 100 > 50 { ts - STEP } else { ts };
        w.push(e.clone()).unwrap();
        if i % 1000 == 0 {
            let (state, scratch) = w.state_size();
            (max_pending, max_state, max_scratch) = (max_pending.max(w.pending()), max_state.max(state), max_scratch.max(scratch));
        }
        if i == N / 2 {
            size_half_way = std::fs::metadata(&path).unwrap().len();
        }
    }
    let end = W.start_ns + N * STEP;
    let (out, s, (bytes, packets)) = w.finish(end).unwrap();
    drop(out);
    // Bounded: the reorder buffer (REORDER_NS of events, at most
    // MAX_PENDING), a packet's buffer, state per track and task.
    assert!(max_pending <= MAX_PENDING && max_pending > 1000, "{max_pending}");
    assert!(max_state <= 16, "per track and task, not per event: {max_state}");
    assert!(max_scratch <= 1024, "one packet at a time: {max_scratch}");
    // Written as it came: half the file was on disk half-way.
    assert!(size_half_way > bytes / 3, "{size_half_way} of {bytes} bytes on disk half-way");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes);
    assert_eq!((s.events, s.unmatched, s.late, s.tasks), (N as usize, 0, 0, 2));
    assert_eq!(s.slices, 3 * N as usize / 100);
    // Read back as a Trace, one packet at a time: valid, in time order,
    // slices paired per track, every track declared before its events.
    let (mut last, mut declared, mut open) = (0, HashSet::new(), HashMap::new());
    let (mut begins, mut ends) = (0, 0);
    let n = read_packets(&path, |p| {
        assert_eq!(p.trusted_packet_sequence_id(), SEQUENCE_ID);
        if p.has_timestamp() {
            assert!(p.timestamp() >= last, "time goes back at {}", p.timestamp());
            last = p.timestamp();
        }
        if p.has_track_descriptor() {
            assert!(declared.insert(p.track_descriptor().uuid()), "declared twice");
        }
        if p.has_track_event() {
            let e = p.track_event();
            assert!(declared.contains(&e.track_uuid()), "event before its track");
            match e.type_() {
                Type::TYPE_SLICE_BEGIN => {
                    begins += 1;
                    assert!(open.insert(e.track_uuid(), ()).is_none(), "nested");
                }
                Type::TYPE_SLICE_END => {
                    ends += 1;
                    assert!(open.remove(&e.track_uuid()).is_some(), "end without begin");
                }
                _ => {}
            }
        }
    });
    assert_eq!(n as u64, packets);
    assert_eq!((begins, ends), (s.slices, s.slices));
    assert!(open.is_empty());
    assert!(last >= W.start_ns + (N - 2) * STEP, "to the last event: {last}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_first_events_wait_for_the_status_a_while() {
    // No status: the events wait in the buffer up to STATUS_WAIT_NS past
    // the start, then go without it.
    let mut w = Writer::new(Vec::new(), W.start_ns, W.boottime_at_start_ns, 4).unwrap();
    w.push(task(Kind::Wake, 1100, 0, 100, "spin")).unwrap();
    w.advance(W.start_ns + STATUS_WAIT_NS - 1).unwrap();
    assert_eq!(w.pending(), 1, "waits for the status");
    // It comes: task 100 was fused on 2,3 with no event yet.
    w.set_fused(vec![Fused { rep: 2, pid: 100, cpus: vec![2, 3] }]);
    w.advance(W.start_ns + STATUS_WAIT_NS).unwrap();
    assert_eq!(w.pending(), 0);
    let (bytes, s, _) = w.finish(W.end_ns).unwrap();
    let t = Trace::parse_from_bytes(&bytes).unwrap();
    assert_eq!(slices(&t)["cpu 2"], vec![(W.start_ns, W.end_ns, "fused: spin pid 100 level 1".into())]);
    assert_eq!((s.slices, s.instants), (3, 1));
    // Never: after STATUS_WAIT_NS the events go, and a late status is not used.
    let mut w = Writer::new(Vec::new(), W.start_ns, W.boottime_at_start_ns, 4).unwrap();
    w.push(task(Kind::Wake, 1100, 0, 100, "spin")).unwrap();
    w.advance(W.start_ns + STATUS_WAIT_NS + REORDER_NS - 1).unwrap();
    assert_eq!(w.pending(), 1, "the wait is for what leaves the reorder buffer");
    w.advance(W.start_ns + STATUS_WAIT_NS + REORDER_NS).unwrap();
    assert_eq!(w.pending(), 0);
    w.set_fused(vec![Fused { rep: 2, pid: 100, cpus: vec![2, 3] }]);
    let (_, s, _) = w.finish(W.end_ns).unwrap();
    assert_eq!((s.slices, s.instants), (0, 1));
}

#[test]
fn the_stream_parses_as_one_trace_and_late_events_move_up() {
    // Two events written before a third, reported after the reorder window
    // and stamped before them: it is moved up to the last time written.
    let mut w = Writer::new(Vec::new(), W.start_ns, W.boottime_at_start_ns, 2).unwrap();
    assert!(!w.has_fused());
    w.set_fused(vec![]);
    w.push(task(Kind::Wake, 1100, 0, 100, "spin")).unwrap();
    w.push(task(Kind::Sleep, 1100 + REORDER_NS / MS + 10, 0, 100, "spin")).unwrap();
    assert_eq!(w.pending(), 1, "the first left the buffer");
    assert!(w.has_fused(), "the status stays seen once the trace began");
    w.push(task(Kind::Wake, 1050, 0, 100, "spin")).unwrap();
    w.advance(W.start_ns + 10 * REORDER_NS).unwrap();
    assert_eq!(w.pending(), 0, "a quiet stream drains with time");
    let (bytes, s, (len, packets)) = w.finish(W.start_ns + 20 * REORDER_NS).unwrap();
    assert_eq!((bytes.len() as u64, s.late, s.instants), (len, 1, 3));
    let t = Trace::parse_from_bytes(&bytes).unwrap();
    assert_eq!(t.packet.len() as u64, packets);
    let times: Vec<u64> = events_of(&t).iter().map(|e| e.0 / MS).collect();
    assert_eq!(times, vec![1100, 1100, 1100 + REORDER_NS / MS + 10]);
}
