use super::*;

#[test]
fn a_doorbell_is_taken_once_and_drained() {
    let bell = Doorbell::new().unwrap();
    assert!(!bell.take());
    bell.request();
    bell.request();
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let ready = |bell: &Doorbell| poll(&mut [PollFd::new(bell.fd(), PollFlags::POLLIN)], PollTimeout::ZERO).unwrap();
    assert_eq!(ready(&bell), 1, "a ring wakes poll");
    assert!(bell.take());
    assert!(!bell.take(), "taken once");
    assert_eq!(ready(&bell), 0, "drained: poll sleeps again");
}
