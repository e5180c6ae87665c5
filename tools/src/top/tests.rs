use super::*;
use chameleon::report::status::{CpuStatus, ObjectStatus};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn screen(m: &Model) -> String {
    let mut t = Terminal::new(TestBackend::new(110, 30)).unwrap();
    t.draw(|f| render(f, m)).unwrap();
    let buf = t.backend().buffer().clone();
    let w = buf.area.width as usize;
    let cells: Vec<&str> = buf.content().iter().map(|c| c.symbol()).collect();
    cells.chunks(w).map(|r| r.concat()).collect::<Vec<_>>().join("\n")
}

fn event(kind: Kind, latency_us: u64) -> Event {
    Event {
        kind,
        cpu: 0,
        pid: 141,
        reason: 1,
        ts_ns: 0,
        cgroup_id: 28,
        latency_ns: latency_us * 1000,
        cost_ns: 2000,
        local_ns: 1000,
        run_ns: 0,
        fused_ns: 0,
        level: 2,
        cpus: vec![0, 1],
        superseded: false,
        comm: String::new(),
    }
}

fn fused_model() -> Model {
    let cpu = |cpu, role: &str, with| CpuStatus { cpu, online: true, role: role.into(), with, perf: None };
    let mut m = Model {
        connected: true,
        status: Some(Snapshot {
            agent_pid: 1,
            written_at: 0,
            objects: vec![ObjectStatus { pid: 141, cgroup: 28, cpus: vec![0, 1], gen: 1 }],
            requesters: vec![(141, 1, 1)],
            nodes: vec![vec![0, 1, 2, 3]],
            manager_online: vec![0, 1, 2, 3],
            defrag_moves: 0,
            cpus: vec![cpu(0, "rep", 141), cpu(1, "borrowed", 0), cpu(2, "native", -1), cpu(3, "idle", -1)],
            tags: vec![(28, "v1 level=1 weight=1 tax=1.00 smt=any".into())],
            counters: None,
            parked: vec![],
            module: None,
            auto_tax: vec![],
            run_id: None,
        }),
        ..Default::default()
    };
    let now = Instant::now();
    for us in [3000, 4000, 5000] {
        m.on_event(event(Kind::Fuse, us), now);
    }
    let mut split = event(Kind::Split, 4000);
    split.run_ns = 2_500_000_000; // fused 2.5 s of the 5 s window
    m.on_event(split, now);
    m
}

#[test]
fn shows_the_modules_proxies_and_interruptions() {
    let mut m = fused_model();
    assert!(screen(&m).contains("module: not loaded"), "{}", screen(&m));
    let st = m.status.as_mut().unwrap();
    st.module = Some(chameleon::report::status::ModuleStatus {
        kfuncs: true,
        lends: 40,
        reclaims: 39,
        irqs_moved: 1,
        proxies: vec![(1, 0)],
        lent_irqs: 5,
        lent_softirqs: 6,
        lent_ipis: 7,
        lent_timers: 8,
        emulate: Some("high".into()),
        ..Default::default()
    });
    let s = screen(&m);
    assert!(s.contains("proxies: 1>0  lends 40 reclaims 39  IRQs moved 1"), "{s}");
    assert!(s.contains("while lent: irq 5 softirq 6 ipi 7 timer 8"), "{s}");
    assert!(s.contains("emulate high"), "{s}");
    m.status.as_mut().unwrap().module.as_mut().unwrap().kfuncs = false;
    assert!(screen(&m).contains("kfuncs not bound"), "{}", screen(&m));
}

#[test]
fn shows_a_fused_object_on_the_cpu_grid_and_in_the_table() {
    let s = screen(&fused_model());
    assert!(s.contains("0:rep 141"), "{s}");
    assert!(s.contains("1:lent>0"), "{s}");
    assert!(s.contains("2 [0, 1]"), "object granted: {s}");
    assert!(s.contains("1.00"), "tax: {s}");
    assert!(s.contains("50%"), "fused share: {s}");
    assert!(s.contains("3:idle"), "idle CPU: {s}");
}

#[test]
fn shows_event_lines_rates_and_histogram_labels() {
    let s = screen(&fused_model());
    assert!(s.contains("fuse cpu=0 pid=141 cgroup=28 cpus=0,1"), "{s}");
    assert!(s.contains("split cpu=0 pid=141"), "{s}");
    assert!(s.contains("p50 4000 us  p99 5000 us"), "{s}");
    assert!(s.contains("≤5ms"), "{s}");
    assert!(s.contains("fuse/s 3  split/s 1"), "{s}");
}

#[test]
fn says_when_the_agent_is_gone() {
    let m = Model::default();
    let s = screen(&m);
    assert!(s.contains("DISCONNECTED"), "{s}");
    assert!(s.contains("no status yet"), "{s}");
}

#[test]
fn keys_pause_filter_help_and_quit() {
    let mut m = fused_model();
    assert!(m.on_key('p') && m.paused);
    let before = m.log.len();
    m.on_event(event(Kind::Fuse, 1), Instant::now());
    assert_eq!(m.log.len(), before, "paused: the log holds still");
    for c in ['/', '9', '9', '\n'] {
        m.on_key(c);
    }
    assert_eq!(m.filter, Some(99));
    let s = screen(&m);
    assert!(!s.contains("fuse cpu=0 pid=141"), "filtered out: {s}");
    assert!(s.contains("filter: cgroup 99"), "{s}");
    m.on_key('?');
    assert!(screen(&m).contains("q quit   p pause"));
    assert!(!m.on_key('q'), "q quits");
}

#[test]
fn the_node_view_has_one_row_per_node() {
    let mut m = fused_model();
    m.status.as_mut().unwrap().nodes = vec![vec![0, 1], vec![2, 3]];
    assert!(m.on_key('v') && m.view == View::Nodes);
    let s = screen(&m);
    assert!(s.contains(" nodes (v: CPU grid) "), "{s}");
    assert!(!s.contains("0:rep 141"), "no grid cells: {s}");
    assert_eq!(s.matches(" node 0 ").count(), 1, "{s}");
    assert_eq!(s.matches(" node 1 ").count(), 1, "{s}");
    assert_eq!(s.matches(" node ").count(), 2, "one row a node: {s}");
    assert!(s.contains("rep 1   lent 1   native 0   idle 0   offline 0   objects 1"), "{s}");
    assert!(s.contains("rep 0   lent 0   native 1   idle 1"), "{s}");
    m.on_key('v');
    assert!(screen(&m).contains("0:rep 141"), "back to the grid");
}

#[test]
fn the_history_band_shows_the_seconds_recorded() {
    let mut m = fused_model();
    let t0 = Instant::now();
    for i in 0..12 {
        m.tick(t0 + Duration::from_secs(i));
    }
    assert_eq!(m.history.len(), 12);
    let s = screen(&m);
    assert!(s.contains("fuse/s"), "{s}");
    assert!(s.contains("fused CPUs 50% (max 50%)"), "rep and lent of 4 CPUs: {s}");
    assert!(s.contains("lent CPUs 1 (max 1)"), "{s}");
    assert!(s.contains("last 12s"), "{s}");
    m.on_key('h');
    assert!(!screen(&m).contains("last 12s"), "h hides it");
    // Disconnected seconds are absent samples, not zeros.
    m.connected = false;
    m.on_key('h');
    m.tick(t0 + Duration::from_secs(12));
    assert!(screen(&m).contains("fuse/s - "), "{}", screen(&m));
}

#[test]
fn configured_keys_replace_the_defaults_and_a_bad_file_is_shown() {
    let mut m = fused_model();
    m.keys = crate::top::keys::parse("[keys]\nquit = \"x\"\npause = \"P\"\n").unwrap();
    assert!(m.on_key('q'), "q no longer quits");
    assert!(m.on_key('P') && m.paused);
    assert!(screen(&m).contains("? help  x quit"), "{}", screen(&m));
    m.on_key('?');
    assert!(screen(&m).contains("x quit   P pause"), "{}", screen(&m));
    assert!(!m.on_key('\x03'), "Ctrl-C always quits");
    assert!(!m.on_key('x'));
    let mut m = fused_model();
    m.notice = Some("top.toml: line 2: keys.quit: bad; using the default keys".into());
    assert!(screen(&m).contains("line 2: keys.quit: bad; using the default keys"), "{}", screen(&m));
    m.on_key('p');
    assert!(m.notice.is_none(), "a key press clears it");
}

#[test]
fn rates_forget_events_older_than_a_second() {
    let m = fused_model();
    assert_eq!(m.rates_at(Instant::now() + Duration::from_secs(3)), (0, 0));
}

#[test]
fn reconnects_with_a_bounded_backoff() {
    assert_eq!(reconnect_delay(0), Duration::from_millis(250));
    assert_eq!(reconnect_delay(2), Duration::from_millis(1000));
    assert_eq!(reconnect_delay(50), Duration::from_millis(2000));
}
