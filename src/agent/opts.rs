//! The agent's settings (the CLI's flags, as the library takes them), with
//! their defaults and the bounds the policy can honour.

use crate::bpf_intf;
use crate::tags::tag::Tag;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// Settings the agent passes to the policy and to its own loop.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Time slice of a task, in microseconds.
    pub slice_us: u64,
    /// Hand the kernel performance targets (bpf/fast.bpf.c).
    pub cpuperf: bool,
    /// Untagged tasks that may run anywhere in their LLC share its queue
    /// (bpf/llc_queue.bpf.c; --llc-queues, off by default).
    pub llc_queues: bool,
    /// Idle CPUs tracked per NUMA node where there are several (--disable-numa: off).
    pub numa: bool,
    /// Print every event the policy emits.
    pub print_events: bool,
    /// Print counter totals this often (None: only at exit).
    pub stats_interval: Option<Duration>,
    /// A fused object runs at least this long before a waiter may split it.
    pub min_gran_us: u64,
    /// A waking task preempts a running one that it trails by more than
    /// this much of its run, and only after it ran that long (0: never).
    pub wake_gran_us: u64,
    /// A task waiting on a lent CPU gets it back after this long, whatever
    /// the vtimes say (the lending bound).
    pub lend_wait_ms: u64,
    /// The kernel's watchdog timeout (ops.timeout_ms).
    pub watchdog_timeout_ms: u32,
    /// Cgroups whose tasks want execution objects.
    pub tags: Vec<Tag>,
    /// The rules file (`--rules`): tags by cgroup path, unit, comm or uid,
    /// applied to cgroups as they appear; reloaded on SIGHUP.
    pub rules: Option<std::path::PathBuf>,
    /// Nodes as CPU lists ("0-11;12-23"); None: one per LLC.
    pub node_cpus: Option<String>,
    /// Capacities and core-type mixing for the nodes (hybrid CPUs).
    pub topology: crate::nodes::node::TopologyOpts,
    /// Largest object level the node manager builds.
    pub max_level: u32,
    /// Where the status file goes.
    pub status_path: std::path::PathBuf,
    /// The control socket.
    pub control_path: std::path::PathBuf,
    /// Duty-cycle emulation of fused processors (needs chameleon_proxy).
    pub emulate: Option<crate::module::proxy::Emulate>,
    /// Drop the policy's task-exit events (bench only: Chameleon Fig. 6's
    /// "3*", the node manager without the exit notification).
    pub no_exit_notice: bool,
    /// Accounting period of the fast contexts (AASH: 30 ms).
    pub share_period_ms: u64,
    /// Cgroups with at most this many awake requesters are boosted (0: never).
    pub boost_threshold: usize,
    /// Size of the kernel's exit dump, bytes (0: the kernel's default).
    pub exit_dump_len: u32,
    /// --run-id: tells runs apart in stats, status and the exit dump.
    pub run_id: Option<u64>,
    /// libbpf's open options (--kconfig, --btf-custom-path, ...).
    pub libbpf: scx_utils::libbpf_clap_opts::LibbpfOpts,
    /// --verifier-log: every program's verifier log, to stderr.
    pub verifier_log: bool,
    /// Test only: the policy errors out this long after init.
    pub test_error_after: Option<Duration>,
    /// Test only: the agent panics in its main loop this long after it
    /// started (what a panic leaves of the module's state).
    pub test_panic_after: Option<Duration>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            slice_us: 20000,
            cpuperf: true,
            llc_queues: false,
            numa: true,
            print_events: false,
            stats_interval: None,
            min_gran_us: 1000,
            wake_gran_us: 1000,
            lend_wait_ms: 50,
            watchdog_timeout_ms: 10_000,
            tags: Vec::new(),
            rules: None,
            node_cpus: None,
            topology: Default::default(),
            max_level: bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_LEVEL,
            status_path: crate::report::status::DEFAULT_PATH.into(),
            control_path: crate::control::DEFAULT_PATH.into(),
            emulate: None,
            no_exit_notice: false,
            share_period_ms: 30,
            boost_threshold: crate::nodes::fast_share::BOOST_DEFAULT,
            exit_dump_len: 0,
            run_id: None,
            libbpf: Default::default(),
            verifier_log: false,
            test_error_after: None,
            test_panic_after: None,
        }
    }
}

impl Opts {
    /// Refuse settings the policy cannot honour, with a reason a person can act on.
    pub fn validate(&self) -> Result<()> {
        if !(100..=1_000_000).contains(&self.slice_us) {
            bail!("--slice-us must be between 100 and 1000000 (got {})", self.slice_us);
        }
        if !(1..=bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_LEVEL).contains(&self.max_level) {
            bail!(
                "--max-level must be between 1 and {} (got {})",
                bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_LEVEL,
                self.max_level
            );
        }
        if !(10..=1_000_000).contains(&self.min_gran_us) {
            bail!("--min-granularity-us must be between 10 and 1000000 (got {})", self.min_gran_us);
        }
        if self.wake_gran_us > 1_000_000 {
            bail!("--wake-gran-us must be between 0 and 1000000 (got {})", self.wake_gran_us);
        }
        // Above 1 s a waiter would notice; the kernel's watchdog (10 s here) must never.
        if !(1..=1000).contains(&self.lend_wait_ms) {
            bail!("--lend-wait-ms must be between 1 and 1000 (got {})", self.lend_wait_ms);
        }
        // The kernel refuses more than 30 s; under 1 s is no longer above our own bounds.
        if !(1000..=30_000).contains(&self.watchdog_timeout_ms) {
            bail!("--watchdog-timeout-ms must be between 1000 and 30000 (got {})", self.watchdog_timeout_ms);
        }
        // Under 5 ms the agent's wakeups cost more than migrations save; over
        // a second a waiter would notice (AASH: 30 ms).
        if !(5..=1000).contains(&self.share_period_ms) {
            bail!("--share-period-ms must be between 5 and 1000 (got {})", self.share_period_ms);
        }
        if self.boost_threshold > 1024 {
            bail!("--boost-threshold must be between 0 and 1024 (got {})", self.boost_threshold);
        }
        if self.exit_dump_len > 16 << 20 {
            bail!("--exit-dump-len must be at most {} bytes (got {})", 16 << 20, self.exit_dump_len);
        }
        // scx_utils turns an unreadable file into "no options" silently: say it.
        if let Some(path) = &self.libbpf.kconfig {
            std::fs::read_to_string(path).with_context(|| format!("--kconfig {path}: cannot read it"))?;
        }
        for (flag, path) in [("--btf-custom-path", &self.libbpf.btf_custom_path), ("--pin-root-path", &self.libbpf.pin_root_path)] {
            if let Some(p) = path {
                if !std::path::Path::new(p).exists() {
                    bail!("{flag} {p}: no such file or directory");
                }
            }
        }
        Ok(())
    }
}
