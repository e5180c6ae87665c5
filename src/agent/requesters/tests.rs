use super::*;

fn req(cgroup: u64) -> Requester {
    Requester { props: Props::default(), level: 1, cgroup }
}

#[test]
fn forgetting_a_pid_clears_where_it_was_seen() {
    let mut r = Requesters::default();
    r.seen(1, 3);
    assert!(r.insert(1, req(7)).is_none());
    r.seen(2, 5);
    r.insert(2, req(8));
    assert_eq!(r.waiting_at(|_| true), BTreeMap::from([(1, 3), (2, 5)]));
    assert!(r.forget(1));
    assert!(!r.forget(1));
    assert!(!r.contains(1));
    // A newcomer given the pid is not placed where the old task waited.
    r.insert(1, req(7));
    assert_eq!(r.waiting_at(|_| true), BTreeMap::from([(2, 5)]));
}

#[test]
fn only_waiters_that_were_seen_count() {
    let mut r = Requesters::default();
    r.insert(1, req(7));
    r.insert(2, req(7));
    r.seen(2, 4);
    r.insert(3, req(9));
    r.seen(3, 6);
    assert_eq!(r.waiting_at(|pid| pid != 3), BTreeMap::from([(2, 4)]));
    let mut owners: Vec<_> = r.owners().collect();
    owners.sort();
    assert_eq!(owners, [(1, 7), (2, 7), (3, 9)]);
    assert_eq!(r.get(3).unwrap().member(), Member { high: false, group: 9 });
}
