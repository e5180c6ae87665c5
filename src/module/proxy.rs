//! The agent's side of the companion module (`kmod_proxy/`, /dev/chameleon_proxy):
//! bulk parking of CPUs, duty-cycle emulation, and the module's counters
//! (processor proxies and the interruptions lent CPUs still took).
//!
//! The policy reaches the module through kfuncs on its own (fuse and split
//! lend and reclaim CPUs); the agent only drives what users ask for (park,
//! unpark, --emulate) and reads the counters. Without the module every call
//! here is skipped: parking is then the policy's alone (the CPUs stop being
//! used but never go offline).
//!
//! The module's state belongs to the open file that claimed it (ABI 3): the
//! agent claims before loading the policy (only the owner's process may load
//! a program calling the kfuncs), and whatever way it ends, the state goes
//! with it: RESET when the `Proxy` is dropped, RESET from the panic hook, and
//! in the last resort the module's own cleanup when the file is released
//! (closed, or the process killed).

use crate::report::module_read::{ModuleCounters, ModuleRead};
use crate::report::status::ModuleStatus;
use anyhow::{bail, Context, Result};
use scx_utils::Cpumask;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

#[allow(non_camel_case_types, non_upper_case_globals, dead_code)]
mod uapi {
    include!(concat!(env!("OUT_DIR"), "/proxy_uapi.rs"));
}
pub use uapi::{chameleon_proxy_cpu_stats as CpuStats, chameleon_proxy_stats as Stats};

pub const DEVICE: &str = "/dev/chameleon_proxy";
/// How long a parked CPU stays online before the module takes it offline.
/// An unpark within it costs nothing (no add_cpu(), tens of milliseconds);
/// one second outlasts the node manager's reconcile and a burst of load, and
/// still lets an idle machine shed its CPUs soon.
pub const DEFAULT_HOLDOFF_MS: u32 = 1000;

/// The module's ioctls (chameleon_proxy.h: _IOR/_IOWR/_IOW/_IO on type 0xC7),
/// each with the struct it reads or writes, as nix declares them.
mod ioc {
    use super::uapi;
    const MAGIC: u8 = 0xC7;
    nix::ioctl_read!(info, MAGIC, 0, uapi::chameleon_proxy_info);
    nix::ioctl_readwrite!(park, MAGIC, 1, uapi::chameleon_proxy_park);
    nix::ioctl_readwrite!(unpark, MAGIC, 2, uapi::chameleon_proxy_unpark);
    nix::ioctl_write_ptr!(emulate, MAGIC, 3, uapi::chameleon_proxy_emulate);
    nix::ioctl_readwrite!(stats, MAGIC, 4, uapi::chameleon_proxy_stats);
    nix::ioctl_none!(reset, MAGIC, 5);
    nix::ioctl_readwrite!(claim, MAGIC, 6, uapi::chameleon_proxy_claim);
}

/// The module's reference count: one per open file of the device and per
/// loaded BPF program calling its kfuncs (see `wait_module_unused`).
const REFCNT: &str = "/sys/module/chameleon_proxy/refcnt";

/// The owner's device fd, for the panic hook (-1: none), and the thread that
/// claimed it (see `reset_on_panic`).
static OWNED_FD: AtomicI32 = AtomicI32::new(-1);
static OWNER_TID: AtomicI32 = AtomicI32::new(0);
/// The lowest module reference count seen before one of our opens of the
/// device (u64::MAX: never opened with the module loaded).
static REFS_BEFORE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Emulated speed-up of fused objects (`--emulate`): the module's categories.
/// Duty cycles (a plain CPU, a level-1 representative, level 2): low 50 %,
/// 62.5 %, 75 %; med 50 %, 75 %, 87.5 %; high 50 %, 75 %, 100 % (Chameleon's
/// Table 2, "Dynamic").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emulate {
    Low,
    Med,
    High,
}

impl std::str::FromStr for Emulate {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "low" => Ok(Emulate::Low),
            "med" => Ok(Emulate::Med),
            "high" => Ok(Emulate::High),
            _ => Err(format!("'{s}': low, med or high")),
        }
    }
}

/// What CLAIM found left behind with no owner (a cleanup step that failed,
/// state made while no agent held the device), and undid.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claimed {
    /// CHAMELEON_PROXY_FOUND_* bits.
    pub found: u64,
    /// CPUs brought back online.
    pub nr_offlined: u32,
    /// IRQs given their affinity back.
    pub nr_irqs: u32,
    /// This ownership's generation: the policy passes it to the module's
    /// kfuncs, which refuse it once the ownership has ended (ABI 4).
    pub generation: u64,
}

impl Claimed {
    /// What was repaired, for the log ("2 CPUs back online, 3 IRQs
    /// restored, emulation stopped"); None if nothing was found.
    pub fn repaired(&self) -> Option<String> {
        if self.found == 0 {
            return None;
        }
        let plural = |n: u32, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut what = Vec::new();
        let known = [
            (u64::from(uapi::CHAMELEON_PROXY_FOUND_PARKED), "parked CPUs unparked".to_string()),
            (u64::from(uapi::CHAMELEON_PROXY_FOUND_OFFLINED), format!("{} back online", plural(self.nr_offlined, "CPU"))),
            (u64::from(uapi::CHAMELEON_PROXY_FOUND_LENT), "lent CPUs reclaimed".to_string()),
            (u64::from(uapi::CHAMELEON_PROXY_FOUND_IRQS), format!("{} restored", plural(self.nr_irqs, "IRQ"))),
            (u64::from(uapi::CHAMELEON_PROXY_FOUND_EMULATING), "emulation stopped".to_string()),
        ];
        let mut rest = self.found;
        for (bit, text) in known {
            if self.found & bit != 0 {
                what.push(text);
                rest &= !bit;
            }
        }
        // A newer module's finding, still worth a mention.
        if rest != 0 {
            what.push(format!("other state {rest:#x}"));
        }
        Some(what.join(", "))
    }
}

pub struct Proxy {
    dev: std::fs::File,
    nr_cpu_ids: u32,
    /// CLAIM succeeded: the module's state is ours, and RESET on drop. A
    /// file that never claimed must not send it: while nobody owns the
    /// module, RESET would make it the owner.
    owner: AtomicBool,
}

impl Proxy {
    /// The module's device, if it is loaded; an error if it is there but
    /// speaks another ABI.
    pub fn open() -> Result<Option<Proxy>> {
        // Before our open and our policy add theirs (wait_module_unused).
        if let Some(n) = module_refcnt() {
            REFS_BEFORE.fetch_min(n, Ordering::SeqCst);
        }
        let dev = match std::fs::OpenOptions::new().read(true).write(true).open(DEVICE) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("opening {DEVICE}")),
        };
        let mut info = uapi::chameleon_proxy_info::default();
        let mut proxy = Proxy { dev, nr_cpu_ids: 0, owner: AtomicBool::new(false) };
        // SAFETY: INFO writes one chameleon_proxy_info, a live local.
        unsafe { ioc::info(proxy.fd(), &mut info) }.context("INFO")?;
        if info.abi_version != uapi::CHAMELEON_PROXY_ABI_VERSION {
            bail!(
                "chameleon_proxy speaks ABI {}, this agent needs {}: rebuild and reload the module (rmmod chameleon_proxy; insmod chameleon_proxy.ko)",
                info.abi_version,
                uapi::CHAMELEON_PROXY_ABI_VERSION
            );
        }
        proxy.nr_cpu_ids = info.nr_cpu_ids;
        Ok(Some(proxy))
    }

    fn fd(&self) -> std::os::fd::RawFd {
        self.dev.as_raw_fd()
    }

    /// CLAIM: the module's state becomes this file's, after the module has
    /// undone what a previous owner left (its release's cleanup, or what it
    /// could not undo). Before loading the policy: the module lets only the
    /// owner's process load programs calling its kfuncs.
    pub fn claim(&self) -> Result<Claimed> {
        let mut c = uapi::chameleon_proxy_claim::default();
        // SAFETY: CLAIM reads and writes one chameleon_proxy_claim, a live local.
        match unsafe { ioc::claim(self.fd(), &mut c) } {
            Ok(_) => {}
            Err(nix::errno::Errno::EBUSY) => bail!("{}", self.owned_by_another()),
            Err(e) => return Err(e).context("CLAIM"),
        }
        self.owner.store(true, Ordering::SeqCst);
        // SAFETY: gettid has no preconditions.
        OWNER_TID.store(unsafe { libc::gettid() }, Ordering::SeqCst);
        OWNED_FD.store(self.dev.as_raw_fd(), Ordering::SeqCst);
        install_panic_hook();
        Ok(Claimed { found: c.found, nr_offlined: c.nr_offlined, nr_irqs: c.nr_irqs, generation: c.generation })
    }

    /// Why CLAIM was refused: who owns the module (STATS says, to anyone).
    fn owned_by_another(&self) -> String {
        let pid = self.stats().map(|(st, _)| st.owner_pid).unwrap_or(0);
        if pid == 0 {
            // Released between the CLAIM and the STATS.
            return format!("another process owned {DEVICE} a moment ago: try again");
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|c| format!(", {}", c.trim())).unwrap_or_default();
        format!("another process (pid {pid}{comm}) owns {DEVICE}: stop it first")
    }

    /// Every CPU unparked and back online, every lend ended, emulation off:
    /// what the module looks like when no agent runs.
    pub fn reset(&self) -> Result<()> {
        // SAFETY: RESET takes no argument.
        unsafe { ioc::reset(self.fd()) }.context("RESET")?;
        Ok(())
    }

    pub fn emulate(&self, how: Option<Emulate>) -> Result<()> {
        let mut e = uapi::chameleon_proxy_emulate::default();
        if let Some(how) = how {
            e.on = 1;
            e.category = match how {
                Emulate::Low => uapi::CHAMELEON_PROXY_CAT_LOW,
                Emulate::Med => uapi::CHAMELEON_PROXY_CAT_MED,
                Emulate::High => uapi::CHAMELEON_PROXY_CAT_HIGH,
            };
        }
        // SAFETY: EMULATE reads one chameleon_proxy_emulate, a live local.
        unsafe { ioc::emulate(self.fd(), &e) }.context("EMULATE")?;
        Ok(())
    }

    /// `cpus` as the module reads a mask: one word per 64 CPU ids, as many
    /// words as its nr_cpu_ids needs.
    fn mask(&self, cpus: &[usize]) -> Result<Cpumask> {
        let mut m = Cpumask::from_vec(vec![0; self.nr_cpu_ids.div_ceil(64) as usize]);
        for &c in cpus {
            m.set_cpu(c).with_context(|| format!("CPU {c}: the module has CPU ids 0-{}", self.nr_cpu_ids.saturating_sub(1)))?;
        }
        Ok(m)
    }

    /// PARK: returns the module's synchronous part in ns.
    pub fn park(&self, cpus: &[usize], holdoff_ms: u32) -> Result<u64> {
        let mask = self.mask(cpus)?;
        let words = mask.as_raw_slice();
        let mut p = uapi::chameleon_proxy_park {
            mask: words.as_ptr() as u64,
            mask_words: words.len() as u32,
            holdoff_ms,
            ..Default::default()
        };
        // SAFETY: PARK reads and writes one chameleon_proxy_park, a live
        // local, and only reads the mask its pointer and size describe
        // (`mask`, alive until the call returns).
        unsafe { ioc::park(self.fd(), &mut p) }.context("PARK")?;
        Ok(p.critical_ns)
    }

    /// UNPARK: returns the module's synchronous part in ns.
    pub fn unpark(&self, cpus: &[usize]) -> Result<u64> {
        let mask = self.mask(cpus)?;
        let words = mask.as_raw_slice();
        let mut u = uapi::chameleon_proxy_unpark {
            mask: words.as_ptr() as u64,
            mask_words: words.len() as u32,
            ..Default::default()
        };
        // SAFETY: as PARK's, with chameleon_proxy_unpark.
        unsafe { ioc::unpark(self.fd(), &mut u) }.context("UNPARK")?;
        Ok(u.critical_ns)
    }

    /// The module's counters and one entry per CPU id.
    pub fn stats(&self) -> Result<(Stats, Vec<CpuStats>)> {
        let mut cpus = vec![CpuStats::default(); self.nr_cpu_ids as usize];
        let mut st = Stats {
            cpus: cpus.as_mut_ptr() as u64,
            nr_cpus: self.nr_cpu_ids,
            cpu_size: std::mem::size_of::<CpuStats>() as u32,
            ..Default::default()
        };
        // SAFETY: STATS reads and writes one chameleon_proxy_stats, a live
        // local, and fills nr_cpus entries of cpu_size bytes at cpus: a
        // live Vec of that many CpuStats.
        unsafe { ioc::stats(self.fd(), &mut st) }.context("STATS")?;
        Ok((st, cpus))
    }
}

impl Drop for Proxy {
    /// Nothing of ours outlives us: RESET before the file closes. The
    /// module's release would undo it too; this says so in our log if it
    /// fails, and leaves the release nothing to do.
    fn drop(&mut self) {
        if !self.owner.load(Ordering::SeqCst) {
            return;
        }
        // Before the fd closes: the hook must not reach a closed (or reused) one.
        let _ = OWNED_FD.compare_exchange(self.dev.as_raw_fd(), -1, Ordering::SeqCst, Ordering::SeqCst);
        if let Err(e) = self.reset() {
            warn!("chameleon_proxy RESET: {e:#}");
        }
    }
}

/// The panic hook: RESET on the owner's fd, after the previous hook (the
/// message comes first, whatever RESET costs). Installed once, at the first
/// claim. It runs whichever panic strategy the binary was built with: with
/// "abort" (not our release profile, which unwinds) it is the only reset
/// before the kernel's release; with "unwind" the `Proxy`'s drop resets as
/// well, and the hook covers a panic while unwinding.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            reset_on_panic();
        }));
    });
}

fn reset_on_panic() {
    let fd = OWNED_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    // Unwinding, a panic ends only its own thread: one in a helper thread
    // (the stats server) leaves the agent running, and its parks and
    // emulation must stay. The claiming thread's panic ends the agent.
    // SAFETY: gettid has no preconditions.
    if cfg!(panic = "unwind") && unsafe { libc::gettid() } != OWNER_TID.load(Ordering::SeqCst) {
        return;
    }
    // SAFETY: RESET takes no argument; fd is the owner's device, still open
    // (Drop clears OWNED_FD before closing it).
    if let Err(e) = unsafe { ioc::reset(fd) } {
        warn!("chameleon_proxy RESET after the panic: {e}");
    } else {
        info!("chameleon_proxy reset after the panic");
    }
}

fn module_refcnt() -> Option<u64> {
    std::fs::read_to_string(REFCNT).ok()?.trim().parse().ok()
}

/// Longest wait for the module's references to go (wait_module_unused).
const UNUSED_WAIT: Duration = Duration::from_secs(5);
const UNUSED_POLL: Duration = Duration::from_millis(10);

/// Before the agent exits: until the module's reference count is back to
/// what it was before we opened the device and loaded the policy. The kernel
/// puts a BPF program's module reference only after an RCU grace period, so
/// `rmmod chameleon_proxy` right after the agent exited failed (EAGAIN) for
/// about 0.6 s. No wait if the module was never there (or is gone).
pub fn wait_module_unused() {
    let before = REFS_BEFORE.load(Ordering::SeqCst);
    if before == u64::MAX {
        return;
    }
    match wait_refs(module_refcnt, before, UNUSED_WAIT, UNUSED_POLL) {
        Ok(waited) => debug!("chameleon_proxy: our references gone after {} ms", waited.as_millis()),
        Err(now) => warn!(
            "chameleon_proxy: still {now} references after {} s ({before} before the agent): rmmod may fail until they go",
            UNUSED_WAIT.as_secs()
        ),
    }
}

/// Poll `refcnt` until it is at most `before` (or unreadable: the module is
/// gone): how long that took, or the count still there at `timeout`.
fn wait_refs(mut refcnt: impl FnMut() -> Option<u64>, before: u64, timeout: Duration, poll: Duration) -> std::result::Result<Duration, u64> {
    let t0 = Instant::now();
    loop {
        match refcnt() {
            Some(n) if n > before => {
                if t0.elapsed() >= timeout {
                    return Err(n);
                }
                std::thread::sleep(poll);
            }
            _ => return Ok(t0.elapsed()),
        }
    }
}

impl Proxy {
    /// The module's state and numbers, from one STATS.
    pub fn read(&self, kfuncs: bool) -> Result<ModuleRead> {
        let (st, cpus) = self.stats()?;
        let mut state = ModuleStatus { kfuncs, ..Default::default() };
        let mut counters = ModuleCounters {
            lends: st.lends,
            reclaims: st.reclaims,
            irqs_moved: st.irqs_moved,
            managed_skipped: st.managed_skipped,
            park_critical_ns: st.park_critical_ns,
            park_physical_ns: st.park_physical_ns,
            unpark_critical_ns: st.unpark_critical_ns,
            unpark_physical_ns: st.unpark_physical_ns,
            ..Default::default()
        };
        for (cpu, c) in cpus.iter().enumerate() {
            if c.proxied_by >= 0 {
                state.proxies.push((cpu, c.proxied_by));
            }
            counters.lent_irqs += c.irqs + c.live_irqs;
            counters.lent_softirqs += c.softirqs + c.live_softirqs;
            counters.lent_ipis += c.ipis + c.live_ipis;
            counters.lent_timers += c.timers + c.live_timers;
            if c.flags & uapi::CHAMELEON_PROXY_CPU_OFFLINED != 0 {
                state.offlined.push(cpu);
            }
        }
        if st.emulate_on != 0 {
            state.emulate = Some(["low", "med", "high"].get(st.emulate_category as usize).unwrap_or(&"?").to_string());
            state.duty = cpus.iter().map(|c| c.duty_pm).collect();
        }
        Ok(ModuleRead { state, counters })
    }
}

#[cfg(test)]
mod tests;
