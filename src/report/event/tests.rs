use super::*;

fn raw(kind: u32, comm: &[u8]) -> Vec<u8> {
    let mut ev: bpf_intf::chameleon_event = unsafe { std::mem::zeroed() };
    ev.kind = kind;
    ev.cpu = 3;
    ev.pid = 42;
    ev.cgroup_id = 7;
    for (d, s) in ev.comm.iter_mut().zip(comm) {
        *d = *s as _;
    }
    let size = std::mem::size_of_val(&ev);
    let ptr = &ev as *const _ as *const u8;
    unsafe { std::slice::from_raw_parts(ptr, size) }.to_vec()
}

#[test]
fn parses_a_whole_record() {
    let ev = Event::parse(&raw(bpf_intf::chameleon_event_kind_CHAMELEON_EV_CPU_OFFLINE, b"stress-ng\0")).unwrap();
    assert_eq!(ev.kind, Kind::CpuOffline);
    assert_eq!((ev.cpu, ev.pid, ev.cgroup_id), (3, 42, 7));
    assert_eq!(ev.comm, "stress-ng");
    assert_eq!(escape_comm("stress-ng"), "stress-ng");
    assert_eq!(escape_comm("a b=c\nd\\\x1b[2J"), "a\\x20b\\x3dc\\x0ad\\x5c\\x1b[2J");
}

#[test]
fn refuses_a_short_record() {
    let data = raw(1, b"x");
    assert!(Event::parse(&data[..data.len() - 1]).is_none());
}

#[test]
fn split_line_names_reason_and_cpus() {
    let mut data = raw(bpf_intf::chameleon_event_kind_CHAMELEON_EV_SPLIT, b"");
    let ev: &mut bpf_intf::chameleon_event = unsafe { &mut *(data.as_mut_ptr() as *mut _) };
    ev.reason = bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_TICK;
    ev.nr_cpus = 2;
    ev.cpus[0] = 0;
    ev.cpus[1] = 1;
    ev.latency_ns = 1500;
    ev.cost_ns = 900;
    ev.local_ns = 700;
    let line = Event::parse(&data).unwrap().to_string();
    assert!(line.contains("split cpu=3 pid=42 cgroup=7 cpus=0,1 reason=tick"), "{line}");
    assert!(line.contains("latency_ns=1500 cost_ns=900 local_ns=700"), "{line}");
}

#[test]
fn nr_cpus_beyond_the_array_is_clamped() {
    let mut data = raw(bpf_intf::chameleon_event_kind_CHAMELEON_EV_FUSE, b"");
    let ev: &mut bpf_intf::chameleon_event = unsafe { &mut *(data.as_mut_ptr() as *mut _) };
    ev.nr_cpus = 1000;
    assert_eq!(Event::parse(&data).unwrap().cpus.len(), 8);
}

#[test]
fn json_round_trip_keeps_every_field() {
    let mut data = raw(bpf_intf::chameleon_event_kind_CHAMELEON_EV_SPLIT, b"spin");
    let ev: &mut bpf_intf::chameleon_event = unsafe { &mut *(data.as_mut_ptr() as *mut _) };
    ev.nr_cpus = 2;
    ev.cpus[1] = 1;
    ev.latency_ns = 1234;
    ev.local_ns = 56;
    let e = Event::parse(&data).unwrap();
    let json = serde_json::to_string(&e).unwrap();
    assert!(json.contains("\"kind\":\"split\""), "{json}");
    assert!(json.contains("\"latency_ns\":1234"), "{json}");
    assert!(json.contains("\"local_ns\":56"), "{json}");
    assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), e);
}

#[test]
fn keeps_unknown_kinds_visible() {
    let ev = Event::parse(&raw(999, b"")).unwrap();
    assert_eq!(ev.kind, Kind::Unknown(999));
}
