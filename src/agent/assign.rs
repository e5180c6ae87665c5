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

use crate::agent::auto_taxes::AutoTaxes;
use crate::agent::cpu_presence::CpuPresence;
use crate::agent::decisions::{monotonic_ns, DECISIONS};
use crate::agent::every::Every;
use crate::agent::fd_budget::FdBudget;
use crate::agent::object_map::{no_object, NotTracked, ObjectMap, Track};
use crate::agent::requesters::{Requester, Requesters};
use crate::agent::sleepers::Sleepers;
use crate::agent::untagged_load::UntaggedLoad;
use crate::bpf_intf;
use crate::report::event::{Event, Kind};
use crate::nodes::node_manager::{Change, NodeManager, Object, Request};
use crate::report::status::{Live, Status};
use crate::tags::tag::Props;
use libbpf_rs::{MapCore, MapFlags};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

pub const RECONCILE_EVERY: Duration = Duration::from_secs(1);
/// The node manager decides incrementally; this often a full recompute
/// checks that it still decides the same (and corrects it if not).
pub const AUDIT_EVERY: Duration = Duration::from_secs(10);

pub struct Assigner {
    manager: NodeManager,
    /// Tagged cgroups: id -> properties.
    tags: HashMap<u64, Props>,
    /// Tagged tasks alive, and where each was last seen.
    requesters: Requesters,
    /// The policy's `assignments` map, written through a pidfd per requester.
    objects: ObjectMap,
    /// Requesters asleep, and those whose object was released for it.
    sleepers: Sleepers,
    /// Once a second: tasks gone unheard, affinities, CPUs, untagged load.
    reconcile: Every,
    /// The node manager's full recompute (AUDIT_EVERY).
    audit: Every,
    /// What the node manager keeps CPUs native for.
    untagged: UntaggedLoad,
    status: Status,
    /// The CPUs the node manager may use: online, and not parked.
    cpus: CpuPresence,
    /// Task-exit events are ignored (bench: Chameleon Fig. 6, "3*"); a gone
    /// task is then found by the sleeper release or the reconcile.
    ignore_exits: bool,
    /// The accounting period of the fast contexts.
    rotation: Every,
    /// Requesters whose tax is automatic.
    auto: AutoTaxes,
}

impl Assigner {
    pub fn new(manager: NodeManager, tags: HashMap<u64, Props>, status: Status, reread_topology: Option<crate::nodes::node::TopologyOpts>) -> Self {
        Assigner {
            manager,
            tags,
            requesters: Requesters::default(),
            objects: ObjectMap::with_cap(FdBudget::default().pidfds),
            sleepers: Sleepers::default(),
            reconcile: Every::new(RECONCILE_EVERY),
            audit: Every::new(AUDIT_EVERY),
            untagged: UntaggedLoad::default(),
            status,
            cpus: CpuPresence::new(reread_topology),
            ignore_exits: false,
            rotation: Every::new(Duration::from_millis(30)),
            auto: AutoTaxes::with_perf_cap(FdBudget::default().perf),
        }
    }

    /// The accounting period of the fast contexts (`--share-period-ms`).
    pub fn with_share_period(mut self, period: Duration) -> Self {
        self.rotation = Every::new(period);
        self
    }

    /// Hold at most `budget`'s pidfds and instruction counters (fd_budget.rs).
    /// Before any task is known.
    pub fn with_fd_budget(mut self, budget: FdBudget) -> Self {
        self.objects = ObjectMap::with_cap(budget.pidfds);
        self.auto = AutoTaxes::with_perf_cap(budget.perf);
        self
    }

    /// What the agent's limits refused since the start, and the pidfds
    /// held now (the metrics; `control_accept_backoffs` is the control
    /// socket's to fill).
    pub fn limits(&self) -> crate::report::metrics::Limits {
        let refused = self.objects.refused();
        crate::report::metrics::Limits {
            requesters_refused: refused.full,
            demand_pid_reused: refused.reused,
            auto_tax_no_counter: self.auto.perf_refused(),
            pidfds_held: self.objects.held() as u64,
            control_accept_backoffs: 0,
        }
    }

    /// Ignore task-exit events (see `ignore_exits`).
    pub fn without_exit_notice(mut self, on: bool) -> Self {
        self.ignore_exits = on;
        self
    }

    /// The tax a task pays now: its tag's, or its controller's (always
    /// 1..=10000: an auto tag's 0 never reaches BPF).
    fn tax_of(&self, pid: i32) -> u32 {
        match (self.auto.tax(pid), self.requesters.get(pid)) {
            (Some(tax), _) => tax,
            (None, Some(r)) if !r.props.auto_tax() => r.props.tax,
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
            flags: match self.requesters.get(pid).map(|r| r.props.smt) {
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
                    if self.auto.withdrawn(ch.pid) {
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
    /// Where `pid`'s object may be, read from the kernel now (affinity.rs):
    /// its cgroup's cpuset and its own affinity, to the node manager.
    fn constrain(&mut self, pid: i32) -> Vec<Change> {
        let mut changes = self.manager.set_cpuset(pid, crate::nodes::affinity::cpuset_of(pid));
        changes.extend(self.manager.set_allowed(pid, crate::nodes::affinity::of(pid)));
        changes
    }

    fn claim_of(props: &Props, cgid: u64, cg_weights: &dyn MapCore) -> u32 {
        let cpu_weight = (props.weight == 0)
            .then(|| cg_weights.lookup(&cgid.to_ne_bytes(), MapFlags::ANY).ok().flatten())
            .flatten()
            .filter(|raw| raw.len() >= std::mem::size_of::<bpf_intf::chameleon_cg_weight>())
            // SAFETY: the length was checked; the struct is plain integers.
            .map(|raw| unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<bpf_intf::chameleon_cg_weight>()) }.weight);
        crate::tags::tag::claim(props.weight, cpu_weight)
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
        // The shards drift apart without bound (a wake counted in one LLC, the
        // sleep in another); their sum, wrapping, is the count.
        Some(cw.shards.iter().fold(0i32, |sum, s| sum.wrapping_add(s.nr_runnable)).max(0) as usize)
    }

    pub fn handle(&mut self, ev: &Event, map: &dyn MapCore, tags: &dyn MapCore, cg_weights: &dyn MapCore) {
        if let Ok(cpu) = usize::try_from(ev.cpu) {
            if matches!(ev.kind, Kind::Demand) || self.requesters.contains(ev.pid) {
                self.requesters.seen(ev.pid, cpu);
            }
        }
        let changes = match ev.kind {
            // ev.level is the object level BPF derived from the tag and SMT class.
            Kind::Demand => match self.tag_of(ev.cgroup_id, tags) {
                Some(props) if ev.level > 0 => 'demand: {
                    // Held by a pidfd from now, if the pid still names the
                    // task that asked. A pid held for a task that exited
                    // unheard is a newcomer's: the old one's state goes.
                    let mut changes = match self.objects.track(ev.pid, ev.start_ns) {
                        Ok(Track::Replaced) => self.drop_state(ev.pid),
                        Ok(_) => Vec::new(),
                        // An earlier task's DEMAND, read after the live
                        // requester under the pid asked: nothing changes.
                        Err(NotTracked::Stale) => break 'demand Vec::new(),
                        // Gone already (its exit follows, or was lost), or
                        // a newcomer has the pid (it asks for itself if
                        // tagged): nothing is kept under the pid.
                        Err(NotTracked::Gone) => break 'demand self.drop_state(ev.pid),
                        Err(NotTracked::Reused) => {
                            debug!(target: DECISIONS, "reused pid={}: its DEMAND came from a task that exited; the pid names another task now", ev.pid);
                            break 'demand self.drop_state(ev.pid);
                        }
                        // No pidfd to write its object through: it runs
                        // without one until it asks again.
                        Err(NotTracked::Full) => {
                            let n = self.objects.refused().full;
                            if n.is_power_of_two() {
                                warn!(
                                    "pid {} asked for an object: refused, {} requesters held (the cap, or no file descriptor); {n} refused so far",
                                    ev.pid,
                                    self.objects.held()
                                );
                            }
                            break 'demand self.drop_state(ev.pid);
                        }
                    };
                    let req = Requester { props, level: ev.level, cgroup: ev.cgroup_id };
                    let old = self.requesters.insert(ev.pid, req);
                    if props.auto_tax() {
                        self.auto.track(ev.pid);
                    } else {
                        // Retagged to a fixed tax: published below with it
                        // (and no longer withdrawn).
                        self.auto.forget(ev.pid);
                    }
                    let weight = Self::claim_of(&props, ev.cgroup_id, cg_weights);
                    let member = req.member();
                    // Its affinity and cpuset before its first placement (no change to publish yet).
                    changes.extend(self.constrain(ev.pid));
                    changes.extend(self.manager.request_as(ev.pid, Request { level: ev.level, weight }, member));
                    // Same CPUs but a new tax: BPF still needs the new value.
                    if old.is_some_and(|o| o.props != props) && !changes.iter().any(|c| c.pid == ev.pid) {
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
            Kind::Sleep if self.requesters.contains(ev.pid) => {
                self.sleepers.sleep(ev.pid, Instant::now());
                self.manager.set_awake(ev.pid, false);
                Vec::new()
            }
            Kind::Wake => {
                let was_dormant = self.sleepers.wake(ev.pid);
                self.manager.set_awake(ev.pid, true);
                match (was_dormant, self.requesters.get(ev.pid).copied()) {
                    (true, Some(r)) => {
                        let weight = Self::claim_of(&r.props, r.cgroup, cg_weights);
                        let mut changes = self.constrain(ev.pid);
                        changes.extend(self.manager.request_as(ev.pid, Request { level: r.level, weight }, r.member()));
                        changes
                    }
                    _ => Vec::new(),
                }
            }
            Kind::CpuOffline if ev.cpu >= 0 => self.cpus.offline(&mut self.manager, ev.cpu as usize),
            Kind::CpuOnline if ev.cpu >= 0 => self.cpus.online(&mut self.manager, ev.cpu as usize),
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

    /// Everything the agent knows of requester `pid` but its pidfd, and the
    /// CPUs it held back to the node manager (the changes to publish).
    fn drop_state(&mut self, pid: i32) -> Vec<Change> {
        if !self.forget(pid) {
            return Vec::new();
        }
        self.manager.release(pid)
    }

    /// Everything the agent knows of `pid` but its pidfd and its place in
    /// the node manager: whether it was a requester. The one place that
    /// knows every per-pid record.
    fn forget(&mut self, pid: i32) -> bool {
        self.sleepers.forget(pid);
        self.auto.forget(pid);
        self.requesters.forget(pid)
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
        self.cpus.parked()
    }

    /// CPUs parked or unparked (CpuPresence::park).
    pub fn set_parked(&mut self, map: &dyn MapCore, cpus: &[usize], park: bool) {
        let changes = self.cpus.park(&mut self.manager, cpus, park);
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
        self.untagged.sample(untagged_now);
        for pid in self.sleepers.due_release(Instant::now()) {
            let changes = self.manager.release(pid);
            self.publish(map, changes, None);
        }
        self.auto_tick(map, task_ctxs);
        if !self.reconcile.start_if_due() {
            return;
        }
        // Gone by their pidfds (an exit event lost, or ignored): /proc/PID
        // would answer for a newcomer that was given the pid.
        let gone = self.objects.exited();
        for &pid in &gone {
            self.objects.forget(pid);
            // The node manager's reconcile releases it.
            self.forget(pid);
        }
        let mut changes = self.manager.reconcile(|pid| !gone.contains(&pid));
        // Affinity and cpuset changes (taskset, a cgroup's cpuset, a move)
        // send no event: read them here.
        let pids: Vec<i32> = self.manager.requesters().map(|(pid, _)| pid).collect();
        for pid in pids {
            changes.extend(self.constrain(pid));
        }
        // A cpu_online/cpu_offline event lost (ring buffer full) would leave
        // the CPU list wrong for good.
        changes.extend(self.cpus.recheck(&mut self.manager));
        // Runnable tasks other than the tagged ones and this agent.
        if let Some(n) = self.untagged.due(self.manager.untagged_load()) {
            debug!(target: DECISIONS, "untagged load={n}: runnable untagged tasks");
            changes.extend(self.manager.set_untagged_load(n));
        }
        if self.audit.start_if_due() {
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
        self.manager.contended().then(|| self.rotation.remaining())
    }

    /// How long past due the next rotation is, if it is due and the loop
    /// woke for it (contended): its lateness, for the loop's histogram.
    pub fn rotation_overdue(&self) -> Option<Duration> {
        (self.manager.contended() && !self.requesters.is_empty()).then(|| self.rotation.overdue()).flatten()
    }

    /// Start an accounting period if one is due: the node manager decides
    /// again who holds the pairs, and what changed is published. Uncontended,
    /// it only clears the queue's books (and reads no BPF map).
    /// Whether one started.
    pub fn rotate(&mut self, map: &dyn MapCore, cg_weights: &dyn MapCore) -> bool {
        if self.requesters.is_empty() || !self.rotation.start_if_due() {
            return false;
        }
        let changes = if self.manager.contended() {
            // Where those without a pair wait: one that gains a pair around
            // that CPU is its representative there (node_manager/mod.rs), so
            // fewer tasks migrate.
            let waiting = self.requesters.waiting_at(|pid| self.manager.object(pid).is_none());
            self.manager.rotate_at(|cgid| Self::runnable_of(cg_weights, cgid), waiting)
        } else {
            self.manager.rotate()
        };
        self.publish(map, changes, None);
        true
    }

    /// The automatic taxes' interval (auto_taxes.rs): what their
    /// controllers decide is published through the assignment like any tax,
    /// or the assignment withdrawn for a native exploration (the node
    /// manager keeps the object: it comes back as it was, and a rebalance
    /// meanwhile is published when it does).
    fn auto_tick(&mut self, map: &dyn MapCore, task_ctxs: &dyn MapCore) {
        let objects = &self.objects;
        for (pid, now) in self.auto.tick(task_ctxs, |pid| objects.key(pid)) {
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
        !self.requesters.is_empty() || !self.sleepers.is_empty()
    }

    /// The agent's state now; `live` is what only the scheduler can see
    /// (CPU states, the module's state).
    pub fn snapshot(&self, live: Live) -> crate::report::status::Snapshot {
        self.status.current(&self.manager, &self.complete(live))
    }

    /// Write the status file; `live` is what only the scheduler can see
    /// (CPU states, the module's state).
    pub fn write_status(&mut self, live: Live) {
        let live = self.complete(live);
        self.status.write(&self.manager, &live);
    }

    /// `live` with what this side knows: tags, owners, automatic taxes.
    fn complete(&self, mut live: Live) -> Live {
        live.tags = self.tags.iter().map(|(&id, p)| (id, p.encode())).collect();
        live.tags.sort();
        live.owners = self.requesters.owners().collect();
        live.auto_tax = self.auto.status();
        live
    }
}
