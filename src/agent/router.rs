//! Which holder each control request goes to: the control server's
//! handler, run on the client's thread. Requests that need the loop's
//! state go through its inbox (inbox.rs), tag requests to the tags worker
//! (tag_worker.rs); the client's thread waits for the answer (`ask`).

use crate::agent::inbox::{ask, Mailbox, ToLoop};
use crate::agent::tag_worker::TagCmd;
use crate::control::{Handler, Op, Request, Response};
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// The control server's handler: each request to whoever holds what it
/// needs. Ping is answered on the client's thread; tags to the tags worker;
/// status, park and unpark to the loop.
pub fn router(mailbox: Mailbox, tags: Sender<TagCmd>) -> Handler {
    Arc::new(move |req: Request| match req.op {
        Op::Ping => Response::ok(format!("scx_chameleon {} pid {}", env!("CARGO_PKG_VERSION"), std::process::id())),
        // Taken by the server itself, which keeps the connection.
        Op::Subscribe => Response::ok("subscribed"),
        Op::Reload { cgroup } => match crate::tags::tag::cgroup_id(&cgroup) {
            Err(e) => Response::err(format!("{e:#}")),
            Ok(_) => ask(|r| tags.send(TagCmd::Apply(r)).is_ok()),
        },
        Op::ReloadRules => ask(|r| tags.send(TagCmd::ReloadRules(Some(r))).is_ok()),
        Op::Tags => ask(|r| tags.send(TagCmd::List(r)).is_ok()),
        Op::Status | Op::Park { .. } | Op::Unpark { .. } => ask(|r| mailbox.send(ToLoop::Control(req, r))),
    })
}

#[cfg(test)]
mod tests;
