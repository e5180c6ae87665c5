use super::*;
use std::process::Command;

#[test]
fn a_pidfd_sees_its_task_exit() {
    let mut child = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
    let t = TaskFd::open(child.id() as i32).expect("pidfd_open");
    assert_eq!(t.pid(), child.id() as i32);
    assert!(!t.exited(), "a sleeping child is not gone");
    child.kill().unwrap();
    // Exited (a zombie) before it is reaped, and after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !t.exited() {
        assert!(std::time::Instant::now() < deadline, "the pidfd never became readable");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.wait().unwrap();
    assert!(t.exited());
}

#[test]
fn a_thread_has_a_pidfd_of_its_own() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    let t = TaskFd::open(tid).expect("pidfd_open(PIDFD_THREAD) of a thread");
    assert!(!t.exited());
    stop_tx.send(()).unwrap();
    h.join().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !t.exited() {
        assert!(std::time::Instant::now() < deadline, "a thread's exit was not seen");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn no_task_no_pidfd() {
    assert!(TaskFd::open(0).is_err());
    assert!(TaskFd::open(-5).is_err());
}

#[test]
fn the_start_is_read_from_a_stat_line_whatever_the_task_calls_itself() {
    // Fields after the name: state (3) ... starttime (22).
    let rest = "S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 98765 1234 56 18446744073709551615";
    assert_eq!(start_ticks(&format!("4242 (spin) {rest}")), Some(98765));
    // A task names itself: spaces and parentheses in the name move no field.
    assert_eq!(start_ticks(&format!("4242 (a) S 1 (b) {rest}")), Some(98765));
    assert_eq!(start_ticks(&format!("4242 () {rest}")), Some(98765));
    assert_eq!(start_ticks("4242 (spin) S 1 2"), None);
    assert_eq!(start_ticks("garbage"), None);
    assert_eq!(start_ticks(""), None);
}

#[test]
fn a_start_in_ns_and_one_in_ticks_agree_to_the_tick() {
    // USER_HZ 100: the kernel prints start_boottime / 10 ms.
    assert!(same_start(1_234_567_890, 123, 100));
    assert!(same_start(1_230_000_000, 123, 100));
    assert!(!same_start(1_229_999_999, 123, 100));
    assert!(!same_start(1_240_000_000, 123, 100));
    // Unknown tick rate: nothing is confirmed.
    assert!(!same_start(1_234_567_890, 123, 0));
}

/// `tid`'s start as the kernel prints it, and a start in ns within that tick.
fn start_of(tid: i32) -> (u64, u64) {
    let ticks = start_ticks(&std::fs::read_to_string(format!("/proc/{tid}/stat")).unwrap()).unwrap();
    let tick_ns = 1_000_000_000 / ticks_per_second();
    (ticks, ticks * tick_ns + tick_ns / 2)
}

#[test]
fn a_pidfd_is_given_only_for_the_task_that_asked() {
    let mut child = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
    let pid = child.id() as i32;
    let (_, start_ns) = start_of(pid);
    let tick_ns = 1_000_000_000 / ticks_per_second();
    let t = TaskFd::open_as(pid, start_ns).expect("the task that started then");
    assert_eq!(t.pid(), pid);
    // The pid now names a task started a tick later, or earlier, than the
    // one that asked: a newcomer given its pid (or the asker is the older).
    for other in [start_ns + tick_ns, start_ns - tick_ns, 0] {
        match TaskFd::open_as(pid, other) {
            Err(NotIt::Other) => {}
            r => panic!("start {other} for a task started at {start_ns}: {r:?}"),
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    match TaskFd::open_as(pid, start_ns) {
        Err(NotIt::Gone) => {}
        r => panic!("a reaped task: {r:?}"),
    }
    drop(t);
}

#[test]
fn a_thread_is_confirmed_by_its_own_start() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    let (_, start_ns) = start_of(tid);
    TaskFd::open_as(tid, start_ns).expect("the thread, by its own start");
    stop_tx.send(()).unwrap();
    h.join().unwrap();
}
