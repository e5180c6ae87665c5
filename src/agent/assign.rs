//! Turns the policy's reports into object assignments through the node
//! manager and publishes them: a tagged task appears (DEMAND) -> it asks for
//! an object; it exits, leaves its tag, or a CPU goes away -> the manager
//! rebalances. Every second it reconciles (tasks gone without a notice, the
//! untagged load), so a lost event cannot leave CPUs stranded. While
//! requesters outnumber the pairs, an accounting period starts every
//! `--share-period-ms` (the node manager's `rotate`, AASH's fast queue); the
//! boost counts a cgroup's awake requesters from the sleep/wake events, capped
//! by BPF's count of its runnable tasks. Data flows one way: tag -> map ->
//! BPF -> event -> here -> map.

use crate::nodes::auto_tax::{Controller, Decision, Phase};
use crate::bpf_intf;
use crate::report::event::{Event, Kind};
use crate::nodes::fast_share::Member;
use crate::nodes::node_manager::{Change, NodeManager, Object, Request};
use crate::agent::object_map::{no_object, ObjectMap, Track};
use crate::report::status::{Live, Status};
use crate::tags::tag::{tax_text, Prio, Props};
use libbpf_rs::{MapCore, MapFlags};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// The tracing target of the agent's decisions, one debug line each:
/// `assign pid=… cpus=… gen=… tax=… ts_ns=…`, `unassign pid=… ts_ns=…`,
/// `rebalanced changes=… after_us=…`, `untagged load=…`, `autotax pid=…`.
/// Off unless asked (`--log-level info,decisions=debug`): the VM tests and
/// benches read them from the log; an agent in service does not pay for
/// formatting a line per rotation.
pub const DECISIONS: &str = "decisions";

pub const RECONCILE_EVERY: Duration = Duration::from_secs(1);
/// The node manager decides incrementally; this often a full recompute
/// checks that it still decides the same (and corrects it if not).
pub const AUDIT_EVERY: Duration = Duration::from_secs(10);
/// A tagged task asleep this long gives its object up until it wakes: CPUs
/// are not reserved for a thread that does not run (§4.3.5).
pub const SLEEP_RELEASE: Duration = Duration::from_millis(100);
/// Reconciles in a row a new untagged load must be seen before it counts.
const UNTAGGED_STEADY: u32 = 3;
const AUTO_EVERY: Duration = Duration::from_millis(crate::nodes::auto_tax::INTERVAL_MS);

/// A tagged task whose tag says `tax=auto`: its controller, where its
/// progress comes from, and what is published for it now.
struct AutoTask {
    ctl: Controller,
    probe: crate::nodes::progress::Probe,
    now: Decision,
    /// The tax last printed, and whether a speed-up was printed with it:
    /// the first estimate is printed even if it leaves the tax where it
    /// was (a task measured at 1.3x stays at 1.00, and a reader of the log
    /// would see no speed-up at all).
    shown: Option<(u32, bool)>,
}

impl AutoTask {
    fn new(pid: i32) -> Self {
        let ctl = Controller::new();
        let now = Decision { tax: ctl.tax(), withdraw: false };
        AutoTask { ctl, probe: crate::nodes::progress::Probe::new(pid), now, shown: None }
    }
}

pub struct Assigner {
    manager: NodeManager,
    /// Tagged cgroups: id -> properties.
    tags: HashMap<u64, Props>,
    /// Tagged tasks alive: pid -> their cgroup's properties, object level, cgroup id.
    requesters: HashMap<i32, (Props, u32, u64)>,
    /// The policy's `assignments` map, written through a pidfd per requester.
    objects: ObjectMap,
    /// The CPU each requester's last event came from: where it waits, for
    /// the rotation to make a representative nearby (no /proc read per
    /// waiter per rotation on the loop).
    seen_on: HashMap<i32, usize>,
    /// Tagged tasks asleep, since when; and those whose object was released for it.
    asleep: HashMap<i32, Instant>,
    dormant: HashSet<i32>,
    last_reconcile: Instant,
    last_audit: Instant,
    /// Runnable-untagged samples since the last reconcile (one per agent loop).
    running_samples: Vec<usize>,
    /// A higher untagged-load estimate and how many reconciles in a row saw
    /// it (see untagged_step).
    untagged_next: Option<(usize, u32)>,
    status: Status,
    /// Read the topology again when an unknown CPU comes online, this way
    /// (None: the nodes were given by --node-cpus).
    reread_topology: Option<crate::nodes::node::TopologyOpts>,
    /// CPUs parked (`scx_chameleon park`): not there for the node manager.
    parked: std::collections::BTreeSet<usize>,
    /// Task-exit events are ignored (bench: Chameleon Fig. 6, "3*"); a gone
    /// task is then found by the sleeper release or the reconcile.
    ignore_exits: bool,
    /// Accounting period of the fast contexts, and when the last one started.
    share_period: Duration,
    last_rotate: Instant,
    /// Requesters whose tax is automatic (auto_tax.rs), by pid.
    auto: HashMap<i32, AutoTask>,
    last_auto: Instant,
}

/// Nanoseconds on the clock bpf_ktime_get_ns() uses, to time decisions
/// against the events that caused them.
pub fn monotonic_ns() -> u64 {
    crate::report::metrics::clock_ns(nix::time::ClockId::CLOCK_MONOTONIC)
}

/// One reconcile of the untagged-load estimate: `current` is in force, `seen`
/// the load measured over the last second, `pending` a higher load seen
/// before (the lowest of a streak) and for how many reconciles in a row.
/// Returns the load to apply now, if any, and the new `pending`.
///
/// Asymmetric on purpose: taking CPUs from objects (a higher load) splits
/// them, so the load must hold for UNTAGGED_STEADY reconciles and a shell or
/// a short job does not make objects flap; a lower load leaves CPUs idle, so
/// it applies at once (a task that was untagged and is now tagged gets its
/// whole object back within a reconcile). Shrinks are thus at most one per
/// UNTAGGED_STEADY seconds.
pub fn untagged_step(current: usize, seen: usize, pending: Option<(usize, u32)>) -> (Option<usize>, Option<(usize, u32)>) {
    if seen == current {
        return (None, None);
    }
    if seen < current {
        return (Some(seen), None);
    }
    // Higher than in force: the streak goes on even if the load moves, and
    // what applies is the lowest seen in it (a load that flickered between 4
    // and 5 restarted an exact-match streak for 10 s in contention).
    let (low, k) = match pending {
        Some((n, k)) => (n.min(seen), k + 1),
        None => (seen, 1),
    };
    if k >= UNTAGGED_STEADY {
        (Some(low), None)
    } else {
        (None, Some((low, k)))
    }
}

/// The untagged load that held over a reconcile window: the 10th percentile
/// of its samples, which are cleared. The count comes from the policy
/// (cpu_stats[].nr_untagged), exact at each instant, so what this filters is
/// what did not last: a shell's commands, kworkers, a CLI polling the agent
/// (present in most samples under TCG, but not in nine in ten), and the rare
/// sample taken while a task was between stopping() and runnable() for a
/// property change (under TCG a vCPU can stop for milliseconds inside that
/// window; the minimum, which one such sample defeats, missed 4 steady
/// spinners for 20 s in a make test). It used to be /proc/stat's
/// procs_running, which also misses migrating tasks.
pub fn steady_running(samples: &mut Vec<usize>) -> Option<usize> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let p10 = samples[samples.len() / 10];
    samples.clear();
    Some(p10)
}

/// Runnable untagged tasks from the policy's per-CPU counts, whose sum alone
/// is meaningful (a task may wake on one CPU and sleep on another).
pub fn untagged_runnable(per_cpu: impl IntoIterator<Item = u64>) -> usize {
    let sum = per_cpu.into_iter().fold(0u64, |a, n| a.wrapping_add(n)) as i64;
    sum.max(0) as usize
}

impl Assigner {
    pub fn new(manager: NodeManager, tags: HashMap<u64, Props>, status: Status, reread_topology: Option<crate::nodes::node::TopologyOpts>) -> Self {
        Assigner {
            manager,
            tags,
            requesters: HashMap::new(),
            objects: ObjectMap::default(),
            seen_on: HashMap::new(),
            asleep: HashMap::new(),
            dormant: HashSet::new(),
            last_reconcile: Instant::now(),
            last_audit: Instant::now(),
            running_samples: Vec::new(),
            untagged_next: None,
            status,
            reread_topology,
            parked: Default::default(),
            ignore_exits: false,
            share_period: Duration::from_millis(30),
            last_rotate: Instant::now(),
            auto: HashMap::new(),
            last_auto: Instant::now(),
        }
    }

    /// The accounting period of the fast contexts (`--share-period-ms`).
    pub fn with_share_period(mut self, period: Duration) -> Self {
        self.share_period = period;
        self
    }

    /// Ignore task-exit events (see `ignore_exits`).
    pub fn without_exit_notice(mut self, on: bool) -> Self {
        self.ignore_exits = on;
        self
    }

    /// The tax a task pays now: its tag's, or its controller's (always
    /// 1..=10000: an auto tag's 0 never reaches BPF).
    fn tax_of(&self, pid: i32) -> u32 {
        match (self.auto.get(&pid), self.requesters.get(&pid)) {
            (Some(a), _) => a.now.tax,
            (None, Some((p, _, _))) if !p.auto_tax() => p.tax,
            _ => crate::tags::tag::TAX_ONE,
        }
    }

    /// The BPF value for a task's object.
    fn value(&self, pid: i32, obj: &Object) -> bpf_intf::chameleon_assignment {
        let mut a = bpf_intf::chameleon_assignment {
            pid,
            nr_cpus: obj.cpus.len() as u32,
            generation: obj.gen,
            tax: self.tax_of(pid),
            // uni: the core stays its owner's while it runs (see intf.h).
            flags: match self.requesters.get(&pid).map(|(p, _, _)| p.smt) {
                Some(crate::tags::tag::Smt::Uni) => bpf_intf::chameleon_assign_flags_CHAMELEON_ASSIGN_HOLD,
                // kwork: held as well, its sibling the kernel-work context.
                Some(crate::tags::tag::Smt::Kwork) => {
                    bpf_intf::chameleon_assign_flags_CHAMELEON_ASSIGN_HOLD
                        | bpf_intf::chameleon_assign_flags_CHAMELEON_ASSIGN_KWORK
                }
                _ => 0,
            },
            ..no_object(pid)
        };
        for (slot, &c) in a.cpus.iter_mut().zip(&obj.cpus) {
            *slot = c as i32;
        }
        a
    }

    /// Publish the manager's decisions, each task's value written in place
    /// under its lock (ObjectMap::write). `cause_ns`: when the event that led
    /// to them happened (bpf_ktime_get_ns), to report the delay.
    fn publish(&mut self, map: &dyn MapCore, changes: Vec<Change>, cause_ns: Option<u64>) {
        if changes.is_empty() {
            return;
        }
        for ch in &changes {
            match &ch.object {
                Some(o) => {
                    let value = self.value(ch.pid, o);
                    debug!(target: DECISIONS, 
                        "assign pid={} cpus={:?} gen={} tax={}.{:02} ts_ns={}",
                        ch.pid,
                        o.cpus,
                        o.gen,
                        value.tax / 100,
                        value.tax % 100,
                        monotonic_ns()
                    );
                    // Withdrawn for a native sample (auto tax): published
                    // when that ends, from the manager's object then.
                    if self.auto.get(&ch.pid).is_some_and(|a| a.now.withdraw) {
                        continue;
                    }
                    if let Err(e) = self.objects.write(map, ch.pid, &value) {
                        warn!("publishing the object of pid {}: {e}", ch.pid);
                    }
                }
                None => {
                    debug!(target: DECISIONS, "unassign pid={} ts_ns={}", ch.pid, monotonic_ns());
                    if let Err(e) = self.objects.withdraw(map, ch.pid) {
                        warn!("withdrawing the object of pid {}: {e}", ch.pid);
                    }
                }
            }
        }
        if let Some(t) = cause_ns {
            debug!(target: DECISIONS, "rebalanced changes={} after_us={}", changes.len(), monotonic_ns().saturating_sub(t) / 1000);
        }
    }

    /// The tag in force for a cgroup: known at start, or inherited by a
    /// cgroup created since (BPF copied its parent's entry): read it there.
    fn tag_of(&mut self, cgid: u64, tags: &dyn MapCore) -> Option<Props> {
        if let Some(p) = self.tags.get(&cgid) {
            return Some(*p);
        }
        let raw = tags.lookup(&cgid.to_ne_bytes(), MapFlags::ANY).ok()??;
        if raw.len() < std::mem::size_of::<bpf_intf::chameleon_tag>() {
            return None;
        }
        // SAFETY: the length was checked; chameleon_tag is plain integers.
        let t: bpf_intf::chameleon_tag = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
        let props = Props::from_bpf(&t).ok()?;
        self.tags.insert(cgid, props);
        Some(props)
    }

    /// A requester's claim (`tag::claim`): its tag's weight, or its cgroup's
    /// `cpu.weight` as BPF keeps it (map `cg_weights`), read when it asks.
    fn claim_of(props: &Props, cgid: u64, cg_weights: &dyn MapCore) -> u32 {
        let cpu_weight = (props.weight == 0)
            .then(|| cg_weights.lookup(&cgid.to_ne_bytes(), MapFlags::ANY).ok().flatten())
            .flatten()
            .filter(|raw| raw.len() >= std::mem::size_of::<bpf_intf::chameleon_cg_weight>())
            // SAFETY: the length was checked; the struct is plain integers.
            .map(|raw| unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<bpf_intf::chameleon_cg_weight>()) }.weight);
        crate::tags::tag::claim(props.weight, cpu_weight)
    }

    /// A requester's class in the fast queue: its tag's prio, its cgroup.
    fn member(props: &Props, cgid: u64) -> Member {
        Member { high: props.prio == Prio::High, group: cgid }
    }

    /// A cgroup's runnable tasks as BPF counts them (cg_weights, cgroups
    /// with the cpu controller): sleep events come only from tasks holding
    /// an object, so this is what sees a waiter's sleep.
    fn runnable_of(cg_weights: &dyn MapCore, cgid: u64) -> Option<usize> {
        let raw = cg_weights.lookup(&cgid.to_ne_bytes(), MapFlags::ANY).ok()??;
        if raw.len() < std::mem::size_of::<bpf_intf::chameleon_cg_weight>() {
            return None;
        }
        // SAFETY: the length was checked; the struct is plain integers.
        let cw: bpf_intf::chameleon_cg_weight = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
        Some(cw.shards.iter().map(|s| s.nr_runnable).sum::<i32>().max(0) as usize)
    }

    pub fn handle(&mut self, ev: &Event, map: &dyn MapCore, tags: &dyn MapCore, cg_weights: &dyn MapCore) {
        if let Ok(cpu) = usize::try_from(ev.cpu) {
            if matches!(ev.kind, Kind::Demand) || self.requesters.contains_key(&ev.pid) {
                self.seen_on.insert(ev.pid, cpu);
            }
        }
        let changes = match ev.kind {
            // ev.level is the object level BPF derived from the tag and SMT class.
            Kind::Demand => match self.tag_of(ev.cgroup_id, tags) {
                Some(props) if ev.level > 0 => 'demand: {
                    // Held by a pidfd from now. A pid held for a task that
                    // exited unheard is a newcomer's: the old one's state goes.
                    let mut changes = match self.objects.track(ev.pid) {
                        Ok(Track::Replaced) => self.drop_state(ev.pid),
                        Ok(_) => Vec::new(),
                        // Gone already: its exit follows (or was lost).
                        Err(_) => break 'demand self.drop_state(ev.pid),
                    };
                    let old = self.requesters.insert(ev.pid, (props, ev.level, ev.cgroup_id));
                    if props.auto_tax() {
                        self.auto.entry(ev.pid).or_insert_with(|| AutoTask::new(ev.pid));
                    } else {
                        // Retagged to a fixed tax: published below with it
                        // (and no longer withdrawn).
                        self.auto.remove(&ev.pid);
                    }
                    let weight = Self::claim_of(&props, ev.cgroup_id, cg_weights);
                    let member = Self::member(&props, ev.cgroup_id);
                    // Its affinity before its first placement (no change to publish yet).
                    changes.extend(self.manager.set_allowed(ev.pid, crate::nodes::affinity::of(ev.pid)));
                    changes.extend(self.manager.request_as(ev.pid, Request { level: ev.level, weight }, member));
                    // Same CPUs but a new tax: BPF still needs the new value.
                    if old.is_some_and(|(p, _, _)| p != props) && !changes.iter().any(|c| c.pid == ev.pid) {
                        if let Some(o) = self.manager.object(ev.pid) {
                            changes.push(Change { pid: ev.pid, object: Some(o.clone()) });
                        }
                    }
                    changes
                }
                // Moved out of every tagged cgroup: it gives its object up.
                _ => self.withdraw(map, ev.pid),
            },
            Kind::TaskExit if self.ignore_exits => Vec::new(),
            // Gone from sched_ext: the kernel frees its value with it.
            Kind::TaskExit => self.withdraw(map, ev.pid),
            Kind::Sleep if self.requesters.contains_key(&ev.pid) => {
                self.asleep.entry(ev.pid).or_insert_with(Instant::now);
                self.manager.set_awake(ev.pid, false);
                Vec::new()
            }
            Kind::Wake => {
                self.asleep.remove(&ev.pid);
                self.manager.set_awake(ev.pid, true);
                match (self.dormant.remove(&ev.pid), self.requesters.get(&ev.pid)) {
                    (true, Some(&(p, level, cgid))) => {
                        let weight = Self::claim_of(&p, cgid, cg_weights);
                        let mut changes = self.manager.set_allowed(ev.pid, crate::nodes::affinity::of(ev.pid));
                        changes.extend(self.manager.request_as(ev.pid, Request { level, weight }, Self::member(&p, cgid)));
                        changes
                    }
                    _ => Vec::new(),
                }
            }
            Kind::CpuOffline if ev.cpu >= 0 => self.manager.set_online(ev.cpu as usize, false),
            Kind::CpuOnline if ev.cpu >= 0 => {
                let cpu = ev.cpu as usize;
                let mut changes = self.manager.set_online(cpu, !self.parked.contains(&cpu));
                // Offline at start, so not in the topology we read: read it again.
                if let (false, Some(opts)) = (self.manager.has_cpu(cpu), &self.reread_topology) {
                    match crate::nodes::node::from_topology(opts) {
                        Ok(nodes) => changes = self.manager.set_nodes(nodes),
                        Err(e) => warn!("re-reading the topology after cpu{cpu} came online: {e:#}"),
                    }
                }
                changes
            }
            _ => Vec::new(),
        };
        self.publish(map, changes, Some(ev.ts_ns));
    }

    /// Task `pid` leaves the requesters: its object is withdrawn in the
    /// map now (it may live on untagged), its pidfd let go, and the CPUs it
    /// held go back to the node manager (the changes to publish).
    fn withdraw(&mut self, map: &dyn MapCore, pid: i32) -> Vec<Change> {
        if let Err(e) = self.objects.withdraw(map, pid) {
            warn!("withdrawing the object of pid {pid}: {e}");
        }
        self.objects.forget(pid);
        self.drop_state(pid)
    }

    /// Everything the agent knows of requester `pid` but its pidfd.
    fn drop_state(&mut self, pid: i32) -> Vec<Change> {
        self.asleep.remove(&pid);
        self.dormant.remove(&pid);
        self.auto.remove(&pid);
        self.seen_on.remove(&pid);
        if self.requesters.remove(&pid).is_none() {
            return Vec::new();
        }
        self.manager.release(pid)
    }

    /// The tags in force, by cgroup id.
    pub fn tags(&self) -> &HashMap<u64, Props> {
        &self.tags
    }

    /// Tags were re-read: BPF re-announces every task whose tag may differ.
    pub fn set_tags(&mut self, tags: HashMap<u64, Props>) {
        self.tags = tags;
    }

    pub fn parked(&self) -> &std::collections::BTreeSet<usize> {
        &self.parked
    }

    /// CPUs parked or unparked: the node manager no longer places objects on
    /// a parked CPU (the policy has split those it was part of already).
    pub fn set_parked(&mut self, map: &dyn MapCore, cpus: &[usize], park: bool) {
        let online = crate::nodes::node::online_cpus().unwrap_or_default();
        let mut changes = Vec::new();
        for &cpu in cpus {
            if park {
                self.parked.insert(cpu);
            } else {
                self.parked.remove(&cpu);
            }
            if self.manager.has_cpu(cpu) {
                changes.extend(self.manager.set_online(cpu, !park && online.contains(&cpu)));
            }
        }
        self.publish(map, changes, None);
    }

    pub fn remove_status(&self) {
        self.status.remove();
    }

    /// Called from the agent's loop with the runnable untagged tasks now
    /// (untagged_runnable): sample the load; run the automatic taxes
    /// (`task_ctxs`: BPF's task contexts, for fused time); once a second drop
    /// requesters that are gone and keep CPUs native for the untagged load.
    pub fn tick(&mut self, map: &dyn MapCore, task_ctxs: &dyn MapCore, untagged_now: usize) {
        self.running_samples.push(untagged_now);
        let sleepers: Vec<i32> = self
            .asleep
            .iter()
            .filter(|(pid, since)| since.elapsed() >= SLEEP_RELEASE && !self.dormant.contains(pid))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in sleepers {
            self.dormant.insert(pid);
            let changes = self.manager.release(pid);
            self.publish(map, changes, None);
        }
        self.auto_tick(map, task_ctxs);
        if self.last_reconcile.elapsed() < RECONCILE_EVERY {
            return;
        }
        self.last_reconcile = Instant::now();
        // Gone by their pidfds (an exit event lost, or ignored): /proc/PID
        // would answer for a newcomer that was given the pid.
        let gone = self.objects.exited();
        for &pid in &gone {
            self.objects.forget(pid);
            self.requesters.remove(&pid);
            self.seen_on.remove(&pid);
            self.asleep.remove(&pid);
            self.dormant.remove(&pid);
            self.auto.remove(&pid);
        }
        let mut changes = self.manager.reconcile(|pid| !gone.contains(&pid));
        // Affinity changes (taskset, cpuset) send no event: read them here.
        let pids: Vec<i32> = self.manager.requesters().map(|(pid, _)| pid).collect();
        for pid in pids {
            changes.extend(self.manager.set_allowed(pid, crate::nodes::affinity::of(pid)));
        }
        // A cpu_online/cpu_offline event lost (ring buffer full) would leave
        // the CPU list wrong for good: the kernel's own list decides.
        if let Ok(online) = crate::nodes::node::online_cpus() {
            let cpus: Vec<usize> = self.manager.cpus().collect();
            for cpu in cpus {
                changes.extend(self.manager.set_online(cpu, online.contains(&cpu) && !self.parked.contains(&cpu)));
            }
        }
        // Runnable tasks other than the tagged ones and this agent.
        if let Some(seen) = steady_running(&mut self.running_samples) {
            let (apply, next) = untagged_step(self.manager.untagged_load(), seen, self.untagged_next);
            self.untagged_next = next;
            if let Some(n) = apply {
                debug!(target: DECISIONS, "untagged load={n}: runnable untagged tasks");
                changes.extend(self.manager.set_untagged_load(n));
            }
        }
        if self.last_audit.elapsed() >= AUDIT_EVERY {
            self.last_audit = Instant::now();
            let audit = self.manager.audit();
            if let Some(m) = audit.mismatch {
                warn!("node manager: the incremental rebalance differs from the full recompute ({m:.300}); publishing the full recompute's");
            }
            changes.extend(audit.changes);
        }
        self.publish(map, changes, None);
    }

    /// How long until the next accounting period is due, while requesters
    /// outnumber the pairs (None: nothing rotates, no need to wake for it).
    pub fn until_rotation(&self) -> Option<Duration> {
        self.manager.contended().then(|| self.share_period.saturating_sub(self.last_rotate.elapsed()))
    }

    /// How long past due the next rotation is, if it is due and the loop
    /// woke for it (contended): its lateness, for the loop's histogram.
    pub fn rotation_overdue(&self) -> Option<Duration> {
        let since = self.last_rotate.elapsed();
        (self.manager.contended() && !self.requesters.is_empty() && since >= self.share_period).then(|| since - self.share_period)
    }

    /// Start an accounting period if one is due: the node manager decides
    /// again who holds the pairs, and what changed is published. Uncontended,
    /// it only clears the queue's books (and reads no BPF map).
    /// Whether one started.
    pub fn rotate(&mut self, map: &dyn MapCore, cg_weights: &dyn MapCore) -> bool {
        if self.requesters.is_empty() || self.last_rotate.elapsed() < self.share_period {
            return false;
        }
        self.last_rotate = Instant::now();
        let changes = if self.manager.contended() {
            // Where those without a pair wait: one that gains a pair around
            // that CPU is its representative there (node_manager/mod.rs), so
            // fewer tasks migrate.
            let waiting: BTreeMap<i32, usize> = self
                .requesters
                .keys()
                .filter(|&&pid| self.manager.object(pid).is_none())
                .filter_map(|&pid| Some((pid, *self.seen_on.get(&pid)?)))
                .collect();
            self.manager.rotate_at(|cgid| Self::runnable_of(cg_weights, cgid), waiting)
        } else {
            self.manager.rotate()
        };
        self.publish(map, changes, None);
        true
    }

    /// Each auto-tax task's controller, once per interval (auto_tax.rs):
    /// sample it, and publish what it decides through its assignment like
    /// any tax, or withdraw the assignment for a native exploration (the
    /// node manager keeps the object: it comes back as it was, and a
    /// rebalance meanwhile is published when it does).
    fn auto_tick(&mut self, map: &dyn MapCore, task_ctxs: &dyn MapCore) {
        if self.auto.is_empty() || self.last_auto.elapsed() < AUTO_EVERY {
            return;
        }
        self.last_auto = Instant::now();
        let pids: Vec<i32> = self.auto.keys().copied().collect();
        for pid in pids {
            let fused = crate::nodes::progress::fused_ns(task_ctxs, pid);
            let Some(at) = self.auto.get_mut(&pid) else { continue };
            let (sample, changed) = at.probe.sample(monotonic_ns(), fused);
            if changed {
                at.ctl.reset_samples();
                debug!(target: DECISIONS, "autotax pid={pid} source={}", at.probe.source().name());
            }
            if let Some(s) = sample {
                debug!(
                    "autotax pid={pid} sample wall_us={} cpu_us={} fused_us={} progress={} phase={:?}",
                    s.wall_ns / 1000,
                    s.cpu_ns / 1000,
                    s.fused_ns / 1000,
                    s.progress,
                    at.ctl.phase()
                );
            }
            let was = at.now;
            at.now = at.ctl.step(sample);
            let now = at.now;
            if let Some(r) = at.ctl.take_pair() {
                debug!("autotax pid={pid} pair={r:.3} pairs={}", at.ctl.pairs());
            }
            let explore = match at.ctl.phase() {
                Phase::ExploreNative if !was.withdraw => Some("native"),
                Phase::ExploreFused if was.tax != now.tax => Some("fused"),
                _ => None,
            };
            if let Some(kind) = explore {
                // Once it has its first ratios there is one every 3 s: debug.
                if at.ctl.pairs() < crate::nodes::auto_tax::MIN_PAIRS {
                    debug!(target: DECISIONS, "autotax pid={pid} explore={kind}");
                } else {
                    debug!("autotax pid={pid} explore={kind}");
                }
            }
            let tax = at.ctl.tax();
            let shown = Some((tax, at.ctl.speedup().is_some()));
            if at.shown != shown {
                at.shown = shown;
                let speedup = at.ctl.speedup().map_or("-".into(), |s| format!("{s:.2}"));
                debug!(target: DECISIONS, "autotax pid={pid} speedup={speedup} tax={}", tax_text(tax));
            }
            if now == was {
                continue;
            }
            let Some(o) = self.manager.object(pid) else { continue };
            let r = if now.withdraw {
                // BPF splits a fused object at its next tick (RETAG).
                self.objects.withdraw(map, pid)
            } else {
                // Back with the same generation: its virtual threads keep
                // their places, behind by one exploration's time at most,
                // which its next fused run repays at its tax.
                self.objects.write(map, pid, &self.value(pid, o))
            };
            if let Err(e) = r {
                warn!("auto tax of pid {pid}: {e}");
            }
        }
    }

    /// Some tagged task is known: the untagged load is sampled and
    /// sleepers are aged at the busy pace.
    pub fn busy(&self) -> bool {
        !self.requesters.is_empty() || !self.asleep.is_empty()
    }

    /// Is the status file due? Once a second (`force`), not at every
    /// change: `status` asks the agent (control.rs Op::Status, answered
    /// from `snapshot`), and the file is the record for when it cannot
    /// answer. Rewritten at every change, with pairs rotating every 30 ms,
    /// it cost the agent about 1 ms of system time per rotation under TCG,
    /// a quarter of what the rotation cost the tasks beside it
    /// (bench/aash_overhead: 620-900 ms per 8 s against 530-590 without).
    pub fn status_due(&self, force: bool) -> bool {
        force
    }

    /// The agent's state now; `live` is what only the scheduler can see
    /// (CPU states, counters).
    pub fn snapshot(&self, live: Live) -> crate::report::status::Snapshot {
        self.status.current(&self.manager, &self.complete(live))
    }

    /// Write the status file; `live` is what only the scheduler can see
    /// (CPU states, counters).
    pub fn write_status(&mut self, live: Live) {
        let live = self.complete(live);
        self.status.write(&self.manager, &live);
    }

    /// `live` with what this side knows: tags, owners, automatic taxes.
    fn complete(&self, mut live: Live) -> Live {
        live.tags = self.tags.iter().map(|(&id, p)| (id, p.encode())).collect();
        live.tags.sort();
        live.owners = self.requesters.iter().map(|(&pid, &(_, _, cg))| (pid, cg)).collect();
        live.auto_tax = self
            .auto
            .iter()
            .map(|(&pid, a)| crate::report::status::AutoTaxStatus {
                pid,
                tax: a.ctl.tax(),
                speedup: a.ctl.speedup().filter(|s| s.is_finite()),
                source: a.probe.source().name().into(),
                pairs: a.ctl.pairs(),
                exploring: match a.ctl.phase() {
                    Phase::Normal => None,
                    Phase::ExploreNative => Some("native".into()),
                    Phase::ExploreFused => Some("fused".into()),
                },
            })
            .collect();
        live.auto_tax.sort_by_key(|a| a.pid);
        live
    }
}

#[cfg(test)]
mod tests;
