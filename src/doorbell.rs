//! A doorbell: one thread asks, another's poll() wakes. A flag says what
//! was asked and a byte on a socket pair wakes the poll; used for the
//! signals (signals.rs), for what helper threads hand the agent's loop
//! (inbox.rs) and to stop the control socket's acceptor (control.rs). A
//! leaf, so that each of them can use it without using the others.

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A request from another thread that also wakes the agent's loop.
pub struct Doorbell {
    flag: AtomicBool,
    wake: (UnixStream, UnixStream),
}


impl Doorbell {
    pub fn new() -> Result<Arc<Doorbell>> {
        let wake = UnixStream::pair().context("creating a wakeup socket pair")?;
        wake.0.set_nonblocking(true)?;
        wake.1.set_nonblocking(true)?;
        Ok(Arc::new(Doorbell { flag: AtomicBool::new(false), wake }))
    }

    pub fn request(&self) {
        self.flag.store(true, Ordering::Relaxed);
        // Full means a wakeup is pending already.
        let _ = (&self.wake.0).write(&[1]);
    }

    /// Whether it was rung (and stays so: shutdown).
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Whether it was rung since the last take; clears it. The wakeup bytes
    /// are drained first, so a ring racing with this is never lost: at
    /// worst it wakes the loop once more for nothing.
    pub fn take(&self) -> bool {
        let mut buf = [0u8; 64];
        while matches!((&self.wake.1).read(&mut buf), Ok(n) if n > 0) {}
        self.flag.swap(false, Ordering::Relaxed)
    }

    /// Readable while a wakeup is pending (poll it with the loop's others).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.wake.1.as_fd()
    }
}

#[cfg(test)]
mod tests;
