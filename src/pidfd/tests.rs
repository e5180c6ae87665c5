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
