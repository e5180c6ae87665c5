//! Opening, loading and attaching the BPF policy, and the agent's main loop.
//!
//! The shape follows scx_rusty: `Scheduler::init` opens, configures, loads and
//! attaches; `Scheduler::run` serves events and counters until shutdown or until
//! the kernel ejects the policy, and returns the exit info so that the caller
//! can restart when the kernel asks for it (`should_restart()`).

use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::event::Event;
use crate::stats::Totals;
use anyhow::{bail, Context, Result};
use libbpf_rs::{Link, OpenObject, RingBufferBuilder};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, UserExitInfo};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};

use crate::bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as MAX_CPUS;

/// Settings the agent passes to the policy and to its own loop.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Time slice of a task, in microseconds.
    pub slice_us: u64,
    /// Print every event the policy emits.
    pub print_events: bool,
    /// Print counter totals this often (None: only at exit).
    pub stats_interval: Option<Duration>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts { slice_us: 5000, print_events: false, stats_interval: None }
    }
}

impl Opts {
    /// Refuse settings the policy cannot honour, with a reason a person can act on.
    pub fn validate(&self) -> Result<()> {
        if !(100..=1_000_000).contains(&self.slice_us) {
            bail!("--slice-us must be between 100 and 1000000 (got {})", self.slice_us);
        }
        Ok(())
    }
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<Link>,
    opts: Opts,
    nr_cpus: usize,
}

impl<'a> Scheduler<'a> {
    pub fn init(opts: &Opts, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        opts.validate()?;
        let nr_cpus = *scx_utils::NR_CPU_IDS;
        if nr_cpus > MAX_CPUS as usize {
            bail!("{nr_cpus} possible CPUs; scx_chameleon supports at most {MAX_CPUS}");
        }

        let builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(builder, open_object, chameleon_ops, None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>)?;
        let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
        rodata.slice_ns = opts.slice_us * 1000;
        rodata.nr_cpus = nr_cpus as u32;

        let mut skel = scx_ops_load!(skel, chameleon_ops, uei)?;
        let struct_ops = Some(scx_ops_attach!(skel, chameleon_ops)?);
        info!("scx_chameleon attached: {} CPUs, slice {} us", nr_cpus, opts.slice_us);
        Ok(Scheduler { skel, struct_ops, opts: opts.clone(), nr_cpus })
    }

    fn totals(&self) -> Totals {
        let bss = self.skel.maps.bss_data.as_ref().expect(".bss is mapped");
        Totals::sum(&bss.cpu_stats[..self.nr_cpus])
    }

    /// Serve until `shutdown` is set or the policy exits; returns how it exited.
    pub fn run(&mut self, shutdown: Arc<AtomicBool>) -> Result<UserExitInfo> {
        let print_events = self.opts.print_events;
        let mut rb = RingBufferBuilder::new();
        let mut nr_events = 0u64;
        let counter = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let seen = counter.clone();
        rb.add(&self.skel.maps.events, move |data: &[u8]| {
            seen.set(seen.get() + 1);
            match Event::parse(data) {
                Some(ev) if print_events => println!("event {ev}"),
                Some(_) => {}
                None => warn!("short event record ({} bytes): agent and policy disagree", data.len()),
            }
            0
        })?;
        let rb = rb.build()?;

        let start = Totals::default();
        let mut last = start;
        let mut last_print = Instant::now();
        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            // EINTR from a signal is how SIGINT/SIGTERM reach us: not an error.
            if let Err(e) = rb.poll(Duration::from_millis(100)) {
                if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                    return Err(e).context("polling the event ring buffer");
                }
            }
            if let Some(every) = self.opts.stats_interval {
                if last_print.elapsed() >= every {
                    let now = self.totals();
                    println!("stats {}", now.since(&last));
                    last = now;
                    last_print = Instant::now();
                }
            }
        }
        let _ = rb.consume();
        nr_events += counter.get();
        let bss = self.skel.maps.bss_data.as_ref().expect(".bss is mapped");
        println!(
            "summary events={} dropped={} cpu_online={} cpu_offline={} {}",
            nr_events,
            bss.nr_events_dropped,
            bss.nr_cpu_online_events,
            bss.nr_cpu_offline_events,
            self.totals().since(&start)
        );

        // Detach before reading the exit info so that a SIGTERM exit reads as
        // "unregistered from user space" rather than "still running".
        self.struct_ops.take();
        uei_report!(&self.skel, uei)
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        if self.struct_ops.take().is_some() {
            info!("scx_chameleon detached");
        }
    }
}
