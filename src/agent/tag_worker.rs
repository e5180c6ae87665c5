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
//! moved in).

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
/// of one scan to the start of the next).
pub const RULES_EVERY: Duration = Duration::from_secs(1);

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

/// Hand an application to the loop, with the answer a client waits for.
fn hand(mailbox: &Mailbox, a: Applied, reply: Option<(Reply, Response)>) {
    mailbox.send(ToLoop::Tags { tags: a.tags, changed: a.changed, reply });
}

fn answer(reply: Option<Reply>, r: Response) {
    if let Some(reply) = reply {
        let _ = reply.send(r);
    }
}

fn run(map: &MapHandle, mut inputs: TagInputs, rx: &Receiver<TagCmd>, mailbox: &Mailbox) -> TagInputs {
    let mut next_scan = Instant::now() + RULES_EVERY;
    loop {
        let cmd = if inputs.has_rules() {
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
        match cmd {
            Some(TagCmd::Stop) => break,
            None => {
                match apply(map, &mut inputs) {
                    Ok(a) => hand(mailbox, a, None),
                    Err(e) => warn_failed(&e),
                }
                // From the end of the scan: one longer than the period
                // (thousands of processes under emulation) leaves a pause
                // after it rather than a thread that never rests.
                next_scan = Instant::now() + RULES_EVERY;
            }
            Some(TagCmd::Apply(reply)) => match apply(map, &mut inputs) {
                Ok(a) => {
                    let r = Response::ok(format!("{} cgroups tagged", a.tags.len()));
                    hand(mailbox, a, Some((reply, r)));
                }
                Err(e) => answer(Some(reply), Response::err(format!("{e:#}"))),
            },
            Some(TagCmd::List(reply)) => match apply(map, &mut inputs) {
                Ok(a) => {
                    let r = Response::tags(a.entries.iter().filter_map(|e| e.listed()).collect());
                    hand(mailbox, a, Some((reply, r)));
                }
                Err(e) => answer(Some(reply), Response::err(format!("{e:#}"))),
            },
            Some(TagCmd::ReloadRules(reply)) => {
                let detail = match inputs.reload_rules() {
                    Ok(d) => d,
                    Err(e) => {
                        warn!("rules not reloaded: {e:#}; the rules in force stay");
                        answer(reply, Response::err(format!("{:#}", e.context("rules not reloaded, the rules in force stay"))));
                        continue;
                    }
                };
                next_scan = Instant::now() + RULES_EVERY;
                match apply(map, &mut inputs) {
                    Ok(a) => {
                        let detail = format!("reloaded {detail}; {} cgroups tagged", a.tags.len());
                        info!("{detail}");
                        let reply = reply.map(|r| (r, Response::ok(detail)));
                        hand(mailbox, a, reply);
                    }
                    Err(e) => {
                        warn_failed(&e);
                        answer(reply, Response::err(format!("{e:#}")));
                    }
                }
            }
        }
    }
    inputs
}
