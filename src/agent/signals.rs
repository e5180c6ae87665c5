//! Signals reach the agent's loop as doorbells: SIGINT and SIGTERM ring
//! `Shutdown`, SIGHUP rings the rules reload. A signal-hook thread receives
//! them (its handler only writes to a pipe) and rings the bell, which sets
//! a flag and writes a byte the loop's poll() wakes on: nothing runs inside
//! a signal handler, and a signal never waits for the loop's next timeout.

pub use crate::doorbell::Doorbell;
use anyhow::{Context, Result};
use std::sync::Arc;

/// A request to stop (SIGINT/SIGTERM).
pub type Shutdown = Doorbell;

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

