use super::*;

#[test]
fn a_message_rings_the_loop_and_is_drained_once() {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let inbox = Inbox::new().unwrap();
    let ready = |i: &Inbox| poll(&mut [PollFd::new(i.fd(), PollFlags::POLLIN)], PollTimeout::ZERO).unwrap();
    assert_eq!(ready(&inbox), 0);
    let m = inbox.mailbox();
    assert!(m.send(ToLoop::ModuleDone { id: 1, result: Ok(5) }));
    assert!(m.send(ToLoop::ModuleDone { id: 2, result: Err("no".into()) }));
    assert_eq!(ready(&inbox), 1, "a message wakes the loop's poll");
    assert_eq!(inbox.drain().len(), 2);
    assert_eq!(ready(&inbox), 0);
    assert!(inbox.drain().is_empty());
    drop(inbox);
    assert!(!m.send(ToLoop::ModuleDone { id: 3, result: Ok(0) }), "the loop is gone");
}

#[test]
fn a_question_nobody_takes_or_answers_gets_an_error_not_a_hang() {
    let r = ask(|_| false);
    assert!(!r.ok && r.error.unwrap().contains("stopping"));
    // Taken, then dropped unanswered (a worker that stopped).
    let r = ask(|reply| {
        drop(reply);
        true
    });
    assert!(!r.ok && r.error.unwrap().contains("stopping"));
    let r = ask(|reply| reply.send(Response::ok("yes")).is_ok());
    assert!(r.ok);
}

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
