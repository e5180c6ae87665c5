use super::*;
use crate::agent::inbox::Inbox;
use std::sync::mpsc::channel;
use std::time::Duration;

#[test]
fn the_router_answers_ping_itself_and_sends_the_rest_where_it_belongs() {
    let inbox = Inbox::new().unwrap();
    let (tags, tag_rx) = channel();
    let route = router(inbox.mailbox(), tags);
    let r = route(Request { v: 1, op: Op::Ping });
    assert!(r.ok && r.detail.unwrap().contains("pid"));
    // A worker answering tags on another thread.
    let worker = std::thread::spawn(move || {
        if let Ok(TagCmd::List(reply)) = tag_rx.recv() {
            let _ = reply.send(Response::ok("listed"));
        }
    });
    assert_eq!(route(Request { v: 1, op: Op::Tags }).detail.as_deref(), Some("listed"));
    worker.join().unwrap();
    // The loop answering status.
    let lp = std::thread::spawn(move || loop {
        for m in inbox.drain() {
            if let ToLoop::Control(req, reply) = m {
                let _ = reply.send(Response::ok(format!("{:?}", req.op)));
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    });
    assert_eq!(route(Request { v: 1, op: Op::Status }).detail.as_deref(), Some("Status"));
    lp.join().unwrap();
    // A bad cgroup path never reaches the worker.
    let r = route(Request { v: 1, op: Op::Reload { cgroup: "/nonexistent/cg".into() } });
    assert!(!r.ok);
}

#[test]
fn a_refused_tag_request_is_answered_with_its_reason_and_reaches_no_worker() {
    let inbox = Inbox::new().unwrap();
    let (tags, tag_rx) = channel();
    let route = router(inbox.mailbox(), tags);
    let tag = |set: &[(&str, &str)], via| Request {
        v: 1,
        op: Op::Tag {
            cgroup: "/nonexistent/cg".into(),
            set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            via,
            who: Some("pod default/p container c".into()),
        },
    };
    let before = request::nri_rejected();
    let r = route(tag(&[("level", "7")], request::Via::Nri));
    assert!(!r.ok && r.error.as_deref().unwrap().contains("level"), "{r:?}");
    assert_eq!(r.reason, Some(request::Reason::Level));
    let r = route(tag(&[("level", "1")], request::Via::Nri));
    assert_eq!(r.reason, Some(request::Reason::Cgroup), "{r:?}");
    let r = route(tag(&[("level", "1")], request::Via::Cli));
    assert_eq!(r.reason, Some(request::Reason::Cgroup));
    let after = request::nri_rejected();
    let grew = |k: &str| after.get(k).copied().unwrap_or(0) - before.get(k).copied().unwrap_or(0);
    assert_eq!((grew("level"), grew("cgroup")), (1, 1), "the plugin's refusals only");
    // Untagging a cgroup that is gone is no error: it has no tag.
    let r = route(Request { v: 1, op: Op::Untag { cgroup: "/nonexistent/cg".into(), via: request::Via::Nri, who: None } });
    assert!(r.ok, "{r:?}");
    assert!(tag_rx.try_recv().is_err(), "nothing was applied");
}
