//! The agent's life: `Scheduler::init` opens, configures, loads and
//! attaches the policy (policy_setup.rs) and starts the helper threads;
//! `Scheduler::run` serves the loop (agent_loop.rs) until shutdown or until
//! the kernel ejects the policy, and returns the exit info so that the
//! caller can restart when the kernel asks for it (`should_restart()`).
//! The shape follows scx_rusty.

use crate::agent::agent_loop::{AgentLoop, Parts};
use crate::agent::apply_tags::{TagInputs, TagsGen};
use crate::agent::assign::Assigner;
use crate::agent::inbox::Inbox;
use crate::agent::module_worker::ModuleWorker;
use crate::agent::opts::Opts;
use crate::agent::signals::{Doorbell, Shutdown};
use crate::agent::tag_worker::TagWorker;
use crate::bpf_skel::{BpfSkel, OpenBpfSkel};
use crate::control::Server;
use crate::module::proxy::Proxy;
use crate::nodes::node::Node;
use crate::nodes::node_manager::NodeManager;
use crate::report::status::Status;
use crate::tags::rules::RuleSet;
use crate::tags::tag::Props;
use anyhow::{bail, Context, Result};
use libbpf_rs::{Link, OpenObject};
use scx_utils::{uei_report, UserExitInfo};
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

use crate::bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as MAX_CPUS;

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

/// The helper threads, and the module they share with the policy.
struct Helpers {
    inbox: Inbox,
    tags: TagWorker,
    module: Option<ModuleWorker>,
    proxy: Option<Arc<Proxy>>,
}

impl<'a> Scheduler<'a> {
    pub fn init(opts: &Opts, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        Self::init_with(opts, None, open_object)
    }

    /// `init`, with the rules in force before a restart (`kept`) rather than
    /// the file as it is now: a file broken since then must not stop the
    /// restart any more than it stopped the running agent.
    ///
    /// Every step can fail, and a failure undoes the steps before it as
    /// their values drop, in reverse order: the policy is detached before
    /// the module resets (`proxy` is bound before the loaded policy).
    pub fn init_with(opts: &Opts, kept: Option<RuleSet>, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        opts.validate()?;
        let nr_cpus = *scx_utils::NR_CPU_IDS;
        if nr_cpus > MAX_CPUS as usize {
            bail!("{nr_cpus} possible CPUs; scx_chameleon supports at most {MAX_CPUS}");
        }
        let mut skel = crate::agent::policy_setup::open(opts, nr_cpus, open_object)?;

        // Resolve tags before loading: a bad cgroup path fails here, cleanly.
        // Tags in force: the ones stored on cgroups plus --tag, inherited by
        // descendants without their own.
        let extra = tag_paths(opts)?;
        let nodes = nodes(opts, nr_cpus)?;
        crate::agent::policy_setup::set_fast_cpus(&mut skel, opts, nr_cpus)?;
        let largest = nodes.iter().map(|n| n.slots.len()).max().unwrap_or(0);
        check_tag_levels(opts, largest)?;
        let rules = rules_in_force(kept, opts.rules.as_ref(), largest)?;
        let mut inputs = TagInputs::new(extra, opts.rules.clone(), rules, largest);
        let mut manager = NodeManager::new(nodes, crate::nodes::node::online_cpus()?, opts.max_level);
        manager.set_boost_threshold(opts.boost_threshold);
        let proxy = claim_module(&mut skel, opts)?;

        // Before any file is opened for tasks: how many the agent may hold.
        let fd_budget = crate::agent::fd_budget::FdBudget::for_limit(crate::agent::fd_budget::raise_nofile_limit());
        info!("file descriptors for tasks: at most {} pidfds (requesters), {} instruction counters", fd_budget.pidfds, fd_budget.perf);
        let mut control = Server::bind(&opts.control_path)?;
        let (skel, struct_ops, tag_ids) = crate::agent::policy_setup::load_and_attach(skel, &mut inputs, nr_cpus)?;
        let metrics = Arc::new(std::sync::Mutex::new(crate::report::metrics::Metrics::default()));
        // Before the emulation starts, like every step that can fail.
        let stats_server = crate::report::metrics::serve(metrics.clone())?;
        if let Some(p) = &proxy {
            start_module(p, &skel, opts)?;
        }
        let helpers = start_helpers(&skel, inputs, proxy, &mut control)?;
        info!(
            "scx_chameleon attached: {} CPUs, slice {} us, min granularity {} us, lending bound {} ms, watchdog {} ms",
            nr_cpus, opts.slice_us, opts.min_gran_us, opts.lend_wait_ms, opts.watchdog_timeout_ms
        );
        Ok(Scheduler {
            skel,
            struct_ops: Some(struct_ops),
            opts: opts.clone(),
            nr_cpus,
            assign: Assigner::new(manager, tag_ids, Status::new(&opts.status_path).with_run_id(opts.run_id), opts.node_cpus.is_none().then(|| opts.topology.clone()))
                .with_fd_budget(fd_budget)
                .without_exit_notice(opts.no_exit_notice)
                .with_share_period(Duration::from_millis(opts.share_period_ms)),
            inbox: helpers.inbox,
            tags: helpers.tags,
            control,
            module: helpers.module,
            _proxy: helpers.proxy,
            metrics,
            _stats_server: stats_server,
        })
    }

    /// Serve until `shutdown` is set or the policy exits; returns how it exited.
    /// `hup` (SIGHUP) re-reads the rules file.
    pub fn run(&mut self, shutdown: &Shutdown, hup: &Doorbell) -> Result<UserExitInfo> {
        // BPF reads tags_gen at every enqueue; only the loop writes it.
        let word = NonNull::from(&mut self.skel.maps.bss_data.as_mut().expect(".bss is mapped").tags_gen);
        // SAFETY: the .bss stays mapped while self.skel lives, which outlives
        // the loop, and nothing else in the agent writes tags_gen.
        let tags_gen = unsafe { TagsGen::new(word) };
        AgentLoop::new(Parts {
            skel: &self.skel,
            assign: &mut self.assign,
            control: &self.control,
            inbox: &self.inbox,
            module: self.module.as_ref(),
            to_tags: self.tags.sender(),
            metrics: &self.metrics,
            opts: &self.opts,
            nr_cpus: self.nr_cpus,
            tags_gen,
        })?
        .run(shutdown, hup)?;

        // Detach before reading the exit info so that a SIGTERM exit reads as
        // "unregistered from user space" rather than "still running". Parked
        // CPUs come back and emulation stops when the Proxy is dropped, on
        // every way out (an error above included).
        self.struct_ops.take();
        uei_report!(&self.skel, uei)
    }
}

/// --tag's cgroups, resolved as `tag` resolves them (beneath the mount, no
/// links); the root however named (`seq/..`) is refused.
fn tag_paths(opts: &Opts) -> Result<Vec<(PathBuf, Props)>> {
    let mut extra = Vec::new();
    for t in &opts.tags {
        crate::tags::store::refuse_root(&crate::tags::cgroup_dir::Tree::cgroup()?.resolve(&t.path)?)?;
        extra.push((t.path.clone(), t.props));
    }
    Ok(extra)
}

/// The nodes objects are placed in: --nodes, or one per LLC.
fn nodes(opts: &Opts, nr_cpus: usize) -> Result<Vec<Node>> {
    let nodes = match &opts.node_cpus {
        Some(spec) => crate::nodes::node::parse_nodes(spec, nr_cpus)?,
        None => crate::nodes::node::from_topology(&opts.topology)?,
    };
    info!("nodes: {:?}", nodes.iter().map(|n| &n.slots).collect::<Vec<_>>());
    Ok(nodes)
}

/// Same rule as `scx_chameleon tag`: a level no node can form (`largest`:
/// the CPUs of the largest node) is refused.
fn check_tag_levels(opts: &Opts, largest: usize) -> Result<()> {
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
    Ok(())
}

/// The rules to start with: those `kept` across a restart, or the rules
/// file read now. A bad file stops the start here, naming file, line and field.
fn rules_in_force(kept: Option<RuleSet>, file: Option<&PathBuf>, largest: usize) -> Result<Option<RuleSet>> {
    Ok(match (kept, file) {
        (Some(r), _) => Some(r),
        (None, Some(file)) => {
            let r = crate::agent::apply_tags::load_rules(file, largest)?;
            info!("rules: {} from {}", r.rules.len(), file.display());
            Some(r)
        }
        (None, None) => None,
    })
}

/// Claim the companion module, if loaded (--emulate needs it).
///
/// The module's state is ours from here, and goes with the Proxy (its drop
/// resets) or with our file (the module's release): any failure after this
/// leaves nothing parked, lent or emulated. Claimed before the policy
/// loads: the module lets only its owner's process load programs that call
/// its kfuncs. The claim undoes what a previous owner could not (or what
/// was made with no owner). Its generation goes into the policy's .rodata:
/// the module's kfuncs act only for programs that pass the current owner's,
/// so a policy that outlives our ownership (unloading after we died) lends
/// nothing under the next owner.
fn claim_module(skel: &mut OpenBpfSkel, opts: &Opts) -> Result<Option<Proxy>> {
    let proxy = Proxy::open()?;
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
    Ok(proxy)
}

/// The module with the policy attached: whether the policy's kfuncs are
/// bound (processor proxies), and --emulate's duty cycles started.
fn start_module(p: &Proxy, skel: &BpfSkel, opts: &Opts) -> Result<()> {
    let kfuncs = skel.maps.bss_data.as_ref().is_some_and(|b| b.proxy_on);
    info!(
        "chameleon_proxy: {}",
        if kfuncs { "processor proxies on (kfuncs bound)" } else { "kfuncs not bound (no module BTF, or the policy speaks another ABI): park and emulation only, no proxies" }
    );
    if let Some(how) = opts.emulate {
        p.emulate(Some(how))?;
        info!("emulating fused processors: {how:?}");
    }
    Ok(())
}

/// The helper threads, last: each step before can fail, and they need the
/// loaded maps. The control server starts serving last of all.
fn start_helpers(skel: &BpfSkel, inputs: TagInputs, proxy: Option<Proxy>, control: &mut Server) -> Result<Helpers> {
    let inbox = Inbox::new()?;
    let tags_map = libbpf_rs::MapHandle::try_from(&skel.maps.tags).context("a handle on the tags map")?;
    let tags = TagWorker::start(tags_map, inputs, inbox.mailbox())?;
    let proxy = proxy.map(Arc::new);
    let module = match &proxy {
        Some(p) => {
            let kfuncs = skel.maps.bss_data.as_ref().is_some_and(|b| b.proxy_on);
            Some(ModuleWorker::start(p.clone(), kfuncs, inbox.mailbox())?)
        }
        None => None,
    };
    control.start(crate::agent::router::router(inbox.mailbox(), tags.sender()))?;
    Ok(Helpers { inbox, tags, module, proxy })
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
