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
    #[command(subcommand)]
    cmd: Option<Cmd>,

    /// Nodes as CPU lists separated by ';' (e.g. "0-11;12-23"). Default: one per LLC.
    #[arg(long)]
    node_cpus: Option<String>,

    /// Largest object level the node manager builds (1..3: up to 8 CPUs).
    #[arg(long, default_value_t = 3)]
    max_level: u32,

    /// Where the agent writes its status (read by `scx_chameleon status`).
    #[arg(long, default_value = chameleon::status::DEFAULT_PATH)]
    status_file: std::path::PathBuf,

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

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Show the objects of the running scheduler.
    Status {
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
}

fn status(path: &std::path::Path, json: bool) -> Result<()> {
    let snap = chameleon::status::read(path)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&snap)?);
        return Ok(());
    }
    println!("agent pid {}, nodes {:?}, defragmentation moves {}", snap.agent_pid, snap.nodes, snap.defrag_moves);
    for (pid, level, weight) in &snap.requesters {
        let cpus = snap.objects.iter().find(|o| o.pid == *pid).map(|o| format!("{:?}", o.cpus));
        println!("pid {pid}: level {level} weight {weight} -> {}", cpus.as_deref().unwrap_or("native"));
    }
    Ok(())
}

fn parse_tag(s: &str) -> Result<chameleon::tag::Tag, String> {
    chameleon::tag::parse_tag(s).map_err(|e| format!("{e:#}"))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Some(Cmd::Status { json }) = cli.cmd {
        return status(&cli.status_file, json);
    }
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
        node_cpus: cli.node_cpus,
        max_level: cli.max_level,
        status_path: cli.status_file,
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
