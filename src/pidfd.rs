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

#[cfg(test)]
mod tests;
