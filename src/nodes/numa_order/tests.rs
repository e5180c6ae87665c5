use super::*;

fn node(id: usize, distance: &[usize]) -> NumaNode {
    NumaNode { id, distance: distance.to_vec(), has_cpus: true }
}

#[test]
fn nearest_node_first_then_by_id() {
    // Two sockets of two nodes each: 0-1 and 2-3 near (12), across 20 or 30.
    let nodes = [
        node(0, &[10, 12, 20, 30]),
        node(1, &[12, 10, 30, 20]),
        node(2, &[20, 30, 10, 12]),
        node(3, &[30, 20, 12, 10]),
    ];
    let rows = orders(&nodes, 16).unwrap();
    assert_eq!(rows[0], vec![1, 2, 3]);
    assert_eq!(rows[1], vec![0, 3, 2]);
    assert_eq!(rows[2], vec![3, 0, 1]);
    assert_eq!(rows[3], vec![2, 1, 0]);
    assert!(rows[4..].iter().all(|r| r.is_empty()));
}

#[test]
fn equal_distances_go_by_id() {
    let nodes: Vec<_> = (0..4).map(|i| node(i, &[20, 20, 20, 20])).collect();
    assert_eq!(orders(&nodes, 16).unwrap()[2], vec![0, 1, 3]);
}

#[test]
fn nodes_without_cpus_are_skipped_and_sparse_ids_map_by_position() {
    // Online nodes 0, 2 (memory only) and 5: distance columns in that order.
    let nodes = [
        node(0, &[10, 15, 40]),
        NumaNode { id: 2, distance: vec![15, 10, 15], has_cpus: false },
        node(5, &[40, 15, 10]),
    ];
    let rows = orders(&nodes, 16).unwrap();
    assert_eq!(rows[0], vec![5]);
    assert_eq!(rows[5], vec![0]);
    assert!(rows[2].is_empty());
}

#[test]
fn a_missing_distance_is_the_farthest() {
    let nodes = [node(0, &[10]), node(1, &[20, 10, 30]), node(2, &[30, 20, 10])];
    assert_eq!(orders(&nodes, 16).unwrap()[0], vec![1, 2]);
    assert_eq!(orders(&nodes, 16).unwrap()[1], vec![0, 2]);
}

#[test]
fn an_id_beyond_the_table_gives_none() {
    let nodes = [node(0, &[10, 20]), node(16, &[20, 10])];
    assert_eq!(orders(&nodes, 16), None);
    assert!(orders(&nodes, 17).is_some());
}
