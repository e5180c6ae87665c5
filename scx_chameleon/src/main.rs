//! scx_chameleon: command-line front end of the agent.

use anyhow::{Context, Result};
use chameleon::{Opts, Scheduler};
use clap::Parser;
use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::sync::LazyLock;
use std::time::Duration;
use tracing::info;

/// The build id `-V` prints, as the scx schedulers print theirs (scx_utils):
/// "VERSION-gCOMMIT[-dirty] TARGET[/debug]". The commit is the SCX_GIT_SHA
/// (and SCX_GIT_DIRTY) that scx_utils was compiled with: scripts/cargo-in-root
/// sets them from the host's git (the toolchain root has none); a build
/// without them leaves the commit out.
static BUILD_ID: LazyLock<String> = LazyLock::new(|| scx_utils::build_id::full_version(env!("CARGO_PKG_VERSION")));

/// A sched_ext scheduler in which a task can borrow neighbouring CPUs to form
/// a faster execution object (Chameleon, ASPLOS'12).
#[derive(Debug, Parser)]
#[command(name = "scx_chameleon", version = BUILD_ID.as_str())]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,

    /// Verbose: debug logs and libbpf's warnings and messages; twice (-vv):
    /// trace logs and libbpf's debug output (the verifier's log on a failed load).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    verbose: u8,

    /// Size of the kernel's debug dump printed when the scheduler exits with
    /// an error (our objects, lent CPUs and waiters are in it), in bytes
    /// (0: the kernel's default; at most 16 MiB).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=16 << 20))]
    exit_dump_len: u32,

    /// An identifier of this run, reported in stats, the status file and the
    /// log, to tell runs apart in collected metrics (default: none).
    #[arg(long)]
    run_id: Option<u64>,

    /// Describe every statistic `--monitor` and `metrics` report, and exit.
    #[arg(long)]
    help_stats: bool,

    #[command(flatten)]
    libbpf: scx_utils::libbpf_clap_opts::LibbpfOpts,

    /// Print the BPF verifier's log of every program as it loads (libbpf's
    /// debug output, to stderr): which functions cost the instructions
    /// reported in the `verifier:` line.
    #[arg(long)]
    verifier_log: bool,

    /// Test only: make the policy report an error (scx_bpf_error) this many
    /// milliseconds after attaching, to check the exit path and its dump.
    #[arg(long, hide = true, value_name = "MS")]
    test_error_after_ms: Option<u64>,

    /// Test only: panic in the agent's main loop this many milliseconds
    /// after it started, to check what a panic leaves of the module's state.
    #[arg(long, hide = true, value_name = "MS")]
    test_panic_after_ms: Option<u64>,

    /// Nodes as CPU lists separated by ';' (e.g. "0-11;12-23"). Default: one per LLC.
    #[arg(long)]
    node_cpus: Option<String>,

    /// CPU capacities overriding the kernel's, "CPULIST=CAP" items separated by ';'
    /// (e.g. "0-3=1024;4-11=512"; 1..1024): hybrid CPUs, or testing as one.
    #[arg(long, value_name = "CPULIST=CAP;...")]
    cpu_capacity: Option<String>,

    /// Let objects mix cores of different capacities (P and E cores); by default
    /// an LLC is split into one node per capacity, fastest first.
    #[arg(long)]
    mix_core_types: bool,

    /// Largest object level the node manager builds (1..3: up to 8 CPUs).
    #[arg(long, default_value_t = 3)]
    max_level: u32,

    /// The agent's control socket (tag/untag apply through it at once).
    #[arg(long, default_value = chameleon::control::DEFAULT_PATH)]
    control_socket: std::path::PathBuf,

    /// Where the agent writes its status, the view without the counters (read
    /// by `scx_chameleon status` when the agent does not answer).
    #[arg(long, default_value = chameleon::report::status::DEFAULT_PATH)]
    status_file: std::path::PathBuf,

    /// Time slice given to a task, in microseconds (100..=1000000; by
    /// default the kernel's SCX_SLICE_DFL, 20 ms: a waking task that trails
    /// the running one still takes the CPU within --wake-gran-us).
    #[arg(long, default_value_t = 20000)]
    slice_us: u64,

    /// Leave every CPU's performance target at the kernel's default (full)
    /// instead of full on a fused representative, none on its lent CPUs and
    /// the recent use elsewhere.
    #[arg(long)]
    no_cpuperf: bool,

    /// Untagged tasks that may run anywhere in an LLC of NATIVE CPUs wait in
    /// the LLC's shared queue instead of their CPU's own (experimental: at 64
    /// vCPUs it costs more per hackbench message than per-CPU queues, and once
    /// left tasks waiting until the kernel's watchdog ejected the scheduler;
    /// see bench/README.md).
    #[arg(long)]
    llc_queues: bool,

    /// Disable NUMA awareness: one idle mask for the machine instead of the
    /// kernel's per-node masks (SCX_OPS_BUILTIN_IDLE_PER_NODE, used where
    /// there is more than one node), as scx_bpfland's and scx_cosmos's flag.
    #[arg(long)]
    disable_numa: bool,

    /// Print every event the scheduler emits (CPU hotplug, tasks joining/leaving).
    #[arg(long)]
    events: bool,

    /// Print counter totals every this many seconds (0: only at exit; at most 86400).
    #[arg(long, default_value_t = 0.0, value_parser = parse_interval)]
    stats: f64,

    /// A fused object runs at least this long before a task waiting on one of
    /// its borrowed CPUs may split it (Chameleon §4.3.2).
    #[arg(long, default_value_t = 1000)]
    min_granularity_us: u64,

    /// A waking task takes the CPU at once from a running task it trails by
    /// more than this much of that task's run (and that ran this long); 0
    /// never preempts on wakeup: the waker waits for the slice to end.
    #[arg(long, default_value_t = 1000)]
    wake_gran_us: u64,

    /// A task waiting on a lent CPU gets it back after this many milliseconds,
    /// whatever the virtual times say, and runs before it is lent again.
    #[arg(long, default_value_t = 50)]
    lend_wait_ms: u64,

    /// The kernel's watchdog: a task left runnable this long without running
    /// ejects the scheduler, with a dump of its state (1000..=30000; the
    /// scheduler's own bounds keep every wait under a second). The tests run
    /// with it lower, to catch a stranded task while it happens.
    #[arg(long, default_value_t = 10000)]
    watchdog_timeout_ms: u32,

    /// Tag a cgroup: its tasks want an execution object. CGROUP is a path under
    /// /sys/fs/cgroup; level 1..3 (2^level CPUs), weight 1..10000 (default: cpu.weight), tax 0.01..100
    /// or auto (each task's, from its measured speed-up), smt uni|smt|kwork|any, prio high|normal.
    /// Repeatable.
    #[arg(long = "tag", value_name = "CGROUP=level:L,weight:W,tax:T,prio:P", value_parser = parse_tag)]
    tags: Vec<chameleon::tags::tag::Tag>,

    /// Rules file (TOML): tags for cgroups by path, unit, slice, process name
    /// or uid, applied to cgroups as they appear; re-read on SIGHUP and by
    /// `scx_chameleon reload-rules`. A bad file stops the start (file:line:
    /// field); on reload it is refused and the rules in force stay.
    #[arg(long, value_name = "FILE")]
    rules: Option<std::path::PathBuf>,

    /// Accounting period of the fast contexts, in milliseconds (5..=1000): when
    /// requesters outnumber the pairs, who holds them is decided again this
    /// often (AASH's 30 ms), so each moves at most once per period.
    #[arg(long, default_value_t = 30)]
    share_period_ms: u64,

    /// Low-parallelism boost: a cgroup with at most this many awake requesters
    /// is served with the high-priority class (0: no boost; at most 1024).
    #[arg(long, default_value_t = 1)]
    boost_threshold: usize,

    /// Do not schedule: print the running scheduler's counters (scx_stats) every N
    /// seconds, one line each with rates and the kernel's event counters that
    /// changed; while no scheduler answers, say so once and keep retrying.
    #[arg(long, value_name = "N")]
    monitor: Option<OsString>,

    /// With --monitor: one JSON object per line (the schema of
    /// `chameleon::report::metrics::Metrics`), for scripts.
    #[arg(long, requires = "monitor")]
    monitor_json: bool,

    /// Emulate fused processors by duty cycles (needs the chameleon_proxy
    /// module): every CPU runs part of the time, a fused representative more.
    /// Every CPU 50 %; level 1 62.5/75/75 %, level 2 75/87.5/100 % for
    /// low/med/high (Chameleon Table 2, "Dynamic").
    #[arg(long, value_name = "low|med|high", value_parser = parse_emulate)]
    emulate: Option<chameleon::module::proxy::Emulate>,

    /// Bench only: ignore task-exit events (Chameleon Fig. 6 "3*").
    #[arg(long, hide = true)]
    no_exit_notice: bool,

    /// Log level (error, warn, info, debug, trace; -v raises it).
    #[arg(long, default_value = "info")]
    log_level: String,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Tag a cgroup (stored on the cgroup itself, as the xattr trusted.chameleon.tag):
    /// its tasks, and those of descendants without their own tag, want an
    /// execution object. Unset fields keep the cgroup's current value (or the default).
    Tag {
        /// cgroup v2 path, absolute or relative to /sys/fs/cgroup.
        cgroup: String,
        /// 1..3: an object of 2^level CPUs (default 1).
        #[arg(long, value_parser = chameleon::tags::tag::arg::level)]
        level: Option<u32>,
        /// 1..10000: claim on contended CPUs, as cpu.weight W x 100 (default: the cgroup's cpu.weight).
        #[arg(long, value_parser = chameleon::tags::tag::arg::weight)]
        weight: Option<u32>,
        /// 0.01..100: cost of borrowed time (default 1); auto: each task's, set from its
        /// measured speed-up when fused.
        #[arg(long, value_parser = chameleon::tags::tag::arg::tax)]
        tax: Option<u32>,
        /// uni (sibling idle), smt (share the core, never fuse), kwork (user work here,
        /// kernel work on the sibling) or any (default).
        #[arg(long, value_parser = chameleon::tags::tag::arg::smt)]
        smt: Option<chameleon::tags::tag::Smt>,
        /// high (served first on contended fast contexts) or normal (default).
        #[arg(long, value_parser = chameleon::tags::tag::arg::prio)]
        prio: Option<chameleon::tags::tag::Prio>,
    },
    /// Remove a cgroup's own tag (descendants then inherit from above, if anything).
    Untag {
        cgroup: String,
    },
    /// List every tag in force and where it comes from (stored, --tag, a
    /// rule of the rules file, inherited); asks the running agent.
    Tags,
    /// Re-read the running agent's rules file (as SIGHUP does); a bad file is
    /// refused with its line and field, and the rules in force stay.
    ReloadRules,
    /// Watch it live: CPU grid (or one row per node), history sparklines,
    /// execution objects, fuse latency, event log.
    #[command(disable_help_flag = true)]
    Top {
        /// Handed to scx_chameleon-tools (`scx_chameleon top --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Print the running scheduler's counters in the OpenMetrics text format.
    Metrics,
    /// Stream the running scheduler's events (fuse, split, ...), one per line.
    Events {
        /// One JSON object per line (the schema of `chameleon::report::event::Event`).
        #[arg(long)]
        json: bool,
    },
    /// Park CPUs (a list like 2-3,6): the scheduler stops using them at once;
    /// with the chameleon_proxy module their IRQs move off them and they go
    /// offline after the hold-off, unless unparked first.
    Park {
        #[arg(value_parser = chameleon::cpulist::arg)]
        cpus: chameleon::cpulist::CpuList,
        /// Milliseconds before the module takes them offline (0: at once; at
        /// most 3600000).
        #[arg(long, default_value_t = chameleon::module::proxy::DEFAULT_HOLDOFF_MS,
              value_parser = clap::value_parser!(u32).range(0..=3_600_000))]
        holdoff_ms: u32,
    },
    /// Give parked CPUs back (at once if they are still online).
    Unpark {
        #[arg(value_parser = chameleon::cpulist::arg)]
        cpus: chameleon::cpulist::CpuList,
    },
    /// Record the running scheduler's events for SECONDS into FILE, a Perfetto
    /// trace (open it in ui.perfetto.dev): per CPU, when it was a fused
    /// representative or lent, and the splits; per task, its events.
    #[command(disable_help_flag = true)]
    Trace {
        /// Handed to scx_chameleon-tools (`scx_chameleon trace --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Show the objects of the running scheduler (asked of the agent; its status
    /// file if it does not answer) and its counters (from the scx_stats socket).
    Status {
        /// Print JSON: the view, with the counters under "counters" as the
        /// scx_stats socket serves them (`--help-stats` lists the fields), or
        /// null and the reason under "counters_unavailable".
        #[arg(long)]
        json: bool,
    },
}

/// The agent's state, asked of the agent itself; if it does not answer
/// (not running, not root, stuck), what its status file last said. The
/// counters are not part of it: they come from the scx_stats socket, their
/// one way out, and without it the view is shown alone, saying why.
fn status(path: &std::path::Path, socket: &std::path::Path, json: bool) -> Result<()> {
    use chameleon::control::{send_within, Op};
    let asked = socket
        .exists()
        .then(|| send_within(socket, Op::Status, std::time::Duration::from_secs(1)).ok())
        .flatten()
        .and_then(|r| r.status)
        .and_then(|v| serde_json::from_value::<chameleon::report::status::Snapshot>(v).ok());
    let (snap, stale) = match asked {
        Some(snap) => (snap, None),
        None => {
            let snap = chameleon::report::status::read(path)?;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let stale = chameleon::report::status::stale(&snap, now);
            (snap, stale)
        }
    };
    let counters = chameleon::report::metrics::fetch_within(Some(std::time::Duration::from_secs(1))).map_err(|e| format!("{e:#}"));
    if json {
        /// The snapshot's fields in their order, then the counters.
        #[derive(serde::Serialize)]
        struct WithCounters<'a> {
            #[serde(flatten)]
            snap: &'a chameleon::report::status::Snapshot,
            counters: Option<&'a chameleon::report::metrics::Metrics>,
            #[serde(skip_serializing_if = "Option::is_none")]
            counters_unavailable: Option<&'a str>,
        }
        let out = WithCounters { snap: &snap, counters: counters.as_ref().ok(), counters_unavailable: counters.as_ref().err().map(|e| e.as_str()) };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_status(&snap, counters.as_ref());
    }
    match stale {
        Some(why) => anyhow::bail!("{}: {why}", path.display()),
        None => Ok(()),
    }
}

fn print_status(snap: &chameleon::report::status::Snapshot, counters: Result<&chameleon::report::metrics::Metrics, &String>) {
    println!("agent pid {}, nodes {:?}, defragmentation moves {}", snap.agent_pid, snap.nodes, snap.defrag_moves);
    println!("node manager places objects on cpus {:?}", snap.manager_online);
    for (pid, level, weight) in &snap.requesters {
        let cpus = snap.objects.iter().find(|o| o.pid == *pid).map(|o| format!("{:?}", o.cpus));
        // An automatic tax: what it pays now and why.
        let tax = snap.auto_tax.iter().find(|a| a.pid == *pid).map_or(String::new(), |a| {
            format!(
                ", tax auto {} (speed-up {}, progress from {}, {} paired ratios{})",
                chameleon::tags::tag::tax_text(a.tax),
                a.speedup.map_or("not yet measured".into(), |s| format!("{s:.2}")),
                a.source,
                a.pairs,
                a.exploring.as_ref().map_or(String::new(), |e| format!(", exploring {e}"))
            )
        });
        println!("pid {pid}: level {level} weight {weight} -> {}{tax}", cpus.as_deref().unwrap_or("native"));
    }
    let cpus: Vec<String> = snap
        .cpus
        .iter()
        .map(|c| match (c.online, c.role.as_str()) {
            (false, _) => format!("{}:offline", c.cpu),
            (true, "rep") => format!("{}:rep(pid {})", c.cpu, c.with),
            (true, "borrowed") => format!("{}:lent to {}", c.cpu, c.with),
            (true, "idle") => format!("{}:idle", c.cpu),
            _ => format!("{}:native", c.cpu),
        })
        .collect();
    println!("cpus: {}", cpus.join(" "));
    for (id, tag) in &snap.tags {
        println!("tag cgroup {id}: {tag}");
    }
    match counters {
        Ok(m) => println!("counters: {}", m.totals()),
        Err(why) => println!("counters: unavailable: {why}"),
    }
    if !snap.parked.is_empty() {
        println!("parked: {}", chameleon::module::park::list(&snap.parked));
    }
    if let Some(st) = &snap.module {
        // The module's numbers are the metrics'; "?" where they could not be read.
        let n = |f: &dyn Fn(&chameleon::report::metrics::Metrics) -> u64| counters.map_or("?".to_string(), |m| f(m).to_string());
        let proxies: Vec<String> = st.proxies.iter().map(|(c, by)| format!("{c}->{by}")).collect();
        println!(
            "module: kfuncs={} lends={} reclaims={} proxies=[{}] irqs_moved={} managed_skipped={}",
            st.kfuncs,
            n(&|m| m.proxy_lends),
            n(&|m| m.proxy_reclaims),
            proxies.join(" "),
            n(&|m| m.proxy_irqs_moved),
            n(&|m| m.proxy_managed_skipped)
        );
        println!(
            "module: while lent: irqs={} softirqs={} ipis={} timers={}",
            n(&|m| m.proxy_lent_irqs),
            n(&|m| m.proxy_lent_softirqs),
            n(&|m| m.proxy_lent_ipis),
            n(&|m| m.proxy_lent_timers)
        );
        println!(
            "module: park critical={} us physical={} us; unpark critical={} us physical={} us; offlined=[{}]",
            n(&|m| m.proxy_park_critical_ns / 1000),
            n(&|m| m.proxy_park_physical_ns / 1000),
            n(&|m| m.proxy_unpark_critical_ns / 1000),
            n(&|m| m.proxy_unpark_physical_ns / 1000),
            chameleon::module::park::list(&st.offlined)
        );
        if let Some(e) = &st.emulate {
            println!("module: emulate={e} duty_pm={:?}", st.duty);
        }
    }
}

fn park_cmd(socket: &std::path::Path, op: chameleon::control::Op) -> Result<()> {
    require_root("parking CPUs")?;
    if !socket.exists() {
        anyhow::bail!("scx_chameleon is not running ({} missing)", socket.display());
    }
    let r = chameleon::control::send(socket, op)?;
    if !r.ok {
        anyhow::bail!("{}", r.error.unwrap_or_default());
    }
    println!("{}", r.detail.unwrap_or_default());
    Ok(())
}

fn require_root(what: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("{what} needs root (tags are stored on the cgroup and read by the scheduler)");
    }
    Ok(())
}

/// Tell a running agent to re-read the tags of `path`; say what happened.
fn apply_now(socket: &std::path::Path, path: &std::path::Path) -> Result<String> {
    use chameleon::control::{send, Op};
    if !socket.exists() {
        return Ok("scx_chameleon is not running: applies at its next start".into());
    }
    match send(socket, Op::Reload { cgroup: path.to_path_buf() }) {
        Ok(r) if r.ok => Ok(format!("applied by the running scheduler ({})", r.detail.unwrap_or_default())),
        Ok(r) => anyhow::bail!("stored, but the running scheduler refused it: {}", r.error.unwrap_or_default()),
        Err(_) => Ok("scx_chameleon is not running: applies at its next start".into()),
    }
}

/// `set`: the properties given on the command line, over the stored ones.
fn tag_cmd(cgroup: &str, set: impl FnOnce(&mut chameleon::tags::tag::Props), socket: &std::path::Path) -> Result<()> {
    use chameleon::tags::{cgroup_dir::Tree, store as tag_store, tag};
    require_root("tagging")?;
    let path = tag::cgroup_path(cgroup);
    // Opened once, beneath the cgroup mount, without following links: what
    // is checked here is what is written below.
    let dir = Tree::cgroup()?.resolve(&path)?;
    tag_store::refuse_root(&dir)?;
    // A damaged stored tag is replaced, from the defaults, by this one.
    let mut props = tag_store::read(&dir).unwrap_or_default().unwrap_or_default();
    set(&mut props);
    // A level no node can form would never be granted: refuse it now.
    let largest = chameleon::nodes::node::from_topology(&Default::default())?.iter().map(|n| n.slots.len()).max().unwrap_or(0);
    if (1usize << props.level) > largest {
        anyhow::bail!(
            "level {}: needs {} CPUs in one node, the largest node here has {largest} (level at most {})",
            props.level,
            1usize << props.level,
            largest.max(1).ilog2()
        );
    }
    tag_store::write(&dir, &props)?;
    println!("tagged {}: {}; {}", path.display(), props.encode(), apply_now(socket, &path)?);
    Ok(())
}

fn untag_cmd(cgroup: &str, socket: &std::path::Path) -> Result<()> {
    use chameleon::tags::{cgroup_dir::Tree, store as tag_store, tag};
    require_root("untagging")?;
    let path = tag::cgroup_path(cgroup);
    if tag_store::remove(&Tree::cgroup()?.resolve(&path)?)? {
        println!("untagged {}; {}", path.display(), apply_now(socket, &path)?);
    } else {
        println!("{} had no tag of its own", path.display());
    }
    Ok(())
}

/// The tags in force as the running agent has them (with --tag and rules);
/// with no agent, the stored ones, and a note saying so.
fn tags_cmd(socket: &std::path::Path) -> Result<()> {
    use chameleon::{control, tags::store as tag_store};
    // Tags live in trusted.* attributes: without CAP_SYS_ADMIN they read as absent.
    require_root("listing tags")?;
    if socket.exists() {
        if let Ok(r) = control::send(socket, control::Op::Tags) {
            if !r.ok {
                anyhow::bail!("the running scheduler refused: {}", r.error.unwrap_or_default());
            }
            for t in r.tags.unwrap_or_default() {
                println!("{t}");
            }
            return Ok(());
        }
    }
    for t in tag_store::scan(tag_store::root(), &[], None, &mut Default::default())?.iter().filter_map(|e| e.listed()) {
        println!("{t}");
    }
    eprintln!("scx_chameleon is not running: stored tags only (no --tag, no rules)");
    Ok(())
}

fn reload_rules_cmd(socket: &std::path::Path) -> Result<()> {
    require_root("reloading the rules")?;
    if !socket.exists() {
        anyhow::bail!("scx_chameleon is not running ({} missing)", socket.display());
    }
    let r = chameleon::control::send(socket, chameleon::control::Op::ReloadRules)?;
    if !r.ok {
        anyhow::bail!("{}", r.error.unwrap_or_default());
    }
    println!("{}", r.detail.unwrap_or_default());
    Ok(())
}

/// The viewers (top, trace, --monitor) live in their own binary,
/// scx_chameleon-tools, so that the daemon links no TUI, async runtime or
/// Perfetto protos: run it in this process's place with the words the user
/// typed, the one found next to this binary first, else the one in PATH.
fn hand_off(cli: &Cli, words: Vec<OsString>) -> Result<()> {
    use std::os::unix::process::CommandExt;
    const TOOLS: &str = "scx_chameleon-tools";
    let beside = std::env::current_exe().ok().map(|e| e.with_file_name(TOOLS));
    let program = beside.clone().filter(|p| p.is_file()).unwrap_or_else(|| TOOLS.into());
    // Named as typed: its usage and errors read "scx_chameleon top ...".
    let e = std::process::Command::new(&program)
        .arg0("scx_chameleon")
        .arg("--control-socket")
        .arg(&cli.control_socket)
        .arg("--status-file")
        .arg(&cli.status_file)
        .args(words)
        .exec();
    if e.kind() == std::io::ErrorKind::NotFound {
        let beside = beside.map_or(String::new(), |p| format!("{} nor ", p.display()));
        anyhow::bail!("top, trace and --monitor need {TOOLS}: no {beside}{TOOLS} in PATH (install it beside scx_chameleon: make install does)");
    }
    Err(e).with_context(|| format!("running {}", program.display()))
}

fn events_cmd(socket: &std::path::Path, json: bool) -> Result<()> {
    use std::io::{BufRead, Write};
    let reader = chameleon::control::subscribe(socket)?;
    let mut out = std::io::stdout().lock();
    for line in reader.lines() {
        let line = line?;
        let written = if json {
            writeln!(out, "{line}")
        } else {
            match serde_json::from_str::<chameleon::report::event::Event>(&line) {
                Ok(ev) => writeln!(out, "{ev}"),
                Err(_) => continue,
            }
        };
        // A closed pipe (e.g. `| head`) ends the stream quietly.
        if written.and_then(|_| out.flush()).is_err() {
            return Ok(());
        }
    }
    eprintln!("scx_chameleon: the scheduler stopped");
    Ok(())
}

/// An interval in seconds: a finite number from 0 to a day (a Duration built
/// from 1e300 or NaN would panic).
fn parse_interval(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86400.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: expected seconds from 0 to 86400")),
    }
}

fn parse_emulate(s: &str) -> Result<chameleon::module::proxy::Emulate, String> {
    s.parse()
}

fn parse_tag(s: &str) -> Result<chameleon::tags::tag::Tag, String> {
    chameleon::tags::tag::parse_tag(s).map_err(|e| format!("{e:#}"))
}

fn main() {
    // One line, the whole chain of context: "scx_chameleon: tag seq: level ...".
    if let Err(e) = run() {
        eprintln!("scx_chameleon: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    if cli.help_stats {
        chameleon::report::metrics::describe(&mut std::io::stdout())?;
        return Ok(());
    }
    match cli.cmd {
        Some(Cmd::Status { json }) => return status(&cli.status_file, &cli.control_socket, json),
        Some(Cmd::Tag { cgroup, level, weight, tax, smt, prio }) => {
            let set = move |p: &mut chameleon::tags::tag::Props| {
                p.level = level.unwrap_or(p.level);
                p.weight = weight.unwrap_or(p.weight);
                p.tax = tax.unwrap_or(p.tax);
                p.smt = smt.unwrap_or(p.smt);
                p.prio = prio.unwrap_or(p.prio);
            };
            return tag_cmd(&cgroup, set, &cli.control_socket);
        }
        Some(Cmd::Untag { cgroup }) => return untag_cmd(&cgroup, &cli.control_socket),
        Some(Cmd::Tags) => return tags_cmd(&cli.control_socket),
        Some(Cmd::ReloadRules) => return reload_rules_cmd(&cli.control_socket),
        Some(Cmd::Park { cpus, holdoff_ms }) => {
            return park_cmd(&cli.control_socket, chameleon::control::Op::Park { cpus: cpus.to_string(), holdoff_ms: Some(holdoff_ms) })
        }
        Some(Cmd::Unpark { cpus }) => return park_cmd(&cli.control_socket, chameleon::control::Op::Unpark { cpus: cpus.to_string() }),
        Some(Cmd::Events { json }) => return events_cmd(&cli.control_socket, json),
        Some(Cmd::Top { ref args }) => return hand_off(&cli, [OsString::from("top")].into_iter().chain(args.iter().cloned()).collect()),
        Some(Cmd::Trace { ref args }) => return hand_off(&cli, [OsString::from("trace")].into_iter().chain(args.iter().cloned()).collect()),
        Some(Cmd::Metrics) => {
            print!("{}", chameleon::report::metrics::fetch()?.openmetrics());
            return Ok(());
        }
        None => {}
    }
    if let Some(every) = &cli.monitor {
        let mut words = vec![OsString::from("--monitor"), every.clone()];
        if cli.monitor_json {
            words.push("--monitor-json".into());
        }
        return hand_off(&cli, words);
    }
    let level = match cli.verbose {
        0 => cli.log_level.as_str(),
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .with_context(|| format!("invalid --log-level {:?}", cli.log_level))?;
    // Logs go to stderr; stdout carries events and stats for scripts to read.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // libbpf speaks through the `log` crate, which the subscriber above
    // collects: its warnings with -v, its debug output (the verifier's log)
    // with -vv.
    match cli.verbose {
        0 => {}
        1 => scx_utils::init_libbpf_logging(Some(libbpf_rs::PrintLevel::Info)),
        _ => scx_utils::init_libbpf_logging(Some(libbpf_rs::PrintLevel::Debug)),
    }
    info!("scx_chameleon {}{}", *BUILD_ID, cli.run_id.map_or(String::new(), |r| format!(", run id {r}")));

    if !(cli.stats.is_finite() && cli.stats >= 0.0) {
        anyhow::bail!("--stats must be a number of seconds >= 0 (got {})", cli.stats);
    }
    let opts = Opts {
        slice_us: cli.slice_us,
        cpuperf: !cli.no_cpuperf,
        llc_queues: cli.llc_queues,
        numa: !cli.disable_numa,
        print_events: cli.events,
        stats_interval: (cli.stats > 0.0).then(|| Duration::from_secs_f64(cli.stats)),
        min_gran_us: cli.min_granularity_us,
        wake_gran_us: cli.wake_gran_us,
        lend_wait_ms: cli.lend_wait_ms,
        watchdog_timeout_ms: cli.watchdog_timeout_ms,
        tags: cli.tags,
        rules: cli.rules,
        node_cpus: cli.node_cpus,
        topology: chameleon::nodes::node::TopologyOpts {
            capacity: match &cli.cpu_capacity {
                Some(spec) => chameleon::nodes::node::parse_capacities(spec, *scx_utils::NR_CPU_IDS)?,
                None => Default::default(),
            },
            mix_core_types: cli.mix_core_types,
        },
        max_level: cli.max_level,
        status_path: cli.status_file,
        control_path: cli.control_socket,
        emulate: cli.emulate,
        no_exit_notice: cli.no_exit_notice,
        share_period_ms: cli.share_period_ms,
        boost_threshold: cli.boost_threshold,
        exit_dump_len: cli.exit_dump_len,
        run_id: cli.run_id,
        libbpf: cli.libbpf,
        verifier_log: cli.verifier_log,
        test_error_after: cli.test_error_after_ms.map(Duration::from_millis),
        test_panic_after: cli.test_panic_after_ms.map(Duration::from_millis),
    };
    opts.validate()?;
    // One agent at a time, held across restarts; taken before anything is
    // bound or written, so a second agent cannot disturb the first.
    let _lock = chameleon::control::InstanceLock::acquire(&opts.control_path)?;

    // SIGINT/SIGTERM stop, SIGHUP reloads the rules (systemd's ExecReload=kill -HUP).
    let shutdown = chameleon::Shutdown::new()?;
    let hup = chameleon::Doorbell::new()?;
    chameleon::agent::signals::install(shutdown.clone(), hup.clone())?;

    let mut open_object = MaybeUninit::uninit();
    let result = schedule(&opts, &shutdown, &hup, &mut open_object);
    // Everything is dropped by now (the policy detached, the module's device
    // closed); the kernel's own references go shortly after, and a script's
    // `rmmod chameleon_proxy` once we are gone must not find them.
    chameleon::module::proxy::wait_module_unused();
    result
}

/// Load, attach and serve until a stop, again whenever the kernel asks for
/// a restart.
fn schedule(
    opts: &Opts,
    shutdown: &chameleon::Shutdown,
    hup: &chameleon::Doorbell,
    open_object: &mut MaybeUninit<libbpf_rs::OpenObject>,
) -> Result<()> {
    let mut kept = None;
    loop {
        let mut sched = Scheduler::init_with(opts, kept.take(), open_object)?;
        let uei = sched.run(shutdown, hup)?;
        kept = sched.take_rules();
        drop(sched);
        if !uei.should_restart() {
            info!("scx_chameleon exited");
            return Ok(());
        }
        info!("kernel asked for a restart; reloading");
    }
}
