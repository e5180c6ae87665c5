use super::*;

/// Set in the child process of the test below: it runs the child's part.
const LOWERED_CHILD: &str = "CHAMELEON_TEST_NOFILE_CHILD";

#[test]
fn the_soft_limit_is_raised_to_the_hard_one() {
    if std::env::var_os(LOWERED_CHILD).is_some() {
        // A soft limit below the hard one, as a login shell's 1024 under a
        // hard 524288 (lowered here: this process is a child of the test).
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        setrlimit(Resource::RLIMIT_NOFILE, (hard / 2).max(64).min(hard), hard).unwrap();
        let now = raise_nofile_limit();
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        println!("nofile child: soft {soft}, hard {hard}, returned {now}");
        assert_eq!(soft, hard, "soft limit {soft}, hard {hard}");
        assert_eq!(now, soft);
        return;
    }
    // The limit is the whole process's: changed in a child (this test
    // binary running only this test), not under the other tests.
    let me = "agent::fd_budget::tests::the_soft_limit_is_raised_to_the_hard_one";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", me, "--nocapture", "--test-threads=1"])
        .env(LOWERED_CHILD, "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(text.contains("nofile child:"), "the child did not get to its measure:\n{text}");
    assert!(out.status.success(), "the child failed:\n{text}");
}

#[test]
fn the_budget_leaves_room_for_the_agents_own_files() {
    // A common default (soft 1024): a share each, the reserve kept.
    let b = FdBudget::for_limit(1024);
    assert!(b.pidfds + b.perf + RESERVED as usize <= 1024, "{b:?}");
    assert!(b.pidfds >= 256 && b.perf >= 128, "{b:?}");
    // A systemd service's (hard 524288): the fixed caps.
    let b = FdBudget::for_limit(524_288);
    assert_eq!((b.pidfds, b.perf), (MAX_PIDFDS, MAX_PERF));
    // Absurdly low: nothing for tasks rather than no room for the agent.
    let b = FdBudget::for_limit(100);
    assert_eq!((b.pidfds, b.perf), (0, 0));
    // Unlimited.
    assert_eq!(FdBudget::for_limit(u64::MAX).pidfds, MAX_PIDFDS);
}
