use super::*;

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chameleon-progress-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn record(magic: u32, version: u32, count: u64) -> Vec<u8> {
    [&magic.to_ne_bytes()[..], &version.to_ne_bytes(), &count.to_ne_bytes()].concat()
}

// SAFETY: geteuid has no preconditions.
fn me() -> u32 {
    unsafe { libc::geteuid() }
}

#[test]
fn a_counter_file_is_read_only_if_it_is_one() {
    let d = scratch("read");
    let good = d.join("good");
    std::fs::write(&good, record(MAGIC, VERSION, 12345)).unwrap();
    assert_eq!(read_counter(&good, me()), Ok(12345));
    // Longer is fine: one fixed-size record is read.
    let long = d.join("long");
    std::fs::write(&long, [record(MAGIC, VERSION, 7), vec![0xff; 4096]].concat()).unwrap();
    assert_eq!(read_counter(&long, me()), Ok(7));
    // Someone else's file (as the task's uid differs).
    assert_eq!(read_counter(&good, me().wrapping_add(1)), Err("not owned by the task's user"));
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("short", record(MAGIC, VERSION, 1)[..12].to_vec(), "shorter than a record"),
        ("empty", vec![], "shorter than a record"),
        ("magic", record(0xdead_beef, VERSION, 1), "bad magic"),
        ("version", record(MAGIC, 2, 1), "unknown version"),
    ];
    for (name, bytes, why) in cases {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        assert_eq!(read_counter(&p, me()), Err(why), "{name}");
    }
    // A symlink to a good file, a directory, a FIFO, nothing.
    let link = d.join("link");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    assert_eq!(read_counter(&link, me()), Err("a symlink"));
    assert_eq!(read_counter(&d, me()), Err("not a regular file"));
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert_eq!(read_counter(&fifo, me()), Err("not a regular file"), "and it did not block");
    assert_eq!(read_counter(&d.join("none"), me()), Err("cannot be opened"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_rust_counter_writes_what_the_agent_reads() {
    if !Path::new(DIR).is_dir() {
        return; // no /dev/shm here
    }
    let c = Counter::open().unwrap();
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    assert_eq!(read_counter(&path_of(tid), me()), Ok(0));
    for _ in 0..1000 {
        c.add(1);
    }
    c.add(5);
    assert_eq!(read_counter(&path_of(tid), me()), Ok(1005));
    drop(c);
    assert!(!path_of(tid).exists(), "removed when dropped");
}

#[test]
fn a_file_counts_once_it_moves() {
    if !Path::new(DIR).is_dir() {
        return;
    }
    // This thread as the task: its file left over from "before".
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    let path = path_of(tid);
    std::fs::write(&path, record(MAGIC, VERSION, 500)).unwrap();
    let mut p = Probe::new(tid, true);
    p.perf_tried = true; // no PMU: the file or nothing
    let (s, changed) = p.sample(0, Some(0));
    assert_eq!((s, changed, p.source()), (None, false, Source::None), "a file that has not moved is not a source");
    std::fs::write(&path, record(MAGIC, VERSION, 600)).unwrap();
    let (s, changed) = p.sample(250_000_000, Some(0));
    assert_eq!((s, changed, p.source()), (None, true, Source::File), "a new source starts a baseline");
    std::fs::write(&path, record(MAGIC, VERSION, 700)).unwrap();
    let (s, _) = p.sample(500_000_000, Some(10));
    let s = s.unwrap();
    assert_eq!((s.progress, s.wall_ns, s.fused_ns), (100, 250_000_000, 10));
    // Backwards (rewritten): that interval is dropped, the next counts.
    std::fs::write(&path, record(MAGIC, VERSION, 3)).unwrap();
    assert_eq!(p.sample(750_000_000, Some(20)).0, None);
    std::fs::write(&path, record(MAGIC, VERSION, 53)).unwrap();
    assert_eq!(p.sample(1_000_000_000, Some(30)).0.unwrap().progress, 50);
    // Garbage in the file: no source until it is good (and moves) again.
    std::fs::write(&path, b"not a counter at all").unwrap();
    let (s, changed) = p.sample(1_250_000_000, Some(40));
    assert_eq!((s, changed, p.source()), (None, true, Source::None));
    std::fs::remove_file(&path).unwrap();
}

/// Where the machine has a PMU the counter opens and counts this thread's
/// instructions; where it has none (the test VM under TCG, many sandboxes)
/// or the caller may not use it, the kernel says so: never EINVAL or E2BIG,
/// which would mean a malformed perf_event_attr.
#[test]
fn instructions_count_this_thread_or_say_why_not() {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    match Instructions::open(tid) {
        Ok(c) => {
            let before = c.read().expect("a counter that opened reads");
            let mut x = 0u64;
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            let after = c.read().expect("a counter that opened reads");
            assert!(after >= before + 1_000_000, "a million additions counted as {}", after - before);
        }
        Err(e) => {
            let why = e.raw_os_error();
            assert!(
                matches!(why, Some(libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP | libc::EACCES | libc::EPERM)),
                "perf_event_open refused the attr: {e}"
            );
        }
    }
}
