//! The companion module's ioctls, on a thread of their own. STATS (once a
//! second: one read feeds both the status's view and the metrics) and PARK/UNPARK take the
//! module's mutex, which a CPU going offline or coming back holds for as
//! long as the hotplug takes: milliseconds, far more under emulation. The
//! loop must not wait on it, so it asks here and reads the answer later:
//! the latest STATS in `latest`, a park's outcome through its inbox
//! (ToLoop::ModuleDone), in the order asked.

use crate::agent::inbox::{Mailbox, ToLoop};
use crate::module::proxy::Proxy;
use crate::report::module_read::ModuleRead;
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracing::warn;

/// How often the module's counters are read.
pub const STATS_EVERY: Duration = Duration::from_secs(1);

pub enum ModCmd {
    /// PARK (`holdoff_ms` given) or UNPARK `cpus`; the outcome goes to the
    /// loop as ModuleDone { id }.
    Park { id: u64, cpus: Vec<usize>, holdoff_ms: Option<u32> },
    Stop,
}

pub struct ModuleWorker {
    tx: Sender<ModCmd>,
    thread: Option<JoinHandle<()>>,
    /// The module's state and numbers as last read (None until the first
    /// read, or while STATS fails).
    pub latest: Arc<Mutex<Option<ModuleRead>>>,
    /// Whether the policy's kfuncs are bound (the loop sets it from .bss).
    pub kfuncs: Arc<AtomicBool>,
}

impl ModuleWorker {
    pub fn start(proxy: Arc<Proxy>, kfuncs: bool, mailbox: Mailbox) -> Result<ModuleWorker> {
        let (tx, rx) = channel();
        let latest = Arc::new(Mutex::new(None));
        let kfuncs = Arc::new(AtomicBool::new(kfuncs));
        let (out, bound) = (latest.clone(), kfuncs.clone());
        let thread = std::thread::Builder::new()
            .name("module".into())
            .spawn(move || {
                let mut next_stats = Instant::now();
                loop {
                    let now = Instant::now();
                    if now >= next_stats {
                        let st = proxy.read(bound.load(Ordering::Relaxed)).map_err(|e| warn!("chameleon_proxy STATS: {e:#}")).ok();
                        *out.lock().unwrap_or_else(|e| e.into_inner()) = st;
                        next_stats = now + STATS_EVERY;
                    }
                    match rx.recv_timeout(next_stats.saturating_duration_since(Instant::now())) {
                        Ok(ModCmd::Park { id, cpus, holdoff_ms }) => {
                            let result = match holdoff_ms {
                                Some(h) => proxy.park(&cpus, h),
                                None => proxy.unpark(&cpus),
                            };
                            mailbox.send(ToLoop::ModuleDone { id, result: result.map_err(|e| format!("{e:#}")) });
                        }
                        Ok(ModCmd::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                        Err(RecvTimeoutError::Timeout) => {}
                    }
                }
            })
            .context("starting the module thread")?;
        Ok(ModuleWorker { tx, thread: Some(thread), latest, kfuncs })
    }

    /// Ask for a park or unpark; false if the worker is gone.
    pub fn park(&self, id: u64, cpus: Vec<usize>, holdoff_ms: Option<u32>) -> bool {
        self.tx.send(ModCmd::Park { id, cpus, holdoff_ms }).is_ok()
    }

    pub fn latest(&self) -> Option<ModuleRead> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stop after the ioctl under way; the worker's hold on the module
    /// (its Arc) goes with it.
    pub fn stop(&mut self) {
        let _ = self.tx.send(ModCmd::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ModuleWorker {
    fn drop(&mut self) {
        self.stop();
    }
}
