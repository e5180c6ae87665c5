//! What the agent's helper threads hand its loop. The loop owns the
//! scheduler's state (the node manager, the skeleton's maps and .bss) and
//! does only map, ring-buffer and timer work; everything that can block —
//! control clients (control.rs), the tags scan (tag_worker.rs), the
//! module's ioctls (module_worker.rs) — runs on a thread of its own and
//! sends what the loop must act on here, ringing the loop's doorbell so its
//! poll() wakes. Answers to control clients travel back on a one-shot
//! channel the request carries.

use crate::control::{Request, Response};
use crate::doorbell::Doorbell;
use crate::tags::tag::Props;
use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::time::Duration;

/// Where the answer to one control request goes.
pub type Reply = SyncSender<Response>;

/// How long a client's thread waits for the loop or a worker to answer:
/// far longer than any answer takes, short enough that a wedged agent is
/// reported rather than waited on forever.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

pub enum ToLoop {
    /// A request that needs the loop's state: status, park, unpark.
    Control(Request, Reply),
    /// The tags worker applied the tags: the node manager learns them and,
    /// if the map changed, the tasks are told (tags_gen); then the answer,
    /// if a client asked, goes out (so that once answered, a tag is in force).
    Tags { tags: HashMap<u64, Props>, changed: bool, replies: Vec<(Reply, Response)> },
    /// The module's part of park or unpark `id` is done (ns it took, or why not).
    ModuleDone { id: u64, result: Result<u64, String> },
}

/// The loop's end.
pub struct Inbox {
    rx: Receiver<ToLoop>,
    mailbox: Mailbox,
}

/// The senders' end (cloned by every thread that hands the loop work).
#[derive(Clone)]
pub struct Mailbox {
    tx: Sender<ToLoop>,
    bell: Arc<Doorbell>,
}

impl Inbox {
    pub fn new() -> anyhow::Result<Inbox> {
        let (tx, rx) = channel();
        Ok(Inbox { rx, mailbox: Mailbox { tx, bell: Doorbell::new()? } })
    }

    pub fn mailbox(&self) -> Mailbox {
        self.mailbox.clone()
    }

    /// Readable while something waits (poll it with the loop's other fds).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.mailbox.bell.fd()
    }

    /// Everything sent so far. The bell is taken first: a message sent
    /// after the take rings again, so none waits for the next timeout.
    pub fn drain(&self) -> Vec<ToLoop> {
        self.mailbox.bell.take();
        self.rx.try_iter().collect()
    }
}

impl Mailbox {
    /// Hand the loop `msg`; false once the loop is gone.
    pub fn send(&self, msg: ToLoop) -> bool {
        let sent = self.tx.send(msg).is_ok();
        if sent {
            self.bell.request();
        }
        sent
    }
}

/// Send a request with `send` (false: nobody to take it) and wait for its
/// answer.
pub fn ask(send: impl FnOnce(Reply) -> bool) -> Response {
    let (reply, answer) = sync_channel(1);
    if !send(reply) {
        return Response::err("the agent is stopping");
    }
    match answer.recv_timeout(ANSWER_WITHIN) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            Response::err(format!("the agent did not answer within {} s", ANSWER_WITHIN.as_secs()))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Response::err("the agent is stopping"),
    }
}

#[cfg(test)]
mod tests;
