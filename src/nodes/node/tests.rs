use super::*;

#[test]
fn fast_cpus_are_the_top_capacity_and_none_when_all_are_equal() {
    assert_eq!(fast_cpus([(0, 512), (1, 512), (2, 1024), (3, 1024)]), vec![2, 3]);
    assert_eq!(fast_cpus([(0, 1024), (1, 800), (2, 1024), (3, 512)]), vec![0, 2]);
    assert!(fast_cpus([(0, 1024), (1, 1024)]).is_empty());
    assert!(fast_cpus([]).is_empty());
}

#[test]
fn parses_node_lists() {
    let nodes = parse_nodes("0-3;4,5,6,7", 8).unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[1].slots, vec![4, 5, 6, 7]);
}

#[test]
fn hybrid_llc_splits_by_capacity_fastest_first() {
    // One LLC: E cores 0-1 and 2-3 (512) listed before P core 4-5 (1024).
    let llc = vec![(vec![0, 1], 512), (vec![2, 3], 512), (vec![5, 4], 1024)];
    let nodes = nodes_from(vec![llc.clone()], false);
    assert_eq!(nodes, vec![Node { id: 0, slots: vec![4, 5], cap: 1024 }, Node { id: 1, slots: vec![0, 1, 2, 3], cap: 512 }]);
    // Asked to mix: one node per LLC, as before.
    assert_eq!(nodes_from(vec![llc], true), vec![Node { id: 0, slots: vec![0, 1, 2, 3, 4, 5], cap: 1024 }]);
    // Uniform LLCs: one node each, in their order.
    let two = vec![vec![(vec![0, 1], 1024)], vec![(vec![2, 3], 1024)]];
    assert_eq!(nodes_from(two, false).iter().map(|n| n.slots.clone()).collect::<Vec<_>>(), vec![vec![0, 1], vec![2, 3]]);
}

#[test]
fn parses_capacities() {
    let c = parse_capacities("2-3=1024; 0,1=512", 4).unwrap();
    assert_eq!(c.into_iter().collect::<Vec<_>>(), vec![(0, 512), (1, 512), (2, 1024), (3, 1024)]);
    let err = |s: &str| parse_capacities(s, 4).unwrap_err().to_string();
    assert!(err("0-1=0").contains("capacity \"0\": expected 1..=1024"), "{}", err("0-1=0"));
    assert!(err("0-1=2048").contains("expected 1..=1024"));
    assert!(err("0-9=512").contains("CPU 9 does not exist"));
    assert!(err("0-1=512;1=256").contains("CPU 1 given twice"));
    assert!(err("0-1").contains("expected CPULIST=CAPACITY"));
    assert!(err("x=512").contains("\"x\" is not a CPU number"));
    assert!(err("").contains("no CPU given"));
}

#[test]
fn refuses_bad_node_lists() {
    assert!(parse_nodes("0-3;3-5", 8).is_err(), "overlap");
    assert!(parse_nodes("0-9", 8).is_err(), "beyond the CPUs");
    assert!(parse_nodes("0-3;", 8).is_err(), "empty node");
    assert!(parse_nodes("a-b", 8).is_err(), "garbage");
    let e = parse_nodes("0-4294967295", 8).unwrap_err().to_string();
    assert!(e.contains("CPU 4294967295 does not exist"), "{e}");
    assert!(parse_nodes("0-99999999999999999999999", 8).is_err(), "overflow");
    assert!(parse_nodes("5-2", 8).is_err(), "downwards");
}
