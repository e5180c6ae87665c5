//! The tags scan, on a thread of its own. Applying the tags walks the whole
//! cgroup tree, reads each cgroup's stored tag (an xattr) and, while a rule
//! matches on comm or uid, /proc/PID/{comm,status} of every process in it:
//! with thousands of cgroups that takes longer than the loop's 20 ms tick.
//! So the worker owns what tags come from (TagInputs), scans, writes the
//! differences into the policy's `tags` map itself (a map handle of its
//! own), and hands the loop only the result (inbox.rs: ToLoop::Tags), which
//! the loop turns into the node manager's view and a tags_gen bump.
//!
//! It applies when asked (a control request, SIGHUP through the loop) and,
//! while rules are in force, every RULES_EVERY (cgroups created, processes
//! moved in), or less often where a scan costs more than SCAN_CPU_PCT % of
//! a CPU at that pace (`pause_after`).

use crate::control::Response;
use crate::agent::inbox::{Mailbox, Reply, ToLoop};
use crate::agent::apply_tags::{apply, warn_failed, Applied, TagInputs};
use anyhow::{Context, Result};
use libbpf_rs::MapHandle;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// How often rules are matched again while some are in force (from the end
/// of one scan to the start of the next), at the least: see `pause_after`.
pub const RULES_EVERY: Duration = Duration::from_secs(1);

/// The periodic scan's share of one CPU, at most, in percent: the pause
/// after a scan is long enough that its CPU time stays within it.
pub const SCAN_CPU_PCT: u32 = 10;

/// The pause before the next periodic scan, given the CPU time the last
/// one took: RULES_EVERY, or longer where the scan is costly (thousands
/// of processes read under /proc: 0.6 s of CPU for 10,000 under TCG), so
/// that scanning takes at most SCAN_CPU_PCT % of a CPU, beside the tasks
/// being scheduled and the agent's own loop, however large the machine.
/// Requests (tag, untag, reload) are served at once whatever the pause.
pub fn pause_after(scan_cpu: Duration) -> Duration {
    RULES_EVERY.max(scan_cpu * (100 - SCAN_CPU_PCT) / SCAN_CPU_PCT)
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    Duration::from_nanos(crate::report::metrics::clock_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID))
}

pub enum TagCmd {
    /// Apply now (`scx_chameleon tag/untag`: a stored tag changed).
    Apply(Reply),
    /// Re-read the rules file, then apply (SIGHUP, `reload-rules`); a bad
    /// file changes nothing.
    ReloadRules(Option<Reply>),
    /// Apply, then answer with every tag in force (`scx_chameleon tags`).
    List(Reply),
    Stop,
}

pub struct TagWorker {
    tx: Sender<TagCmd>,
    thread: Option<JoinHandle<TagInputs>>,
}

impl TagWorker {
    /// Start applying into `map` (a handle on the policy's `tags`).
    pub fn start(map: MapHandle, inputs: TagInputs, mailbox: Mailbox) -> Result<TagWorker> {
        let (tx, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("tags".into())
            .spawn(move || run(&map, inputs, &rx, &mailbox))
            .context("starting the tags thread")?;
        Ok(TagWorker { tx, thread: Some(thread) })
    }

    pub fn sender(&self) -> Sender<TagCmd> {
        self.tx.clone()
    }

    /// Stop after the application under way, and take back what the worker
    /// held (the rules in force carry across a restart).
    pub fn stop(&mut self) -> Option<TagInputs> {
        let _ = self.tx.send(TagCmd::Stop);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for TagWorker {
    /// Asked to stop, not waited for: a scan under way (seconds over
    /// thousands of processes) must not hold up the agent's exit. What it
    /// may still write goes through its own map handle, valid after the
    /// skeleton is gone; `stop` (a restart) does wait.
    fn drop(&mut self) {
        let _ = self.tx.send(TagCmd::Stop);
    }
}

/// Hand an application to the loop, with the answers clients wait for.
fn hand(mailbox: &Mailbox, a: Applied, replies: Vec<(Reply, Response)>) {
    mailbox.send(ToLoop::Tags { tags: a.tags, changed: a.changed, replies });
}

fn answer(reply: Option<Reply>, r: Response) {
    if let Some(reply) = reply {
        let _ = reply.send(r);
    }
}

/// The commands one scan serves.
#[derive(Default)]
struct Batch {
    applies: Vec<Reply>,
    lists: Vec<Reply>,
    reloads: Vec<Option<Reply>>,
    stop: bool,
}

impl Batch {
    fn add(&mut self, cmd: TagCmd) {
        match cmd {
            TagCmd::Apply(r) => self.applies.push(r),
            TagCmd::List(r) => self.lists.push(r),
            TagCmd::ReloadRules(r) => self.reloads.push(r),
            TagCmd::Stop => self.stop = true,
        }
    }
}

fn run(map: &MapHandle, mut inputs: TagInputs, rx: &Receiver<TagCmd>, mailbox: &Mailbox) -> TagInputs {
    let mut next_scan = Instant::now() + RULES_EVERY;
    loop {
        let first = if inputs.has_rules() {
            match rx.recv_timeout(next_scan.saturating_duration_since(Instant::now())) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(c) => Some(c),
                Err(_) => break,
            }
        };
        // The periodic scan matches the rules again; requests reuse the
        // last matches (store.rs RuleMatches). Requests that queued up
        // during the last scan share the next one: each used to wait for
        // all those before it (three tags took 15 s over 10,000 processes).
        let periodic = first.is_none();
        let mut batch = Batch::default();
        first.into_iter().chain(rx.try_iter()).for_each(|c| batch.add(c));
        if batch.stop {
            break;
        }
        let mut reloaded = None;
        if !batch.reloads.is_empty() {
            match inputs.reload_rules() {
                Ok(d) => reloaded = Some(d),
                Err(e) => {
                    warn!("rules not reloaded: {e:#}; the rules in force stay");
                    let msg = format!("{:#}", e.context("rules not reloaded, the rules in force stay"));
                    for r in batch.reloads.drain(..) {
                        answer(r, Response::err(msg.clone()));
                    }
                    if batch.applies.is_empty() && batch.lists.is_empty() && !periodic {
                        continue;
                    }
                }
            }
        }
        if periodic {
            inputs.matches.fresh = true;
        }
        let cpu0 = thread_cpu();
        match apply(map, &mut inputs) {
            Ok(a) => {
                let n = a.tags.len();
                let mut replies: Vec<(Reply, Response)> = Vec::new();
                replies.extend(batch.applies.into_iter().map(|r| (r, Response::ok(format!("{n} cgroups tagged")))));
                if !batch.lists.is_empty() {
                    let listed: Vec<_> = a.entries.iter().filter_map(|e| e.listed()).collect();
                    replies.extend(batch.lists.into_iter().map(|r| (r, Response::tags(listed.clone()))));
                }
                if let Some(d) = &reloaded {
                    let detail = format!("reloaded {d}; {n} cgroups tagged");
                    info!("{detail}");
                    replies.extend(batch.reloads.into_iter().flatten().map(|r| (r, Response::ok(detail.clone()))));
                }
                hand(mailbox, a, replies);
            }
            Err(e) => {
                warn_failed(&e);
                let msg = format!("{e:#}");
                for r in batch.applies.into_iter().chain(batch.lists).map(Some).chain(batch.reloads) {
                    answer(r, Response::err(msg.clone()));
                }
            }
        }
        // From the end of the scan: one longer than the period (thousands
        // of processes under emulation) leaves a pause after it rather than
        // a thread that never rests.
        if periodic || reloaded.is_some() {
            next_scan = Instant::now() + pause_after(thread_cpu().saturating_sub(cpu0));
        }
    }
    inputs
}

#[cfg(test)]
mod tests;
