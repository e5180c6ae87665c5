//! scx_chameleon-tools: the viewers of a running scx_chameleon, in a binary
//! of their own so that the daemon links no TUI, async runtime or Perfetto
//! protos. Users type `scx_chameleon top`, `scx_chameleon trace ...` and
//! `scx_chameleon --monitor N`: the daemon's binary execs this one with the
//! same words (and its --control-socket and --status-file), named
//! "scx_chameleon" so that usage and errors read as the command typed.

mod monitor;
mod top;
mod trace;

use anyhow::{Context, Result};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Watch a running scx_chameleon: its CPUs and objects live (`top`), a
/// Perfetto trace of a window (`trace`), its counters every N seconds
/// (`--monitor N`).
#[derive(Debug, Parser)]
#[command(name = "scx_chameleon-tools", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,

    /// The agent's control socket (its event stream).
    #[arg(long, default_value = chameleon::control::DEFAULT_PATH)]
    control_socket: PathBuf,

    /// Where the agent writes its status.
    #[arg(long, default_value = chameleon::report::status::DEFAULT_PATH)]
    status_file: PathBuf,

    /// Print the running scheduler's counters (scx_stats) every N seconds,
    /// one line each with rates and the kernel's event counters that
    /// changed; while no scheduler answers, say so once and keep retrying.
    #[arg(long, value_name = "N", value_parser = parse_interval)]
    monitor: Option<f64>,

    /// With --monitor: one JSON object per line (the schema of
    /// `chameleon::report::metrics::Metrics`), for scripts.
    #[arg(long, requires = "monitor")]
    monitor_json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Watch it live: CPU grid (or one row per node), history sparklines,
    /// execution objects, fuse latency, event log.
    Top {
        /// Key file (default: $XDG_CONFIG_HOME/scx_chameleon/top.toml, else
        /// ~/.config/scx_chameleon/top.toml), e.g. `[keys] quit = "q" view = "v"`.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Record the running scheduler's events for SECONDS into FILE, a Perfetto
    /// trace (open it in ui.perfetto.dev): per CPU, when it was a fused
    /// representative or lent, and the splits; per task, its events.
    Trace {
        /// How long to record, whole seconds (1..=3600; Ctrl-C ends it early).
        #[arg(short = 'd', long = "duration", value_name = "SECONDS",
              value_parser = trace::record::parse_seconds)]
        seconds: u64,
        /// The trace file to write (replaced only once the trace is complete).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: PathBuf,
    },
}

/// An interval in seconds: a finite number from 0 to a day (a Duration built
/// from 1e300 or NaN would panic).
fn parse_interval(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86400.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: expected seconds from 0 to 86400")),
    }
}

fn trace_cmd(socket: &Path, status: &Path, seconds: u64, output: &Path) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("tracing needs root (the agent's control socket is root's only)");
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    // Ctrl-C ends the window early; what was recorded is still written.
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone()).context("installing the SIGINT/SIGTERM handler")?;
    }
    let nr_cpus = *scx_utils::NR_CPU_IDS as u32;
    println!("{}", trace::record::run(socket, status, seconds, output, nr_cpus, &stop)?);
    Ok(())
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Some(Cmd::Top { config }) => return top::run(&cli.control_socket, &cli.status_file, config.as_deref()),
        Some(Cmd::Trace { seconds, output }) => return trace_cmd(&cli.control_socket, &cli.status_file, seconds, &output),
        None => {}
    }
    let Some(every) = cli.monitor else {
        anyhow::bail!("nothing to do: top, trace or --monitor N (see --help)");
    };
    if !(every.is_finite() && every > 0.0) {
        anyhow::bail!("--monitor must be a number of seconds > 0 (got {every})");
    }
    monitor::run(Duration::from_secs_f64(every), cli.monitor_json)
}

fn main() {
    // One line, the whole chain of context, as the daemon's binary says it.
    if let Err(e) = run() {
        eprintln!("scx_chameleon: {e:#}");
        std::process::exit(1);
    }
}
