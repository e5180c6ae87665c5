use super::*;

#[test]
fn requests_round_trip() {
    for op in [Op::Ping, Op::Reload { cgroup: "/sys/fs/cgroup/seq".into() }, Op::ReloadRules, Op::Tags, Op::Status] {
        let req = Request { v: VERSION, op };
        let line = serde_json::to_vec(&req).unwrap();
        assert_eq!(parse_request(&line).unwrap(), req);
    }
    let wire = br#"{"v":1,"op":"reload","cgroup":"/sys/fs/cgroup/a"}"#;
    assert_eq!(parse_request(wire).unwrap().op, Op::Reload { cgroup: "/sys/fs/cgroup/a".into() });
    assert_eq!(parse_request(br#"{"v":1,"op":"reload_rules"}"#).unwrap().op, Op::ReloadRules);
    assert_eq!(parse_request(br#"{"v":1,"op":"tags"}"#).unwrap().op, Op::Tags);
    assert_eq!(parse_request(br#"{"v":1,"op":"status"}"#).unwrap().op, Op::Status);
    // The NRI plugin's request, as its Go side writes it.
    let wire = br#"{"v":1,"op":"tag","cgroup":"/sys/fs/cgroup/kubepods/pod1/c1","set":{"level":"1","tax":"0.5"},"via":"nri","who":"pod default/p container c"}"#;
    match parse_request(wire).unwrap().op {
        Op::Tag { cgroup, set, via, who } => {
            assert_eq!(cgroup, PathBuf::from("/sys/fs/cgroup/kubepods/pod1/c1"));
            assert_eq!(set.get("tax").map(String::as_str), Some("0.5"));
            assert_eq!(via, crate::tags::request::Via::Nri);
            assert_eq!(who.as_deref(), Some("pod default/p container c"));
        }
        op => panic!("{op:?}"),
    }
    let untag = parse_request(br#"{"v":1,"op":"untag","cgroup":"/sys/fs/cgroup/a"}"#).unwrap().op;
    assert_eq!(untag, Op::Untag { cgroup: "/sys/fs/cgroup/a".into(), via: crate::tags::request::Via::Cli, who: None });
    let wire = serde_json::to_string(&Response::rejected(&crate::tags::request::props(&[("smt".into(), "x".into())].into()).unwrap_err())).unwrap();
    assert!(wire.contains(r#""reason":"smt""#), "{wire}");
}

#[test]
fn refuses_bad_messages_with_a_reason() {
    let msg = |d: &[u8]| format!("{:#}", parse_request(d).unwrap_err());
    assert!(msg(b"not json").contains("not JSON"));
    assert!(msg(&[0xff, 0xfe]).contains("not UTF-8"));
    assert!(msg(br#"{"op":"ping"}"#).contains("no protocol version"));
    assert!(msg(br#"{"v":2,"op":"ping"}"#).contains("protocol version 2"));
    assert!(msg(br#"{"v":1,"op":"format_disk"}"#).contains("not a known request"));
    assert_eq!(parse_request(br#"{"v":1,"op":"subscribe"}"#).unwrap().op, Op::Subscribe);
    assert!(msg(br#"{"v":1,"op":"reload"}"#).contains("not a known request"));
    assert!(msg(&vec![b' '; MAX_MESSAGE + 1]).contains("at most 4096"));
}

#[test]
fn server_answers_garbage_and_keeps_serving() {
    let dir = std::env::temp_dir().join(format!("chameleon-ctl-{}", std::process::id()));
    let path = dir.join("control.sock");
    let mut server = Server::bind(&path).unwrap();
    let talk = |data: &[u8]| {
        let mut s = UnixStream::connect(&path).unwrap();
        s.write_all(data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        s
    };
    // Tests run as root in the toolchain root; a non-root peer is refused
    // the same way, tested in the VM.
    let mut bad = talk(b"garbage\n");
    let mut good = talk(b"{\"v\":1,\"op\":\"ping\"}\n");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    server
        .start(Arc::new(move |req| {
            log.lock().unwrap().push(req);
            Response::ok("pong")
        }))
        .unwrap();
    let answer = |s: &mut UnixStream| -> Response {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        serde_json::from_slice(&read_line(s, deadline, MAX_ANSWER).unwrap()).unwrap()
    };
    let a = answer(&mut bad);
    if nix::unistd::geteuid().is_root() {
        assert!(!a.ok && a.error.unwrap().contains("not JSON"));
        assert!(answer(&mut good).ok);
        assert_eq!(*seen.lock().unwrap(), vec![Request { v: 1, op: Op::Ping }]);
    } else {
        assert!(!a.ok && a.error.unwrap().contains("root only"));
    }
    drop(server);
    assert!(!path.exists(), "socket removed on drop");
    let _ = std::fs::remove_dir(&dir);
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chameleon-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_trickling_client_holds_up_nobody_and_is_cut_off_at_the_deadline() {
    let dir = scratch("trickle");
    let path = dir.join("control.sock");
    let mut server = Server::bind(&path).unwrap();
    server.start(Arc::new(|_| Response::ok("pong"))).unwrap();
    let writer_path = path.clone();
    // One byte every 100 ms, never a newline: without a whole-request
    // deadline each read would succeed and the agent would wait 4 s.
    let trickler = std::thread::spawn(move || {
        let mut s = UnixStream::connect(&writer_path).unwrap();
        for _ in 0..40 {
            if s.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer
    });
    std::thread::sleep(Duration::from_millis(50));
    // Another client meanwhile is answered while the trickler still
    // trickles: served on its own thread, not after it.
    let ping = send_within(&path, Op::Ping, Duration::from_secs(30)).unwrap();
    let trickling = !trickler.is_finished();
    let answer = trickler.join().unwrap();
    if nix::unistd::geteuid().is_root() {
        assert!(ping.ok, "{ping:?}");
        assert!(trickling, "the ping was answered only after the trickler was done");
        assert!(answer.contains("did not arrive within 500 ms"), "{answer}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_our_own_socket_is_ever_removed() {
    let dir = scratch("sockown");
    // Not a socket at the path: refused, left alone.
    let path = dir.join("control.sock");
    std::fs::write(&path, "precious").unwrap();
    let e = format!("{:#}", Server::bind(&path).err().unwrap());
    assert!(e.contains("not a socket"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    std::fs::remove_file(&path).unwrap();
    // A live agent's socket: refused.
    let first = Server::bind(&path).unwrap();
    let e = format!("{:#}", Server::bind(&path).err().unwrap());
    assert!(e.contains("another agent is listening"), "{e}");
    // Our socket replaced by another's: dropping us leaves theirs.
    std::fs::remove_file(&path).unwrap();
    let second = Server::bind(&path).unwrap();
    drop(first);
    assert!(path.exists(), "dropping the first server removed the second's socket");
    drop(second);
    assert!(!path.exists(), "the second server's socket stayed after drop");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_agent_at_a_time() {
    let dir = scratch("lock");
    let sock = dir.join("control.sock");
    let held = InstanceLock::acquire(&sock).unwrap();
    // flock locks belong to the open file: a second open in this process
    // conflicts like another agent would.
    let e = format!("{:#}", InstanceLock::acquire(&sock).err().unwrap());
    assert!(e.contains(&format!("another scx_chameleon agent is running (pid {};", std::process::id())), "{e}");
    drop(held);
    InstanceLock::acquire(&sock).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Set in the child process of the test below: it runs the child's part.
const OUT_OF_FDS_CHILD: &str = "CHAMELEON_TEST_OUT_OF_FDS_CHILD";

#[test]
fn out_of_file_descriptors_the_acceptor_backs_off_rather_than_spins() {
    if std::env::var_os(OUT_OF_FDS_CHILD).is_some() {
        return out_of_fds_child();
    }
    // The file-descriptor limit is the whole process's: it is lowered in a
    // child (this test binary running only this test), not here, where
    // other tests open files on other threads.
    let me = "control::tests::out_of_file_descriptors_the_acceptor_backs_off_rather_than_spins";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", me, "--nocapture", "--test-threads=1"])
        .env(OUT_OF_FDS_CHILD, "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(text.contains("out-of-fds child:"), "the child did not get to its measure:\n{text}");
    assert!(out.status.success(), "the child failed:\n{text}");
}

/// A connection waits in the backlog while every file descriptor is in
/// use: accept() fails with EMFILE and the connection stays, so the
/// listener stays readable. Measured: the process's CPU time over 1 s (a
/// spinning acceptor takes a whole CPU), the back-offs counted, and the
/// client served once descriptors are free again.
fn out_of_fds_child() {
    use nix::sys::resource::{getrlimit, getrusage, setrlimit, Resource, UsageWho};
    let dir = scratch("outoffds");
    let path = dir.join("control.sock");
    let mut server = Server::bind(&path).unwrap();
    server.start(Arc::new(|_| Response::ok("pong"))).unwrap();
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, 128.min(hard), hard).unwrap();
    let devnull = std::fs::File::open("/dev/null").unwrap();
    let mut held = Vec::new();
    loop {
        match devnull.try_clone() {
            Ok(f) => held.push(f),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                break;
            }
        }
    }
    // One free for the client's socket, none left for the acceptor.
    held.pop();
    let mut client = UnixStream::connect(&path).unwrap();
    let cpu = || {
        let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
        let d = |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
        d(u.user_time()) + d(u.system_time())
    };
    let t0 = cpu();
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu() - t0;
    let backoffs = server.accept_backoffs();
    println!("out-of-fds child: {} ms of CPU in 1 s with a connection pending and no descriptor free; {backoffs} back-offs", used.as_millis());
    // Freed: the waiting client is served.
    held.clear();
    client.write_all(b"{\"v\":1,\"op\":\"ping\"}\n").unwrap();
    let answer = read_line(&mut client, std::time::Instant::now() + Duration::from_secs(5), MAX_ANSWER).unwrap();
    let answer: Response = serde_json::from_slice(&answer).unwrap();
    assert!(used < Duration::from_millis(100), "the acceptor spun: {} ms of CPU in 1 s", used.as_millis());
    assert!((1..=20).contains(&backoffs), "{backoffs} back-offs in 1 s (at most 10 a second expected)");
    if nix::unistd::geteuid().is_root() {
        assert!(answer.ok, "{answer:?}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// The socket file is created 0600: checked on the bind step alone, before
/// anything else could touch the file. (It was bound with the umask's mode,
/// 0755 under umask 022, 0777 under 0, and chmod-ed by path afterwards.)
#[test]
fn the_socket_is_never_reachable_with_a_wider_mode() {
    let dir = scratch("mode");
    let path = dir.join("control.sock");
    let listener = listen_at(&path).unwrap();
    assert_eq!(mode_of(&path), 0o600, "mode right after bind");
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    let server = Server::bind(&path).unwrap();
    assert_eq!(mode_of(&path), 0o600);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whoever may write the socket's directory may put their own socket (or
/// lock) in its place: such a directory is refused, by the server and the
/// lock alike; a missing one is made 0755.
#[test]
fn the_socket_directory_must_be_ours_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("dirs");
    let made = dir.join("made/deeper");
    Server::bind(&made.join("control.sock")).unwrap();
    assert_eq!((mode_of(&dir.join("made")), mode_of(&made)), (0o755, 0o755), "made 0755 whatever the umask");

    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    for (mode, why) in [(0o777, "mode 0777"), (0o775, "mode 0775"), (0o1777, "mode 1777")] {
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode)).unwrap();
        let want = format!("{}: writable by its group or others ({why}); the control socket's directory must be writable by its owner only (chmod go-w, or remove it)", open.display());
        let e = format!("{:#}", Server::bind(&open.join("control.sock")).err().expect("bound in an open directory"));
        assert_eq!(e, want);
        let e = format!("{:#}", InstanceLock::acquire(&open.join("control.sock")).err().expect("locked in an open directory"));
        assert_eq!(e, want);
        assert!(!open.join("control.sock").exists() && !open.join("agent.lock").exists(), "made something there");
    }

    let link = dir.join("link");
    std::os::unix::fs::symlink(&made, &link).unwrap();
    let e = format!("{:#}", Server::bind(&link.join("control.sock")).err().expect("bound through a link"));
    assert_eq!(e, format!("{}: a symbolic link; the control socket's directory must be a directory", link.display()));

    if nix::unistd::geteuid().is_root() {
        let theirs = dir.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(1000), Some(1000)).unwrap();
        let e = format!("{:#}", Server::bind(&theirs.join("control.sock")).err().expect("bound in another user's directory"));
        assert_eq!(e, format!("{}: owned by uid 1000, not by the agent (uid 0); the control socket's directory must be the agent's", theirs.display()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
