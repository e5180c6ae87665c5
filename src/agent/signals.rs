//! Signals reach the agent's loop as doorbells: SIGINT and SIGTERM ring
//! `Shutdown`, SIGHUP rings the rules reload. A signal-hook thread receives
//! them (its handler only writes to a pipe) and rings the bell, which sets
//! a flag and writes a byte the loop's poll() wakes on: nothing runs inside
//! a signal handler, and a signal never waits for the loop's next timeout.

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

/// A request to stop (SIGINT/SIGTERM).
pub type Shutdown = Doorbell;

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

/// Route SIGINT and SIGTERM to `shutdown`, SIGHUP to `hup`, from a thread
/// of their own, for the rest of the process's life.
pub fn install(shutdown: Arc<Doorbell>, hup: Arc<Doorbell>) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing the SIGINT/SIGTERM/SIGHUP handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                match sig {
                    SIGHUP => hup.request(),
                    _ => shutdown.request(),
                }
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

#[cfg(test)]
mod tests;
