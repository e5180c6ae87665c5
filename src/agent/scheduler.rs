//! Opening, loading and attaching the BPF policy, and the agent's main loop.
//!
//! The shape follows scx_rusty: `Scheduler::init` opens, configures, loads and
//! attaches; `Scheduler::run` serves events and counters until shutdown or until
//! the kernel ejects the policy, and returns the exit info so that the caller
//! can restart when the kernel asks for it (`should_restart()`).

use crate::bpf_intf::{self, as_bytes};
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::agent::assign::Assigner;
use crate::report::event::Event;
use crate::nodes::node_manager::NodeManager;
use crate::control::{Op, Response, Server};
use crate::agent::inbox::{Inbox, ToLoop};
use crate::report::lateness::Lateness;
use crate::agent::module_worker::ModuleWorker;
use crate::agent::tag_worker::{TagCmd, TagWorker};
use crate::report::status::Status;
use crate::report::stats::Totals;
use crate::agent::signals::{Doorbell, Shutdown};
use crate::tags::tag::Tag;
use crate::agent::apply_tags::{TagInputs, TagsGen};
use anyhow::{bail, Context, Result};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, RingBufferBuilder};
use std::cell::RefCell;
use std::rc::Rc;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, UserExitInfo};
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

use crate::bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as MAX_CPUS;

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

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<Link>,
    opts: Opts,
    nr_cpus: usize,
    assign: Assigner,
    /// What the helper threads hand the loop (inbox.rs).
    inbox: Inbox,
    /// Applies --tag, the stored tags and the rules file (tag_worker.rs).
    tags: TagWorker,
    /// Serves clients on threads of its own (control.rs).
    control: Server,
    /// The module's ioctls (module_worker.rs), with its own hold on `proxy`.
    module: Option<ModuleWorker>,
    /// The companion module, if loaded (/dev/chameleon_proxy). Dropped after
    /// `skel` (fields drop in order, after Drop::drop has detached), and
    /// after `module`, the other holder: its RESET comes once the policy can
    /// lend no more.
    _proxy: Option<std::sync::Arc<crate::module::proxy::Proxy>>,
    /// Latest counters, served on the scx_stats socket.
    metrics: std::sync::Arc<std::sync::Mutex<crate::report::metrics::Metrics>>,
    _stats_server: scx_stats::prelude::StatsServer<(), ()>,
}

/// Each CPU's steal order (SMT siblings, LLC, rest) into the policy's map.
fn write_steal_orders(map: &dyn MapCore, nr_cpus: usize) -> Result<()> {
    let places = crate::nodes::steal::places()?;
    for &p in places.iter().filter(|p| p.cpu < nr_cpus) {
        let (cpus, near) = crate::nodes::steal::order(p, &places);
        let mut v = bpf_intf::chameleon_steal_order {
            nr: cpus.len() as u32,
            nr_near: near as u32,
            cpus: [-1; bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as usize],
        };
        for (slot, c) in v.cpus.iter_mut().zip(&cpus) {
            *slot = *c as i32;
        }
        map.update(&(p.cpu as u32).to_ne_bytes(), as_bytes(&v), MapFlags::ANY)
            .with_context(|| format!("writing cpu{}'s steal order", p.cpu))?;
    }
    Ok(())
}

/// CPU states from the policy's .bss, for the status (its counters go to
/// the metrics).
fn live_status(skel: &BpfSkel, nr_cpus: usize, parked: Vec<usize>, module: Option<crate::report::status::ModuleStatus>) -> crate::report::status::Live {
    let bss = skel.maps.bss_data.as_ref().expect(".bss is mapped");
    let cpus = (0..nr_cpus)
        .map(|c| {
            let word = bss.cpu_roles[c].word;
            let kind = word & ((1 << crate::bpf_intf::chameleon_consts_CHAMELEON_ROLE_SHIFT) - 1);
            let with = i64::from(word >> crate::bpf_intf::chameleon_consts_CHAMELEON_ROLE_SHIFT) - 1;
            let (role, with) = match kind {
                crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_LENT => ("borrowed", with),
                crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_FUSING
                | crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_REP
                | crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_SPLITTING => ("rep", bss.reps[c].owner as i64),
                crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_PARKED => ("parked", -1),
                _ if bss.cpu_runs[c].running != 0 => ("native", -1),
                _ => ("idle", -1),
            };
            let pf = &bss.cpu_perfs[c];
            let perf = (pf.perf_set != 0).then_some(pf.perf_target);
            crate::report::status::CpuStatus { cpu: c, online: bss.cpu_hps[c].online != 0, role: role.into(), with, perf }
        })
        .collect();
    crate::report::status::Live { cpus, parked, module, ..Default::default() }
}

/// The policy's broken-invariant counters (intf.h), as the summary and the
/// "invariant broken" warning print them; all zero unless the policy has a bug.
fn invariants_line(i: &crate::bpf_skel::types::chameleon_invariants) -> String {
    format!(
        "invariants lent_to_non_rep={} owner_gone={} queue_forbidden={}",
        i.lent_to_non_rep, i.owner_gone, i.queue_forbidden
    )
}

fn invariants_total(i: &crate::bpf_skel::types::chameleon_invariants) -> u64 {
    i.lent_to_non_rep + i.owner_gone + i.queue_forbidden
}

fn totals(skel: &BpfSkel, nr_cpus: usize) -> Totals {
    let bss = skel.maps.bss_data.as_ref().expect(".bss is mapped");
    Totals::sum(&bss.cpu_stats[..nr_cpus])
}

/// Print how many instructions the verifier processed for each loaded program
/// and their total: `verifier: total_insns=N (enqueue=…, dispatch=…, …)`. The
/// smoke test compares the total per kernel with a recorded one (a regression
/// guard: TCG verifies slowly, and older verifiers walk more states).
fn report_verifier(skel: &BpfSkel) {
    use libbpf_rs::libbpf_sys;
    use libbpf_rs::skel::Skel;
    use libbpf_rs::AsRawLibbpf;

    let mut total = 0u64;
    let mut each = Vec::new();
    for prog in skel.object().progs() {
        // SAFETY: the program belongs to the loaded object borrowed here.
        let fd = unsafe { libbpf_sys::bpf_program__fd(prog.as_libbpf_object().as_ptr()) };
        if fd < 0 {
            continue; // not loaded
        }
        // SAFETY: a zeroed bpf_prog_info is a valid query (no arrays asked for).
        let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: info is len bytes, fd a live program fd.
        if unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) } != 0 {
            warn!("no program info for {:?}", prog.name());
            continue;
        }
        total += u64::from(info.verified_insns);
        let name = prog.name().to_string_lossy();
        each.push(format!("{}={}", name.trim_start_matches("chameleon_"), info.verified_insns));
    }
    crate::out!("verifier: total_insns={total} ({})", each.join(", "));
}

impl<'a> Scheduler<'a> {
    pub fn init(opts: &Opts, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        Self::init_with(opts, None, open_object)
    }

    /// `init`, with the rules in force before a restart (`kept`) rather than
    /// the file as it is now: a file broken since then must not stop the
    /// restart any more than it stopped the running agent.
    pub fn init_with(
        opts: &Opts,
        kept: Option<crate::tags::rules::RuleSet>,
        open_object: &'a mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        opts.validate()?;
        let nr_cpus = *scx_utils::NR_CPU_IDS;
        if nr_cpus > MAX_CPUS as usize {
            bail!("{nr_cpus} possible CPUs; scx_chameleon supports at most {MAX_CPUS}");
        }

        let builder = BpfSkelBuilder::default();
        if opts.verifier_log {
            libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, |_, msg: String| eprint!("{msg}"))));
        }
        let open_opts = opts.libbpf.clone().into_bpf_open_opts();
        let mut skel = scx_ops_open!(builder, open_object, chameleon_ops, open_opts)?;
        let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
        rodata.slice_ns = opts.slice_us * 1000;
        rodata.cpuperf_on = opts.cpuperf;
        rodata.nr_cpus = nr_cpus as u32;
        rodata.agent_tgid = std::process::id() as i32;
        rodata.min_gran_ns = opts.min_gran_us * 1000;
        rodata.wake_gran_ns = opts.wake_gran_us * 1000;
        rodata.lend_wait_ns = opts.lend_wait_ms * 1_000_000;
        rodata.run_id = opts.run_id.unwrap_or(0);
        rodata.test_error_after_ns = opts.test_error_after.map_or(0, |d| d.as_nanos().max(1) as u64);
        let shards = crate::nodes::cg_shard::cg_shards(
            &crate::nodes::steal::places()?,
            nr_cpus,
            bpf_intf::CHAMELEON_CG_SHARDS as usize,
        );
        rodata.cpu_cg_shard[..nr_cpus].copy_from_slice(&shards);
        let llcs = crate::nodes::cg_shard::llc_ranks(&crate::nodes::steal::places()?, nr_cpus);
        let nr_llcs = llcs.iter().map(|&l| l as usize + 1).max().unwrap_or(1);
        rodata.llc_queues = opts.llc_queues && nr_llcs <= bpf_intf::chameleon_consts_CHAMELEON_MAX_LLCS as usize;
        if rodata.llc_queues {
            rodata.nr_llcs = nr_llcs as u32;
            rodata.cpu_llc[..nr_cpus].copy_from_slice(&llcs);
            info!("LLC queues: {nr_llcs}");
        } else if opts.llc_queues {
            info!("{nr_llcs} LLCs, more than the {} LLC queues: per-CPU queues only", bpf_intf::chameleon_consts_CHAMELEON_MAX_LLCS);
        }
        // Several NUMA nodes: the kernel keeps each node's idle CPUs in a
        // mask of its own, written by that node's CPUs only. A search looks
        // in the task's node, then at the other nodes' masks in the order
        // written here, nearest first (idle_pick_in(), chameleon.bpf.h).
        let topo = scx_utils::Topology::new().context("reading the NUMA nodes")?;
        let numa = crate::nodes::numa_order::numa_nodes(&topo);
        let nr_nodes = numa.iter().filter(|n| n.has_cpus).count();
        let per_node = *scx_utils::compat::SCX_OPS_BUILTIN_IDLE_PER_NODE;
        let max_nodes = bpf_intf::chameleon_consts_CHAMELEON_MAX_NODES as usize;
        let orders = crate::nodes::numa_order::orders(&numa, max_nodes);
        if opts.numa && nr_nodes > 1 && per_node != 0 && orders.is_some() {
            let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
            rodata.idle_per_node = true;
            rodata.nr_nodes = nr_nodes as u32;
            for (row, order) in rodata.node_order.iter_mut().zip(orders.iter().flatten()) {
                for (slot, &id) in row.iter_mut().zip(order) {
                    *slot = id as u8;
                }
            }
            skel.struct_ops.chameleon_ops_mut().flags |= per_node;
            info!("{nr_nodes} NUMA nodes: idle CPUs tracked per node");
        } else if nr_nodes > 1 && opts.numa && per_node != 0 {
            info!("{nr_nodes} NUMA nodes, one with an id of {max_nodes} or more: one idle mask for the machine");
        } else if nr_nodes > 1 {
            info!("{nr_nodes} NUMA nodes: one idle mask for the machine");
        }
        skel.struct_ops.chameleon_ops_mut().timeout_ms = opts.watchdog_timeout_ms;
        if opts.verifier_log {
            // Level 2: every instruction the verifier walks, by function.
            for mut prog in libbpf_rs::skel::OpenSkel::open_object_mut(&mut skel).progs_mut() {
                prog.set_log_level(2);
            }
        }
        skel.struct_ops.chameleon_ops_mut().exit_dump_len = opts.exit_dump_len;
        // The sched_switch hook sees higher classes come and go (preempt.bpf.c);
        // 6.19+ re-enqueues a local queue from any context, and there the hook
        // replaces ops.cpu_release/cpu_acquire, as the scx schedulers do.
        skel.progs.chameleon_sched_switch.set_autoload(true);
        if scx_utils::compat::ksym_exists("scx_bpf_reenqueue_local___v2")? {
            let ops = skel.struct_ops.chameleon_ops_mut();
            ops.cpu_release = std::ptr::null_mut();
            ops.cpu_acquire = std::ptr::null_mut();
            info!("higher classes: sched_switch hook (ops.cpu_release not registered)");
        }
        skel.maps.steal_orders.set_max_entries(nr_cpus as u32)?;

        // Resolve tags before loading: a bad cgroup path fails here, cleanly.
        // Tags in force: the ones stored on cgroups plus --tag, inherited by
        // descendants without their own.
        let mut extra = Vec::new();
        for t in &opts.tags {
            // Resolved as `tag` resolves it (beneath the mount, no links);
            // the root however named (`seq/..`) is refused.
            crate::tags::store::refuse_root(&crate::tags::cgroup_dir::Tree::cgroup()?.resolve(&t.path)?)?;
            extra.push((t.path.clone(), t.props));
        }
        let nodes = match &opts.node_cpus {
            Some(spec) => crate::nodes::node::parse_nodes(spec, nr_cpus)?,
            None => crate::nodes::node::from_topology(&opts.topology)?,
        };
        info!("nodes: {:?}", nodes.iter().map(|n| &n.slots).collect::<Vec<_>>());
        // Hybrid: the fast CPUs, which tasks without an object prefer too.
        let fast = crate::nodes::node::fast_cpus_of_topology(&opts.topology);
        if !fast.is_empty() {
            info!("fast CPUs (top capacity): {fast:?}");
            let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
            rodata.hybrid = true;
            for cpu in fast.into_iter().filter(|&c| c < nr_cpus) {
                rodata.fast_cpu_bits[cpu / 64] |= 1 << (cpu % 64);
            }
        }
        // Same rule as `scx_chameleon tag`: a level no node can form is refused.
        let largest = nodes.iter().map(|n| n.slots.len()).max().unwrap_or(0);
        for t in &opts.tags {
            if (1usize << t.props.level) > largest {
                bail!(
                    "--tag {}: level {}: needs {} CPUs in one node, the largest node here has {largest}",
                    t.path.display(),
                    t.props.level,
                    1usize << t.props.level
                );
            }
        }
        // A bad rules file stops the start here, naming file, line and field.
        let rules = match (kept, &opts.rules) {
            (Some(r), _) => Some(r),
            (None, Some(file)) => {
                let r = crate::agent::apply_tags::load_rules(file, largest)?;
                info!("rules: {} from {}", r.rules.len(), file.display());
                Some(r)
            }
            (None, None) => None,
        };
        let mut inputs = TagInputs::new(extra, opts.rules.clone(), rules, largest);
        let mut manager = NodeManager::new(nodes, crate::nodes::node::online_cpus()?, opts.max_level);
        manager.set_boost_threshold(opts.boost_threshold);
        // The module's state is ours from here, and goes with the Proxy
        // (its drop resets) or with our file (the module's release): any
        // return below leaves nothing parked, lent or emulated. Claimed
        // before the policy loads: the module lets only its owner's process
        // load programs that call its kfuncs. The claim undoes what a
        // previous owner could not (or what was made with no owner). Its
        // generation goes into the policy's .rodata: the module's kfuncs
        // act only for programs that pass the current owner's, so a policy
        // that outlives our ownership (unloading after we died) lends
        // nothing under the next owner.
        let proxy = crate::module::proxy::Proxy::open()?;
        match (&proxy, opts.emulate) {
            (Some(p), _) => {
                let claimed = p.claim()?;
                if let Some(what) = claimed.repaired() {
                    warn!("chameleon_proxy: a previous owner went away without undoing its state; the module undid it: {what}");
                }
                skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?.proxy_gen = claimed.generation;
            }
            (None, Some(_)) => bail!("--emulate needs the chameleon_proxy module ({} is missing: insmod chameleon_proxy.ko)", crate::module::proxy::DEVICE),
            (None, None) => {}
        }

        // Before any file is opened for tasks: how many the agent may hold.
        let fd_budget = crate::agent::fd_budget::FdBudget::for_limit(crate::agent::fd_budget::raise_nofile_limit());
        info!("file descriptors for tasks: at most {} pidfds (requesters), {} instruction counters", fd_budget.pidfds, fd_budget.perf);
        let mut control = Server::bind(&opts.control_path)?;
        let t_load = Instant::now();
        let skel = scx_ops_load!(skel, chameleon_ops, uei)?;
        let load_ms = t_load.elapsed().as_millis();
        let tag_ids = crate::agent::apply_tags::apply(&skel.maps.tags, &mut inputs)?.tags;
        write_steal_orders(&skel.maps.steal_orders, nr_cpus)?;
        let metrics = std::sync::Arc::new(std::sync::Mutex::new(crate::report::metrics::Metrics::default()));
        let mut skel = skel;
        let t_attach = Instant::now();
        let struct_ops = {
            let _rt = crate::agent::rt_attach::RtWhileAttaching::enter();
            Some(scx_ops_attach!(skel, chameleon_ops)?)
        };
        debug!("policy loaded (verified) in {load_ms} ms, attached in {} ms", t_attach.elapsed().as_millis());
        report_verifier(&skel);
        // Before the emulation starts, like every step that can fail: a
        // failure drops the locals declared after `proxy` (the attach, the
        // policy) before it, so the policy is detached when it resets.
        let stats_server = crate::report::metrics::serve(metrics.clone())?;
        if let Some(p) = &proxy {
            let kfuncs = skel.maps.bss_data.as_ref().is_some_and(|b| b.proxy_on);
            info!(
                "chameleon_proxy: {}",
                if kfuncs { "processor proxies on (kfuncs bound)" } else { "kfuncs not bound (no module BTF, or the policy speaks another ABI): park and emulation only, no proxies" }
            );
            if let Some(how) = opts.emulate {
                p.emulate(Some(how))?;
                info!("emulating fused processors: {how:?}");
            }
        }
        // The helper threads, last: each step before can fail, and they
        // need the loaded maps.
        let inbox = Inbox::new()?;
        let tags_map = libbpf_rs::MapHandle::try_from(&skel.maps.tags).context("a handle on the tags map")?;
        let tags = TagWorker::start(tags_map, inputs, inbox.mailbox())?;
        let proxy = proxy.map(std::sync::Arc::new);
        let module = match &proxy {
            Some(p) => {
                let kfuncs = skel.maps.bss_data.as_ref().is_some_and(|b| b.proxy_on);
                Some(ModuleWorker::start(p.clone(), kfuncs, inbox.mailbox())?)
            }
            None => None,
        };
        control.start(crate::agent::inbox::router(inbox.mailbox(), tags.sender()))?;
        info!(
            "scx_chameleon attached: {} CPUs, slice {} us, min granularity {} us, lending bound {} ms, watchdog {} ms",
            nr_cpus, opts.slice_us, opts.min_gran_us, opts.lend_wait_ms, opts.watchdog_timeout_ms
        );
        Ok(Scheduler {
            skel,
            struct_ops,
            opts: opts.clone(),
            nr_cpus,
            assign: Assigner::new(manager, tag_ids, Status::new(&opts.status_path).with_run_id(opts.run_id), opts.node_cpus.is_none().then(|| opts.topology.clone()))
                .with_fd_budget(fd_budget)
                .without_exit_notice(opts.no_exit_notice)
                .with_share_period(Duration::from_millis(opts.share_period_ms)),
            inbox,
            tags,
            control,
            module,
            _proxy: proxy,
            metrics,
            _stats_server: stats_server,
        })
    }


    /// Serve until `shutdown` is set or the policy exits; returns how it exited.
    /// `hup` (SIGHUP) re-reads the rules file.
    pub fn run(&mut self, shutdown: &Shutdown, hup: &Doorbell) -> Result<UserExitInfo> {
        let print_events = self.opts.print_events;
        let stats_interval = self.opts.stats_interval;
        let mut nr_events = 0u64;
        // The callback only queues; handling needs &mut self, after the poll.
        let queue: Rc<RefCell<Vec<Event>>> = Rc::default();
        let rb = {
            let queue = queue.clone();
            let mut rb = RingBufferBuilder::new();
            rb.add(&self.skel.maps.events, move |data: &[u8]| {
                match Event::parse(data) {
                    Some(ev) => queue.borrow_mut().push(ev),
                    None => warn!("short event record ({} bytes): agent and policy disagree", data.len()),
                }
                0
            })?;
            rb.build()?
        };
        // SAFETY: the ring buffer, whose epoll fd this borrows, lives until
        // the loop below ends.
        let rb_fd = unsafe { BorrowedFd::borrow_raw(rb.epoll_fd()) };
        let assignments = &self.skel.maps.assignments;
        let tag_map = &self.skel.maps.tags;
        let assign = &mut self.assign;
        // BPF reads tags_gen at every enqueue; only this loop writes it.
        let word = NonNull::from(&mut self.skel.maps.bss_data.as_mut().expect(".bss is mapped").tags_gen);
        // SAFETY: the .bss stays mapped while self.skel lives, which outlives
        // this loop, and nothing else in the agent writes tags_gen.
        let tags_gen = unsafe { TagsGen::new(word) };
        let control = &self.control;
        let inbox = &self.inbox;
        let module = self.module.as_ref();
        let to_tags = self.tags.sender();
        let park_prog = &self.skel.progs.chameleon_park;
        let nr_cpus = self.nr_cpus;
        // The module as its thread last read it: its state for the status,
        // its numbers for the metrics, taken together once a second.
        let mut module_read: Option<crate::module::proxy::ModuleRead> = module.and_then(|m| m.latest());
        let skel = &self.skel;
        // A park or unpark waiting for the module (park_op.rs), and the id
        // of the last one asked.
        let mut parking: Option<crate::agent::park_op::Pending> = None;
        let mut park_id = 0u64;
        // How late each tick and rotation ran (lateness.rs).
        let mut lateness = Lateness::default();
        let drain = |assign: &mut Assigner, nr_events: &mut u64| {
            let evs: Vec<Event> = std::mem::take(&mut *queue.borrow_mut());
            let stream = control.has_subscribers();
            for ev in &evs {
                *nr_events += 1;
                if print_events {
                    crate::out!("event {ev}");
                }
                if stream {
                    if let Ok(mut line) = serde_json::to_vec(ev) {
                        line.push(b'\n');
                        control.broadcast(&line);
                    }
                }
                assign.handle(ev, assignments, tag_map, &self.skel.maps.cg_weights);
            }
        };

        let start = Totals::default();
        let mut last = start;
        let mut last_print = Instant::now();
        // Due at once: the status file and the counters a monitor reads are
        // there from the start, not a second later (a monitor reaching a
        // new agent would print a line of zeros first).
        let mut last_status = Instant::now().checked_sub(Duration::from_secs(1)).unwrap_or_else(Instant::now);
        let mut invariants_seen = 0u64;
        let mut last_tick = Instant::now();
        let panic_at = self.opts.test_panic_after.map(|d| Instant::now() + d);
        while !shutdown.requested() && !uei_exited!(&self.skel, uei) {
            // Sleep until an event, a client or the next sample is due: an
            // idle agent (no tagged task) wakes once a second, not 50 times
            // (under TCG the 20 ms loop cost 2 % of a CPU, which a parallel
            // program with a thread per CPU lost: bench Fig. 4).
            let every = if assign.busy() { TICK_BUSY } else { TICK_IDLE };
            let tick_in = every.saturating_sub(last_tick.elapsed());
            // Fast contexts rotate on their own clock (--share-period-ms),
            // and the tick rides on a rotation due within half a tick of
            // it: one wakeup, not two (every wakeup of this loop under a
            // 30 ms rotation is CPU time taken from the tasks it shares).
            let mut timeout = next_wakeup(tick_in, every, assign.until_rotation());
            if let Some(at) = panic_at {
                let now = Instant::now();
                if now >= at {
                    panic!("--test-panic-after-ms: panicking in the main loop, as asked");
                }
                timeout = timeout.min(at - now);
            }
            wait_readable(&[rb_fd, inbox.fd(), shutdown.fd(), hup.fd()], timeout)
                .context("waiting for events and clients")?;
            if let Err(e) = rb.consume() {
                return Err(e).context("reading the event ring buffer");
            }
            drain(assign, &mut nr_events);
            for msg in inbox.drain() {
                match msg {
                    ToLoop::Control(req, reply) => match req.op {
                        Op::Status => {
                            let parked = assign.parked().iter().copied().collect();
                            let _ = reply.send(Response::status(&assign.snapshot(live_status(skel, nr_cpus, parked, module_read.as_ref().map(|r| r.state.clone())))));
                        }
                        Op::Park { cpus: list, holdoff_ms } => {
                            park_id += 1;
                            let holdoff = Some(holdoff_ms.unwrap_or(crate::module::proxy::DEFAULT_HOLDOFF_MS));
                            let started = crate::agent::park_op::start(assign, assignments, park_prog, module, parking.is_some(), park_id, nr_cpus, &list, holdoff, reply);
                            parking = parking.or(started);
                        }
                        Op::Unpark { cpus: list } => {
                            park_id += 1;
                            let started = crate::agent::park_op::start(assign, assignments, park_prog, module, parking.is_some(), park_id, nr_cpus, &list, None, reply);
                            parking = parking.or(started);
                        }
                        _ => {
                            let _ = reply.send(Response::err("not a request the loop answers"));
                        }
                    },
                    ToLoop::Tags { tags, changed, replies } => {
                        if changed || &tags != assign.tags() {
                            assign.set_tags(tags);
                        }
                        if changed {
                            tags_gen.bump();
                        }
                        for (reply, r) in replies {
                            let _ = reply.send(r);
                        }
                    }
                    ToLoop::ModuleDone { id, result } => {
                        if let Some(p) = parking.take_if(|p| p.id == id) {
                            crate::agent::park_op::finish(assign, assignments, park_prog, p, Some(result));
                        }
                    }
                }
            }
            if hup.take() {
                // Logged either way; a bad file keeps the rules in force.
                let _ = to_tags.send(TagCmd::ReloadRules(None));
            }
            let overdue = assign.rotation_overdue();
            let rotated = assign.rotate(assignments, &self.skel.maps.cg_weights);
            if let (true, Some(late)) = (rotated, overdue) {
                lateness.record(late);
            }
            // Sampled on the clock only: a wakeup by an event (a split when an
            // untagged task takes a representative...) is not a fair moment to
            // count untagged tasks (alloc_weights saw a phantom load of 1-2).
            // A rotation is on the clock too.
            let since = last_tick.elapsed();
            if tick_due(since, every, rotated) {
                // A tick carried by a rotation was timed with it.
                if !rotated {
                    lateness.record(since.saturating_sub(every));
                }
                last_tick = Instant::now();
                let untagged = self.skel.maps.bss_data.as_ref().map_or(0, |b| {
                    crate::agent::untagged_load::untagged_runnable(b.cpu_stats[..self.nr_cpus].iter().map(|c| c.nr_untagged))
                });
                assign.tick(assignments, &self.skel.maps.task_ctxs, untagged);
            }
            let force = last_status.elapsed() >= Duration::from_secs(1);
            if force {
                last_status = Instant::now();
                if let Some(m) = module {
                    let kfuncs = self.skel.maps.bss_data.as_ref().is_some_and(|b| b.proxy_on);
                    m.kfuncs.store(kfuncs, std::sync::atomic::Ordering::Relaxed);
                    module_read = m.latest();
                }
                let bss = self.skel.maps.bss_data.as_ref().expect(".bss is mapped");
                let dropped = bss.nr_events_dropped;
                // Each increase is a policy bug: said in the log, which every VM test checks.
                let broken = invariants_total(&bss.invariants);
                if broken > invariants_seen {
                    warn!("invariant broken: {}", invariants_line(&bss.invariants));
                    invariants_seen = broken;
                }
                let mut m = crate::report::metrics::Metrics::from_totals(&totals(&self.skel, self.nr_cpus), dropped)
                    .with_invariants([bss.invariants.lent_to_non_rep, bss.invariants.owner_gone, bss.invariants.queue_forbidden], bss.nr_demand_dropped)
                    .with_module(module_read.as_ref())
                    .with_lateness(&lateness)
                    .with_limits(crate::report::metrics::Limits { control_accept_backoffs: control.accept_backoffs(), ..assign.limits() })
                    .with_run_id(self.opts.run_id);
                m.nri_rejected = crate::tags::request::nri_rejected();
                m.sampled_ms = crate::report::metrics::monotonic_ms();
                *self.metrics.lock().unwrap() = m;
            }
            if assign.status_due(force) {
                let parked = assign.parked().iter().copied().collect();
                assign.write_status(live_status(&self.skel, self.nr_cpus, parked, module_read.as_ref().map(|r| r.state.clone())));
            }
            if let Some(every) = stats_interval {
                if last_print.elapsed() >= every {
                    let now = totals(&self.skel, self.nr_cpus);
                    crate::out!("stats {}", now.since(&last));
                    last = now;
                    last_print = Instant::now();
                }
            }
        }
        let _ = rb.consume();
        drain(assign, &mut nr_events);
        assign.remove_status();
        let bss = self.skel.maps.bss_data.as_ref().expect(".bss is mapped");
        crate::out!(
            "summary events={} dropped={} demand_dropped={} cpu_online={} cpu_offline={} rescued={} starved={} guard_runs={} guard_cpus={} guard_sweep_finds={} guard_restarts={} {} {}",
            nr_events,
            bss.nr_events_dropped,
            bss.nr_demand_dropped,
            bss.nr_cpu_online_events,
            bss.nr_cpu_offline_events,
            bss.nr_rescued,
            bss.nr_starved,
            bss.nr_guard_runs,
            bss.nr_guard_cpus,
            bss.nr_guard_sweep_finds,
            bss.nr_guard_restarts,
            invariants_line(&bss.invariants),
            totals(&self.skel, self.nr_cpus).since(&start)
        );

        // Detach before reading the exit info so that a SIGTERM exit reads as
        // "unregistered from user space" rather than "still running". Parked
        // CPUs come back and emulation stops when the Proxy is dropped, on
        // every way out (an error above included).
        self.struct_ops.take();
        uei_report!(&self.skel, uei)
    }
}

impl Scheduler<'_> {
    /// The rules in force, to carry across a restart (`init_with`).
    pub fn take_rules(&mut self) -> Option<crate::tags::rules::RuleSet> {
        self.tags.stop().and_then(|inputs| inputs.rules)
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        if self.struct_ops.take().is_some() {
            info!("scx_chameleon detached");
        }
    }
}

/// How often the loop samples the untagged load and ages sleepers while a
/// tagged task is known; and otherwise (the status file and the metrics are
/// refreshed once a second).
const TICK_BUSY: Duration = Duration::from_millis(20);
const TICK_IDLE: Duration = Duration::from_secs(1);
/// How long the loop may sleep: until the tick (`tick_in`, one every
/// `every`) or the next rotation, whichever is first, except that a rotation
/// due within half a tick after the tick takes the tick with it (tick_due).
fn next_wakeup(tick_in: Duration, every: Duration, until_rotation: Option<Duration>) -> Duration {
    match until_rotation {
        Some(r) if r <= tick_in + every / 2 => r,
        Some(r) => r.min(tick_in),
        None => tick_in,
    }
}

/// Is the tick due, `since` the last one: on its clock, or carried by a
/// rotation once half of it has passed.
fn tick_due(since: Duration, every: Duration, rotated: bool) -> bool {
    since >= every || (rotated && since >= every / 2)
}

/// poll()'s timeout for `timeout`: whole milliseconds, rounded up. Rounded
/// down, the last fraction of a millisecond before a tick was a timeout of
/// 0, and the loop spun through it: with a tagged task the agent woke about
/// 300 times a second instead of 50 under TCG, and every wakeup's accept()
/// on the control socket (EAGAIN) freed a socket file through RCU, which
/// kept rcu_preempt in grace periods (100 wakeups a second against 5).
fn poll_ms(timeout: Duration) -> i32 {
    timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
}

/// Block until one of `fds` is readable or `timeout` passes; which ones are.
/// A signal ending the wait early (EINTR) is not an error.
fn wait_readable(fds: &[BorrowedFd], timeout: Duration) -> Result<Vec<bool>> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut pfds: Vec<PollFd> = fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)).collect();
    let n = match poll(&mut pfds, PollTimeout::try_from(poll_ms(timeout)).unwrap_or(PollTimeout::MAX)) {
        Ok(n) => n,
        Err(nix::errno::Errno::EINTR) => 0,
        Err(e) => return Err(e.into()),
    };
    Ok(pfds.iter().map(|p| n > 0 && p.revents().is_some_and(|r| !r.is_empty())).collect())
}

#[cfg(test)]
mod tests;
