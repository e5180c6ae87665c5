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
