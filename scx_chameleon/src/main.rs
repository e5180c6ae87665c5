//! scx_chameleon: command-line front end of the agent.

use anyhow::{Context, Result};
use chameleon::{Opts, Scheduler};
use clap::Parser;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::info;

/// A sched_ext scheduler in which a task can borrow neighbouring CPUs to form
/// a faster execution object (Chameleon, ASPLOS'12).
#[derive(Debug, Parser)]
#[command(name = "scx_chameleon", version)]
struct Cli {
    /// Time slice given to a task, in microseconds (100..=1000000).
    #[arg(long, default_value_t = 5000)]
    slice_us: u64,

    /// Print every event the scheduler emits (CPU hotplug, tasks joining/leaving).
    #[arg(long)]
    events: bool,

    /// Print counter totals every this many seconds (0: only at exit).
    #[arg(long, default_value_t = 0.0)]
    stats: f64,

    /// A fused object runs at least this long before a task waiting on one of
    /// its borrowed CPUs may split it (Chameleon §4.3.2).
    #[arg(long, default_value_t = 1000)]
    min_granularity_us: u64,

    /// Tag a cgroup: its tasks want an execution object. CGROUP is a path under
    /// /sys/fs/cgroup; level 1..3 (2^level CPUs), weight 1..10000, tax 0.01..100.
    /// Repeatable.
    #[arg(long = "tag", value_name = "CGROUP=level:L,weight:W,tax:T", value_parser = parse_tag)]
    tags: Vec<chameleon::tag::Tag>,

    /// Log level (error, warn, info, debug, trace).
    #[arg(long, default_value = "info")]
    log_level: String,
}

fn parse_tag(s: &str) -> Result<chameleon::tag::Tag, String> {
    chameleon::tag::parse_tag(s).map_err(|e| format!("{e:#}"))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log_level)
        .with_context(|| format!("invalid --log-level {:?}", cli.log_level))?;
    // Logs go to stderr; stdout carries events and stats for scripts to read.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    if !(cli.stats.is_finite() && cli.stats >= 0.0) {
        anyhow::bail!("--stats must be a number of seconds >= 0 (got {})", cli.stats);
    }
    let opts = Opts {
        slice_us: cli.slice_us,
        print_events: cli.events,
        stats_interval: (cli.stats > 0.0).then(|| Duration::from_secs_f64(cli.stats)),
        min_gran_us: cli.min_granularity_us,
        tags: cli.tags,
    };
    opts.validate()?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the SIGINT/SIGTERM handler")?;

    let mut open_object = MaybeUninit::uninit();
    loop {
        let mut sched = Scheduler::init(&opts, &mut open_object)?;
        let uei = sched.run(shutdown.clone())?;
        drop(sched);
        if !uei.should_restart() {
            info!("scx_chameleon exited");
            break;
        }
        info!("kernel asked for a restart; reloading");
    }
    Ok(())
}
