//! Host tests of `top`'s model and screen: ratatui's TestBackend draws it,
//! the tests read the text (names resolved on a fake host in a temp dir).

use super::*;
use chameleon::report::status::{CpuStatus, ObjectStatus};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::PathBuf;

/// A host to resolve names on, made once per test run: a cgroup root
/// with /work/db (its directory's inode is its id) and /work/web, and a
/// /proc where task 141 is "pgbench".
struct FakeHost {
    cgroups: PathBuf,
    proc: PathBuf,
    db: u64,
    web: u64,
}

fn host() -> &'static FakeHost {
    use std::os::unix::fs::MetadataExt;
    static HOST: std::sync::OnceLock<FakeHost> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("chameleon-top-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (cgroups, proc) = (dir.join("cgroup"), dir.join("proc"));
        std::fs::create_dir_all(cgroups.join("work/db")).unwrap();
        std::fs::create_dir_all(cgroups.join("work/web")).unwrap();
        std::fs::create_dir_all(proc.join("141")).unwrap();
        std::fs::write(proc.join("141/comm"), "pgbench\n").unwrap();
        let ino = |p: &str| std::fs::metadata(cgroups.join(p)).unwrap().ino();
        FakeHost { db: ino("work/db"), web: ino("work/web"), cgroups, proc }
    })
}

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
        ts_ns: 43_020_412_836,
        cgroup_id: host().db,
        latency_ns: latency_us * 1000,
        cost_ns: 2000,
        local_ns: 1000,
        run_ns: 0,
        fused_ns: 0,
        start_ns: 0,
        level: 2,
        cpus: vec![0, 1],
        superseded: false,
        comm: String::new(),
    }
}

fn fused_model() -> Model {
    let cpu = |cpu, role: &str, with| CpuStatus { cpu, online: true, role: role.into(), with, perf: None };
    let h = host();
    let mut m = Model {
        connected: true,
        names: Names::at(&h.cgroups, &h.proc),
        status: Some(Snapshot {
            agent_pid: 1,
            written_at: 0,
            objects: vec![ObjectStatus { pid: 141, cgroup: h.db, cpus: vec![0, 1], gen: 1 }],
            requesters: vec![(141, 1, 1)],
            nodes: vec![vec![0, 1, 2, 3]],
            manager_online: vec![0, 1, 2, 3],
            defrag_moves: 0,
            cpus: vec![cpu(0, "rep", 141), cpu(1, "borrowed", 0), cpu(2, "native", -1), cpu(3, "idle", -1)],
            tags: vec![
                (h.db, "v1 level=1 weight=1 tax=1.00 smt=any".into()),
                (h.web, "v1 level=2 weight=3 tax=0.50 smt=any".into()),
            ],
            parked: vec![],
            module: None,
            auto_tax: vec![],
            run_id: None,
        }),
        ..Default::default()
    };
    let now = Instant::now();
    m.resolve_status_names(now);
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
        proxies: vec![(1, 0)],
        emulate: Some("high".into()),
        ..Default::default()
    });
    // The state from the status, the numbers from the metrics.
    let s = screen(&m);
    assert!(s.contains("proxies: 1>0  (counters unavailable)"), "{s}");
    m.metrics = Some(chameleon::report::metrics::Metrics {
        proxy_lends: 40,
        proxy_reclaims: 39,
        proxy_irqs_moved: 1,
        proxy_lent_irqs: 5,
        proxy_lent_softirqs: 6,
        proxy_lent_ipis: 7,
        proxy_lent_timers: 8,
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
    assert!(s.contains("0:rep 141 (pgbench)"), "{s}");
    assert!(s.contains("1:lent>0"), "{s}");
    assert!(s.contains("2 [0, 1]"), "object granted: {s}");
    assert!(s.contains("│141 (pgbench)    /work/db"), "pid (comm) and cgroup path: {s}");
    assert!(!s.contains(&host().db.to_string()), "no cgroup id: {s}");
    assert!(s.contains("1.00"), "tax: {s}");
    assert!(s.contains("50%"), "fused share: {s}");
    assert!(s.contains("3:idle"), "idle CPU: {s}");
}

#[test]
fn shows_event_lines_rates_and_histogram_labels() {
    let s = screen(&fused_model());
    assert!(s.contains("   43.02 s fuse    cpu 0   141 (pgbench)    /work/db  cpus 0,1  latency 5.00 ms"), "{s}");
    assert!(s.contains("   43.02 s split   cpu 0   141 (pgbench)    /work/db  "), "{s}");
    assert!(s.contains("  fused 2.50 s  cpus 0,1"), "{s}");
    assert!(!s.contains("_ns="), "no raw nanoseconds: {s}");
    assert!(s.contains("p50 4.00 ms  p99 5.00 ms"), "{s}");
    assert!(s.contains("≤5 ms"), "{s}");
    assert!(s.contains("fuse/s 3  split/s 1"), "{s}");
    // Kernel work on lent CPUs is a counter: from the metrics, "-" until read.
    assert!(s.contains("kernel work on lent CPUs -  "), "{s}");
    let mut m = fused_model();
    m.metrics = Some(chameleon::report::metrics::Metrics { proxy_served: 17, ..Default::default() });
    assert!(screen(&m).contains("kernel work on lent CPUs 17  "), "{}", screen(&m));
    // The kinds' key figures, one short line each.
    let h = host();
    let names = Names::at(&h.cgroups, &h.proc);
    let mut m = fused_model();
    let mut d = event(Kind::Demand, 0);
    d.level = 2;
    d.comm = "spin".into();
    d.pid = 7;
    d.cgroup_id = h.web;
    m.on_event(d.clone(), Instant::now());
    assert!(screen(&m).contains("demand  cpu 0   7 (spin)         /work/web  level 2 (4 cpus)"), "{}", screen(&m));
    let mut p = event(Kind::PartialFuse, 12);
    p.level = 4;
    p.superseded = true;
    p.ts_ns = 1500;
    assert_eq!(
        crate::top::events::event_line(&p, &m.names),
        "   1.50 µs partial cpu 0   141 (pgbench)    /work/db  cpus 0,1 of 4  latency ≥12.0 µs"
    );
    let mut x = event(Kind::TaskExit, 0);
    (x.run_ns, x.fused_ns, x.cgroup_id) = (3_000_000_000, 7_942_281, 54);
    let line = crate::top::events::event_line(&x, &names);
    assert!(line.contains(" 141              cgroup 54  ran 3.00 s  fused 7.94 ms"), "unknown yet: the numbers: {line}");
    let mut off = event(Kind::CpuOffline, 0);
    off.cpu = 3;
    assert_eq!(crate::top::events::event_line(&off, &names), "   43.02 s offline cpu 3  ");
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
    assert_eq!(m.filter, Some(Filter::Id(99)));
    let s = screen(&m);
    assert!(!s.contains("fuse    cpu 0   141"), "filtered out: {s}");
    assert!(!s.contains("│141 (pgbench)"), "filtered out: {s}");
    assert!(s.contains("filter: cgroup id 99"), "{s}");
    // A path, and what is below it.
    let typed = |m: &mut Model, text: &str| {
        m.on_key('/');
        text.chars().for_each(|c| {
            m.on_key(c);
        });
        m.on_key('\n');
    };
    typed(&mut m, "/work");
    assert_eq!(m.filter, Some(Filter::Path("/work".into())));
    let s = screen(&m);
    assert!(s.contains("fuse    cpu 0   141 (pgbench)    /work/db"), "{s}");
    assert!(s.contains("filter: cgroups /work/*"), "{s}");
    typed(&mut m, "work/web");
    assert!(!screen(&m).contains("fuse    cpu 0   141"), "{}", screen(&m));
    typed(&mut m, &host().db.to_string());
    assert!(screen(&m).contains("filter: cgroup /work/db (id "), "{}", screen(&m));
    assert!(screen(&m).contains("fuse    cpu 0   141"), "{}", screen(&m));
    m.on_key('\x1b');
    assert_eq!(m.filter, None);
    m.on_key('?');
    let s = screen(&m);
    assert!(s.contains("q quit   p pause"), "{s}");
    assert!(s.contains("filter: cgroup path (and below) or id"), "{s}");
    assert!(s.contains("c execution objects / one row per tagged cgroup"), "{s}");
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
    assert!(s.contains("RL  141 (pgbench) /w"), "the objects' owners by name: {s}");
    m.on_key('v');
    assert!(screen(&m).contains("0:rep 141"), "back to the grid");
}

#[test]
fn the_cgroup_view_has_one_row_per_tagged_cgroup() {
    let mut m = fused_model();
    assert!(m.on_key('c') && m.show_cgroups);
    let s = screen(&m);
    assert!(s.contains(" tagged cgroups, last 5.00 s (c: execution objects) "), "{s}");
    let rows: Vec<&str> = s.lines().filter(|l| l.starts_with("│/work/")).collect();
    assert_eq!(rows.len(), 2, "{s}");
    let cells = |l: &str| l.split(['│', ' ']).filter(|w| !w.is_empty()).map(String::from).collect::<Vec<_>>();
    // path, level, weight, tax, objects, CPUs, fused, fuses (and the histogram's column beside).
    assert_eq!(cells(rows[0])[..8], ["/work/db", "1", "1", "1.00", "1", "2", "50%", "3"], "{s}");
    assert_eq!(cells(rows[1])[..8], ["/work/web", "2", "3", "0.50", "0", "0", "0%", "0"], "{s}");
    m.filter = Filter::parse("/work/web");
    assert!(!screen(&m).contains("/work/db"), "the filter applies: {}", screen(&m));
    m.on_key('c');
    assert!(screen(&m).contains(" execution objects (c: per cgroup) "), "{}", screen(&m));
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
