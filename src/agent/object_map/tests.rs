use super::*;
use std::process::{Child, Command};

/// A live task to hold: its pid and start (ns, within its start tick).
fn task() -> (Child, i32, u64) {
    let child = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
    let pid = child.id() as i32;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let ticks = crate::pidfd::start_ticks(&stat).expect("a start in /proc/PID/stat");
    let tick_ns = 1_000_000_000 / crate::pidfd::ticks_per_second();
    (child, pid, ticks * tick_ns + tick_ns / 2)
}

fn end(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

#[test]
fn holds_at_most_its_cap_and_counts_the_requesters_refused() {
    let mut m = ObjectMap::with_cap(2);
    let (a, pa, sa) = task();
    let (b, pb, sb) = task();
    let (c, pc, sc) = task();
    assert_eq!(m.track(pa, sa).unwrap(), Track::New);
    assert_eq!(m.track(pb, sb).unwrap(), Track::New);
    assert!(matches!(m.track(pc, sc), Err(NotTracked::Full)), "a third past a cap of 2");
    assert_eq!(m.refused().full, 1);
    assert_eq!(m.held(), 2);
    // One held asks again at the cap: still held.
    assert_eq!(m.track(pa, sa).unwrap(), Track::Known);
    // A place freed is taken by the next to ask.
    m.forget(pa);
    assert_eq!(m.track(pc, sc).unwrap(), Track::New);
    assert!(matches!(m.track(pa, sa), Err(NotTracked::Full)));
    assert_eq!((m.refused().full, m.held()), (2, 2));
    // A held task that exited gives its place up when its pid asks again.
    end(b);
    assert!(matches!(m.track(pb, sb), Err(NotTracked::Gone)));
    assert_eq!(m.held(), 1);
    assert_eq!(m.track(pa, sa).unwrap(), Track::New);
    end(a);
    end(c);
}

#[test]
fn a_demand_is_tracked_only_for_the_task_that_sent_it() {
    let mut m = ObjectMap::with_cap(8);
    let (a, pa, sa) = task();
    let tick_ns = 1_000_000_000 / crate::pidfd::ticks_per_second();
    // The pid names a task started after the one that asked: that one
    // exited and a newcomer was given its pid before the agent looked.
    assert!(matches!(m.track(pa, sa - 5 * tick_ns), Err(NotTracked::Reused)));
    assert_eq!((m.held(), m.refused().reused), (0, 1));
    assert_eq!(m.track(pa, sa).unwrap(), Track::New);
    // Held for the live task: an older task's DEMAND under the pid (sent
    // before it exited, read late) changes nothing.
    assert!(matches!(m.track(pa, sa - 5 * tick_ns), Err(NotTracked::Stale)));
    assert_eq!(m.track(pa, sa).unwrap(), Track::Known);
    assert_eq!(m.held(), 1);
    end(a);
}
