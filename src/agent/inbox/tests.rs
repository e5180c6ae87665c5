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
