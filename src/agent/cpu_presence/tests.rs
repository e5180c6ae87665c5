use super::*;
use crate::nodes::node::Node;
use crate::nodes::node_manager::Request;

fn manager() -> NodeManager {
    NodeManager::new(vec![Node { id: 0, slots: vec![0, 1, 2, 3], cap: 1024 }], 0..4, 3)
}

#[test]
fn a_parked_cpu_that_comes_online_stays_out() {
    let mut m = manager();
    let mut c = CpuPresence::new(None);
    m.request(1, Request { level: 2, weight: 1 });
    // Parking takes it from the manager whatever the kernel says.
    c.park(&mut m, &[2], true);
    assert_eq!(c.parked(), &BTreeSet::from([2]));
    assert!(!m.online().any(|cpu| cpu == 2));
    assert!(!m.object(1).unwrap().cpus.contains(&2));
    c.offline(&mut m, 2);
    c.online(&mut m, 2);
    assert!(!m.online().any(|cpu| cpu == 2), "parked: not there for the manager");
    // An unparked one that comes online is.
    c.online(&mut m, 3);
    assert!(m.online().any(|cpu| cpu == 3));
}
