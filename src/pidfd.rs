//! A task named by a pidfd rather than a pid: it names that one task for as
//! long as it is held, where a pid may be given to a newcomer as soon as the
//! task it named is reaped. The policy's task storage maps (`task_ctxs`,
//! `assignments`) take one as their key from user space.

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// pidfd_open's PIDFD_THREAD (Linux 6.9; every kernel we support has it):
/// a pidfd for any thread, not only a thread-group leader, readable once
/// that thread exits. Policy events name threads.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// One thread, held by a pidfd.
#[derive(Debug)]
pub struct TaskFd {
    pid: i32,
    fd: OwnedFd,
}

impl TaskFd {
    /// The thread `tid` is now (ESRCH if there is none).
    pub fn open(tid: i32) -> io::Result<TaskFd> {
        if tid <= 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new fd the kernel just gave us, owned by nothing else.
        Ok(TaskFd { pid: tid, fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Has the thread exited? (Its pidfd polls readable from then on,
    /// reaped or not; a newcomer under the same pid changes nothing.)
    pub fn exited(&self) -> bool {
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(n) => n > 0,
            // poll on a pidfd fails only for lack of memory: say alive, and
            // the next look decides.
            Err(_) => false,
        }
    }

    /// The key a task storage map takes from user space.
    pub fn map_key(&self) -> [u8; 4] {
        self.fd.as_raw_fd().to_ne_bytes()
    }
}

/// Why `open_as` gives no pidfd.
#[derive(Debug)]
pub enum NotIt {
    /// No task has the pid now (ESRCH), or the one that had it exited
    /// while it was looked at.
    Gone,
    /// The pid names a task that started at another time than the one
    /// meant: the one meant has exited and the pid was given again.
    Other,
    /// No pidfd (EMFILE, ENFILE, ENOMEM...): nothing is known of the task.
    Io(io::Error),
}

impl TaskFd {
    /// Thread `tid`, if it is the one that started at `start_ns` (its
    /// start_boottime, as the policy reports it in an event): a pid is only
    /// a name until a pidfd holds it, and between the event and the open
    /// the task may have exited and its pid gone to a newcomer.
    ///
    /// The pidfd is opened first, then /proc/TID/stat read for the start,
    /// then the pidfd asked whether its task has exited: if it has not, the
    /// pid was still its own during the read, so the start read is that
    /// task's. The kernel prints the start in clock ticks (USER_HZ), so a
    /// newcomer started within the same tick as the task meant (which had
    /// to start, ask, exit and have its pid given again in that time) is
    /// taken for it. /proc's start is shifted by the reader's time
    /// namespace: the agent runs in the initial one.
    pub fn open_as(tid: i32, start_ns: u64) -> Result<TaskFd, NotIt> {
        let t = TaskFd::open(tid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => NotIt::Gone,
            _ => NotIt::Io(e),
        })?;
        let stat = std::fs::read_to_string(format!("/proc/{tid}/stat"));
        if t.exited() {
            return Err(NotIt::Gone);
        }
        // Alive after the read, yet no /proc entry: never seen; say gone.
        let ticks = stat.ok().as_deref().and_then(start_ticks).ok_or(NotIt::Gone)?;
        if !same_start(start_ns, ticks, ticks_per_second()) {
            return Err(NotIt::Other);
        }
        Ok(t)
    }
}

/// The start of a task (field 22, `starttime`, in clock ticks since boot)
/// from its /proc/TID/stat line. The name (field 2, in parentheses) is the
/// task's to choose, spaces and parentheses included: fields are counted
/// from the last ')'.
pub fn start_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // rest: " S ppid ..." — field 3 (state) first, so field 22 is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Is a start of `start_ns` (ns) the one the kernel printed as `ticks` at
/// `hz` ticks a second? The kernel's nsec_to_clock_t divides by the tick
/// in ns when that is whole (USER_HZ 100 on every architecture we build
/// for); else it rounds, and one tick either way is allowed. Unknown `hz`
/// (0): no.
pub fn same_start(start_ns: u64, ticks: u64, hz: u64) -> bool {
    const NS: u64 = 1_000_000_000;
    if hz == 0 {
        return false;
    }
    if NS % hz == 0 {
        return start_ns / (NS / hz) == ticks;
    }
    let t = (start_ns as u128 * hz as u128 / NS as u128) as u64;
    t.abs_diff(ticks) <= 1
}

/// The clock ticks per second /proc prints times in (USER_HZ).
pub fn ticks_per_second() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(hz)) if hz > 0 => hz as u64,
        _ => 100,
    }
}

#[cfg(test)]
mod tests;
