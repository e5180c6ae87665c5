//! Which holder each control request goes to: the control server's
//! handler, run on the client's thread. Requests that need the loop's
//! state go through its inbox (inbox.rs), tag requests to the tags worker
//! (tag_worker.rs); the client's thread waits for the answer (`ask`).

use crate::agent::inbox::{ask, Mailbox, ToLoop};
use crate::agent::tag_worker::TagCmd;
use crate::control::{Handler, Op, Request, Response};
use crate::tags::request;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use tracing::{info, warn};

/// A refused tag request: logged with who asked, counted, answered with
/// its reason. Nothing was written.
fn refuse(cgroup: &std::path::Path, via: request::Via, who: Option<String>, e: request::Rejected) -> Response {
    warn!("tag of {} refused ({}): {e} [{}]", cgroup.display(), who.as_deref().unwrap_or("control socket"), e.reason.name());
    request::count(via, e.reason);
    Response::rejected(&e)
}

/// The control server's handler: each request to whoever holds what it
/// needs. Ping is answered on the client's thread; tag and untag are checked
/// and stored there (tags/request.rs), then applied by the tags worker like
/// every other tag request; status, park and unpark go to the loop.
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
        Op::Tag { cgroup, set, via, who } => match request::tag(&cgroup, &set) {
            Err(e) => refuse(&cgroup, via, who, e),
            Ok(p) => {
                info!("tagged {} ({}): {}", cgroup.display(), who.as_deref().unwrap_or("control socket"), p.encode());
                ask(|r| tags.send(TagCmd::Apply(r)).is_ok())
            }
        },
        Op::Untag { cgroup, via, who } => match request::untag(&cgroup) {
            Err(e) => refuse(&cgroup, via, who, e),
            Ok(false) => Response::ok(format!("{} had no tag of its own", cgroup.display())),
            Ok(true) => {
                info!("untagged {} ({})", cgroup.display(), who.as_deref().unwrap_or("control socket"));
                ask(|r| tags.send(TagCmd::Apply(r)).is_ok())
            }
        },
        Op::Status | Op::Park { .. } | Op::Unpark { .. } => ask(|r| mailbox.send(ToLoop::Control(req, r))),
    })
}

#[cfg(test)]
mod tests;
