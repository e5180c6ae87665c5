//! The agent's main loop. It sleeps in poll() until the policy reports
//! (the event ring buffer), a helper thread hands it work (inbox.rs), a
//! signal rings, or one of its clocks is due, and serves each source with a
//! method of its own (`on_*`). It owns the node manager's side of the
//! policy's maps and the tags_gen word; everything that can block (control
//! clients, the tags scan, the module's ioctls) runs on the helper threads.

use crate::agent::apply_tags::TagsGen;
use crate::agent::assign::Assigner;
use crate::agent::inbox::{Inbox, Reply, ToLoop};
use crate::agent::module_worker::ModuleWorker;
use crate::agent::opts::Opts;
use crate::agent::park_op::{ParkCtx, Parking};
use crate::agent::policy_state::{invariants_line, invariants_total, live_status, summary_line, totals};
use crate::agent::signals::{Doorbell, Shutdown};
use crate::agent::tag_worker::TagCmd;
use crate::bpf_skel::BpfSkel;
use crate::control::{Op, Request, Response, Server};
use crate::report::event::Event;
use crate::report::lateness::Lateness;
use crate::report::metrics::{Limits, Metrics};
use crate::report::module_read::ModuleRead;
use crate::report::stats::Totals;
use crate::report::status::Live;
use crate::tags::tag::Props;
use anyhow::{Context, Result};
use libbpf_rs::{RingBuffer, RingBufferBuilder};
use scx_utils::uei_exited;
use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing::warn;

/// What the loop works on, lent by the Scheduler for the loop's life.
pub struct Parts<'s, 'a> {
    pub skel: &'s BpfSkel<'a>,
    pub assign: &'s mut Assigner,
    /// For the event stream to subscribers, and its counters.
    pub control: &'s Server,
    pub inbox: &'s Inbox,
    pub module: Option<&'s ModuleWorker>,
    /// The tags worker's commands (SIGHUP: reload the rules).
    pub to_tags: Sender<TagCmd>,
    /// The latest counters, as the scx_stats server serves them.
    pub metrics: &'s Mutex<Metrics>,
    pub opts: &'s Opts,
    pub nr_cpus: usize,
    /// The policy's tags_gen: written by this loop only.
    pub tags_gen: TagsGen<'s>,
}

/// The loop: what it works on, and its state between wakeups.
pub struct AgentLoop<'s, 'a> {
    skel: &'s BpfSkel<'a>,
    assign: &'s mut Assigner,
    control: &'s Server,
    inbox: &'s Inbox,
    module: Option<&'s ModuleWorker>,
    to_tags: Sender<TagCmd>,
    metrics: &'s Mutex<Metrics>,
    opts: &'s Opts,
    nr_cpus: usize,
    tags_gen: TagsGen<'s>,
    /// The policy's events. The ring buffer's callback only queues them in
    /// `events`: handling needs the loop's state, after the poll.
    rb: RingBuffer<'static>,
    events: Rc<RefCell<Vec<Event>>>,
    nr_events: u64,
    /// The module as its thread last read it: its state for the status,
    /// its numbers for the metrics, taken together once a second.
    module_read: Option<ModuleRead>,
    /// Parks and unparks, one at a time (park_op.rs).
    parking: Parking,
    /// How late each tick and rotation ran (lateness.rs).
    lateness: Lateness,
    last_tick: Instant,
    /// When the metrics and the status file were last refreshed.
    last_second: Instant,
    /// The broken invariants already warned about.
    invariants_seen: u64,
    /// The counters at the start (for the summary) and at the last
    /// --stats-interval line, and when that was printed.
    start: Totals,
    last: Totals,
    last_print: Instant,
    /// --test-panic-after-ms: when the loop panics.
    panic_at: Option<Instant>,
}

impl<'s, 'a> AgentLoop<'s, 'a> {
    pub fn new(p: Parts<'s, 'a>) -> Result<Self> {
        let events: Rc<RefCell<Vec<Event>>> = Rc::default();
        let rb = {
            let events = events.clone();
            let mut rb = RingBufferBuilder::new();
            rb.add(&p.skel.maps.events, move |data: &[u8]| {
                match Event::parse(data) {
                    Some(ev) => events.borrow_mut().push(ev),
                    None => warn!("short event record ({} bytes): agent and policy disagree", data.len()),
                }
                0
            })?;
            rb.build()?
        };
        let start = Totals::default();
        Ok(AgentLoop {
            module_read: p.module.and_then(|m| m.latest()),
            skel: p.skel,
            assign: p.assign,
            control: p.control,
            inbox: p.inbox,
            module: p.module,
            to_tags: p.to_tags,
            metrics: p.metrics,
            opts: p.opts,
            nr_cpus: p.nr_cpus,
            tags_gen: p.tags_gen,
            rb,
            events,
            nr_events: 0,
            parking: Parking::default(),
            lateness: Lateness::default(),
            last_tick: Instant::now(),
            // Due at once: the status file and the counters a monitor reads
            // are there from the start, not a second later (a monitor
            // reaching a new agent would print a line of zeros first).
            last_second: Instant::now().checked_sub(Duration::from_secs(1)).unwrap_or_else(Instant::now),
            invariants_seen: 0,
            start,
            last: start,
            last_print: Instant::now(),
            panic_at: p.opts.test_panic_after.map(|d| Instant::now() + d),
        })
    }

    /// Serve until `shutdown` is set or the policy exits, then print the
    /// summary. `hup` (SIGHUP) re-reads the rules file.
    pub fn run(mut self, shutdown: &Shutdown, hup: &Doorbell) -> Result<()> {
        while !shutdown.requested() && !uei_exited!(self.skel, uei) {
            // The tick's pace for this wakeup, whatever its messages change.
            let every = if self.assign.busy() { TICK_BUSY } else { TICK_IDLE };
            self.wait(every, shutdown, hup)?;
            self.on_ring_events()?;
            for msg in self.inbox.drain() {
                self.on_message(msg);
            }
            if hup.take() {
                self.on_hup();
            }
            let rotated = self.on_rotation();
            self.on_tick(every, rotated);
            self.on_second();
            self.on_stats_interval();
        }
        self.finish();
        Ok(())
    }

    /// Sleep until an event, a message, a signal or the next tick or
    /// rotation. An idle agent (no tagged task) wakes once a second: each
    /// wakeup is CPU time taken from the tasks being scheduled.
    fn wait(&self, every: Duration, shutdown: &Shutdown, hup: &Doorbell) -> Result<()> {
        let tick_in = every.saturating_sub(self.last_tick.elapsed());
        // Fast contexts rotate on their own clock (--share-period-ms), and
        // the tick rides on a rotation due within half a tick of it: one
        // wakeup, not two.
        let mut timeout = next_wakeup(tick_in, every, self.assign.until_rotation());
        if let Some(at) = self.panic_at {
            let now = Instant::now();
            if now >= at {
                panic!("--test-panic-after-ms: panicking in the main loop, as asked");
            }
            timeout = timeout.min(at - now);
        }
        // SAFETY: the ring buffer, whose epoll fd this borrows, is a field
        // of self and outlives the wait.
        let rb_fd = unsafe { BorrowedFd::borrow_raw(self.rb.epoll_fd()) };
        wait_readable(&[rb_fd, self.inbox.fd(), shutdown.fd(), hup.fd()], timeout)
            .context("waiting for events and clients")?;
        Ok(())
    }

    /// The policy's events: read from the ring buffer, then handled.
    fn on_ring_events(&mut self) -> Result<()> {
        self.rb.consume().context("reading the event ring buffer")?;
        self.drain_events();
        Ok(())
    }

    /// Handle every event the ring buffer's callback queued.
    fn drain_events(&mut self) {
        let evs: Vec<Event> = std::mem::take(&mut *self.events.borrow_mut());
        let stream = self.control.has_subscribers();
        for ev in &evs {
            self.on_event(ev, stream);
        }
    }

    /// One event: counted, printed (--print-events), streamed to the
    /// control socket's subscribers (`stream`), then the node manager's.
    fn on_event(&mut self, ev: &Event, stream: bool) {
        self.nr_events += 1;
        if self.opts.print_events {
            crate::out!("event {ev}");
        }
        if stream {
            if let Ok(mut line) = serde_json::to_vec(ev) {
                line.push(b'\n');
                self.control.broadcast(&line);
            }
        }
        let maps = &self.skel.maps;
        self.assign.handle(ev, &maps.assignments, &maps.tags, &maps.cg_weights);
    }

    /// What a helper thread handed the loop.
    fn on_message(&mut self, msg: ToLoop) {
        match msg {
            ToLoop::Control(req, reply) => self.on_control(req, reply),
            ToLoop::Tags { tags, changed, replies } => self.on_tags(tags, changed, replies),
            ToLoop::ModuleDone { id, result } => self.on_module_done(id, result),
        }
    }

    /// A control request that needs the loop's state (router.rs).
    fn on_control(&mut self, req: Request, reply: Reply) {
        match req.op {
            Op::Status => {
                let _ = reply.send(Response::status(&self.assign.snapshot(self.live())));
            }
            Op::Park { cpus, holdoff_ms } => {
                let holdoff = Some(holdoff_ms.unwrap_or(crate::module::proxy::DEFAULT_HOLDOFF_MS));
                let (parking, ctx) = self.parking();
                parking.start(ctx, &cpus, holdoff, reply);
            }
            Op::Unpark { cpus } => {
                let (parking, ctx) = self.parking();
                parking.start(ctx, &cpus, None, reply);
            }
            _ => {
                let _ = reply.send(Response::err("not a request the loop answers"));
            }
        }
    }

    /// The tags worker applied the tags: the node manager learns them and,
    /// if the map changed, the tasks are told (tags_gen); only then are the
    /// clients answered, so that a tag answered is in force.
    fn on_tags(&mut self, tags: HashMap<u64, Props>, changed: bool, replies: Vec<(Reply, Response)>) {
        if changed || &tags != self.assign.tags() {
            self.assign.set_tags(tags);
        }
        if changed {
            self.tags_gen.bump();
        }
        for (reply, r) in replies {
            let _ = reply.send(r);
        }
    }

    /// The module's part of park or unpark `id` is done.
    fn on_module_done(&mut self, id: u64, result: Result<u64, String>) {
        let (parking, ctx) = self.parking();
        parking.module_done(ctx, id, result);
    }

    /// SIGHUP: the tags worker re-reads the rules file. Logged there
    /// either way; a bad file keeps the rules in force.
    fn on_hup(&self) {
        let _ = self.to_tags.send(TagCmd::ReloadRules(None));
    }

    /// The fast contexts' rotation, when due; whether it rotated.
    fn on_rotation(&mut self) -> bool {
        let overdue = self.assign.rotation_overdue();
        let rotated = self.assign.rotate(&self.skel.maps.assignments, &self.skel.maps.cg_weights);
        if let (true, Some(late)) = (rotated, overdue) {
            self.lateness.record(late);
        }
        rotated
    }

    /// The tick, when due (one every `every`, or carried by a rotation):
    /// the untagged load is sampled and the node manager ticks. On the
    /// clock only: a wakeup by an event (a split when an untagged task
    /// takes a representative) is not a fair moment to count untagged
    /// tasks; a rotation is on the clock too.
    fn on_tick(&mut self, every: Duration, rotated: bool) {
        let since = self.last_tick.elapsed();
        if !tick_due(since, every, rotated) {
            return;
        }
        // A tick carried by a rotation was timed with it.
        if !rotated {
            self.lateness.record(since.saturating_sub(every));
        }
        self.last_tick = Instant::now();
        let untagged = self.skel.maps.bss_data.as_ref().map_or(0, |b| {
            crate::agent::untagged_load::untagged_runnable(b.cpu_stats[..self.nr_cpus].iter().map(|c| c.nr_untagged))
        });
        self.assign.tick(&self.skel.maps.assignments, &self.skel.maps.task_ctxs, untagged);
    }

    /// Once a second: the module's latest read, the metrics, the status
    /// file. The file is not rewritten at every change: `status` asks the
    /// agent (answered from `snapshot`), and the file is the record for
    /// when it cannot answer; rewritten at every rotation it would cost
    /// the loop system time at every rotation.
    fn on_second(&mut self) {
        if self.last_second.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last_second = Instant::now();
        if let Some(m) = self.module {
            let kfuncs = self.skel.maps.bss_data.as_ref().is_some_and(|b| b.proxy_on);
            m.kfuncs.store(kfuncs, std::sync::atomic::Ordering::Relaxed);
            self.module_read = m.latest();
        }
        self.publish_metrics();
        let live = self.live();
        self.assign.write_status(live);
    }

    /// The counters the scx_stats server serves, refreshed; a broken
    /// invariant is said in the log (each increase is a policy bug).
    fn publish_metrics(&mut self) {
        let bss = self.skel.maps.bss_data.as_ref().expect(".bss is mapped");
        let broken = invariants_total(&bss.invariants);
        if broken > self.invariants_seen {
            warn!("invariant broken: {}", invariants_line(&bss.invariants));
            self.invariants_seen = broken;
        }
        let i = &bss.invariants;
        let mut m = Metrics::from_totals(&totals(self.skel, self.nr_cpus), bss.nr_events_dropped)
            .with_invariants([i.lent_to_non_rep, i.owner_gone, i.queue_forbidden], bss.nr_demand_dropped)
            .with_module(self.module_read.as_ref())
            .with_lateness(&self.lateness)
            .with_limits(Limits { control_accept_backoffs: self.control.accept_backoffs(), ..self.assign.limits() })
            .with_run_id(self.opts.run_id);
        m.nri_rejected = crate::tags::request::nri_rejected();
        m.sampled_ms = crate::report::metrics::monotonic_ms();
        *self.metrics.lock().unwrap() = m;
    }

    /// --stats-interval: the counters since the last line, when due.
    fn on_stats_interval(&mut self) {
        if let Some(every) = self.opts.stats_interval {
            if self.last_print.elapsed() >= every {
                let now = totals(self.skel, self.nr_cpus);
                crate::out!("stats {}", now.since(&self.last));
                self.last = now;
                self.last_print = Instant::now();
            }
        }
    }

    /// The loop is over: the last events handled, the status file removed
    /// (it describes a running agent), the summary printed.
    fn finish(mut self) {
        let _ = self.rb.consume();
        self.drain_events();
        self.assign.remove_status();
        crate::out!("{}", summary_line(self.skel, self.nr_cpus, self.nr_events, &self.start));
    }

    /// What only the loop can see for the status: CPU states, the parked
    /// CPUs, the module's state.
    fn live(&self) -> Live {
        let parked = self.assign.parked().iter().copied().collect();
        live_status(self.skel, self.nr_cpus, parked, self.module_read.as_ref().map(|r| r.state.clone()))
    }

    /// The parks under way, and what a park works on.
    fn parking(&mut self) -> (&mut Parking, ParkCtx<'_>) {
        let ctx = ParkCtx {
            assign: &mut *self.assign,
            map: &self.skel.maps.assignments,
            prog: &self.skel.progs.chameleon_park,
            module: self.module,
            nr_cpus: self.nr_cpus,
        };
        (&mut self.parking, ctx)
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
/// down, the last fraction of a millisecond before a tick would be a
/// timeout of 0, and the loop would spin through it, waking (and accepting
/// on the control socket) several times for each tick.
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
