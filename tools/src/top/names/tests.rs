use super::*;
use std::os::unix::fs::MetadataExt;

#[test]
fn fmt_ns_picks_the_unit_and_three_figures() {
    let cases = [
        (0, "0 ns"),
        (999, "999 ns"),
        (1_000, "1.00 µs"),
        (1_234, "1.23 µs"),
        (9_994, "9.99 µs"),
        (9_995, "10.0 µs"),
        (99_949, "99.9 µs"),
        (99_950, "100 µs"),
        (999_499, "999 µs"),
        (999_500, "1.00 ms"),
        (7_942_281, "7.94 ms"),
        (11_912_245, "11.9 ms"),
        (250_000_000, "250 ms"),
        (999_499_999, "999 ms"),
        (999_500_000, "1.00 s"),
        (43_020_412_836, "43.02 s"),
        (3_600_000_000_000, "3600.00 s"),
        (u64::MAX, "18446744073.71 s"),
    ];
    for (ns, want) in cases {
        assert_eq!(fmt_ns(ns), want, "{ns}");
    }
}

#[test]
fn pids_paths_and_prefixes() {
    assert_eq!(pid_text(141, Some("pgbench")), "141 (pgbench)");
    assert_eq!(pid_text(141, None), "141");
    assert_eq!(pid_text(7, Some("a b")), "7 (a\\x20b)", "a comm cannot forge fields");
    assert!(under("/work/db", "/work") && under("/work", "/work/") && under("/work", "/"));
    assert!(!under("/workers", "/work") && !under("/wor", "/work"));
    assert_eq!(fit_path("/work/db", 10), "/work/db");
    assert_eq!(fit_path("/system.slice/nginx.service", 14), "nginx.service");
    assert_eq!(fit_path("/a/very/long/path/db", 8), "…path/db");
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chameleon-names-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ino(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().ino()
}

#[test]
fn cgroup_ids_are_directory_inodes_walked_lazily() {
    let root = scratch("cg");
    std::fs::create_dir_all(root.join("work/db")).unwrap();
    std::fs::write(root.join("work/cgroup.procs"), "").unwrap();
    let walked = walk_cgroups(&root);
    assert_eq!(walked[&ino(&root)], "/");
    assert_eq!(walked[&ino(&root.join("work/db"))], "/work/db");
    assert_eq!(walked.len(), 3, "directories only: {walked:?}");

    let mut names = CgroupNames::new(Some(root.clone()));
    let t0 = Instant::now();
    let db = ino(&root.join("work/db"));
    names.resolve(db, t0);
    assert_eq!((names.get(db), names.walks()), (Some("/work/db"), 1));
    names.resolve(db, t0 + REWALK * 5);
    assert_eq!(names.walks(), 1, "a hit does not walk");
    // A cgroup made later: a miss within REWALK of the last walk waits.
    std::fs::create_dir_all(root.join("web")).unwrap();
    let web = ino(&root.join("web"));
    names.resolve(web, t0 + REWALK / 2);
    assert_eq!((names.get(web), names.walks()), (None, 1));
    names.resolve(web, t0 + REWALK);
    assert_eq!((names.get(web), names.walks()), (Some("/web"), 2));
    let mut under_work = names.ids_under("/work");
    under_work.sort();
    let mut want = vec![ino(&root.join("work")), db];
    want.sort();
    assert_eq!(under_work, want);
    // Removed: the last name stays.
    std::fs::remove_dir(root.join("web")).unwrap();
    names.resolve(12345678, t0 + REWALK * 3);
    assert_eq!(names.get(web), Some("/web"));
    assert_eq!(CgroupNames::new(None).get(db), None);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn comms_come_from_proc_expire_and_outlive_their_task() {
    let proc = scratch("proc");
    std::fs::create_dir_all(proc.join("141")).unwrap();
    std::fs::write(proc.join("141/comm"), "pgbench\n").unwrap();
    assert_eq!(read_comm(&proc, 141).as_deref(), Some("pgbench"));
    assert_eq!(read_comm(&proc, 142), None);
    let mut c = Comms::new(Some(proc.clone()));
    let t0 = Instant::now();
    c.resolve(141, t0);
    assert_eq!(c.get(141), Some("pgbench"));
    // Renamed: seen once the cached one has expired.
    std::fs::write(proc.join("141/comm"), "postgres\n").unwrap();
    c.resolve(141, t0 + COMM_TTL / 2);
    assert_eq!(c.get(141), Some("pgbench"));
    c.resolve(141, t0 + COMM_TTL);
    assert_eq!(c.get(141), Some("postgres"));
    // Gone: keeps its last comm.
    std::fs::remove_dir_all(proc.join("141")).unwrap();
    c.resolve(141, t0 + COMM_TTL * 3);
    assert_eq!(c.get(141), Some("postgres"));
    c.learn(9, "spin", t0);
    assert_eq!(c.get(9), Some("spin"));
    for pid in 1000..(1000 + COMMS_KEPT as i32 + 10) {
        c.learn(pid, "x", t0 + Duration::from_secs(1));
    }
    assert_eq!(c.len(), COMMS_KEPT, "bounded");
    assert_eq!(c.get(9), None, "the oldest went first");
    std::fs::remove_dir_all(&proc).unwrap();
}

#[test]
fn names_fall_back_to_numbers() {
    let n = Names::default();
    assert_eq!(n.pid(5), "5");
    assert_eq!(n.cgroup(54), "cgroup 54");
    assert_eq!(n.cgroup(0), "-");
}
