use super::*;
use chameleon::report::status::{CpuStatus, ObjectStatus};

/// 2 nodes of 4 CPUs: an object on 0-1, CPU 5 offline, CPU 8 in no node.
fn snap() -> Snapshot {
    let cpu = |cpu, online, role: &str| CpuStatus { cpu, online, role: role.into(), with: 0, perf: None };
    Snapshot {
        agent_pid: 1,
        written_at: 0,
        objects: vec![ObjectStatus { pid: 7, cgroup: 1, cpus: vec![0, 1], gen: 1 }],
        requesters: vec![(7, 1, 1)],
        nodes: vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
        manager_online: vec![],
        defrag_moves: 0,
        cpus: vec![
            cpu(0, true, "rep"),
            cpu(1, true, "borrowed"),
            cpu(2, true, "native"),
            cpu(3, true, "idle"),
            cpu(4, true, "native"),
            cpu(5, false, "native"),
            cpu(6, true, "idle"),
            cpu(7, true, "idle"),
            cpu(8, true, "native"),
        ],
        ..Default::default()
    }
}

#[test]
fn node_rows_count_each_state_and_the_objects() {
    let rows = node_rows(&snap());
    assert_eq!(rows.len(), 3);
    let r = &rows[0];
    assert_eq!((r.rep, r.lent, r.native, r.idle, r.offline, r.objects), (1, 1, 1, 1, 0, 1));
    assert_eq!(r.strip, "RLn.");
    assert_eq!(r.owners, vec![(7, 1)]);
    let r = &rows[1];
    assert_eq!((r.rep, r.lent, r.native, r.idle, r.offline, r.objects), (0, 0, 1, 2, 1, 0));
    assert_eq!(r.strip, "nx..");
    assert_eq!((rows[2].name.as_str(), rows[2].cpus.as_slice()), ("other", &[8][..]));
}

#[test]
fn the_grid_wraps_between_cells_never_inside_one() {
    let s = snap();
    let names = Names::default();
    let lines = cpu_lines(Some(&s), View::Grid, 30, &names);
    assert!(lines.len() >= 3, "{lines:?}");
    for l in &lines {
        assert!(l.width() <= 30, "{l:?}");
    }
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    assert!(text.concat().contains(" 1:lent>0 "), "{text:?}");
    assert_eq!(cpu_lines(Some(&s), View::Grid, 500, &names).len(), 1);
    assert_eq!(cpu_lines(Some(&s), View::Nodes, 30, &names).len(), 3);
}

#[test]
fn the_cpu_pane_grows_to_a_third_of_the_screen() {
    let area = Rect::new(0, 0, 100, 30);
    let a = split(area, 1, true);
    assert_eq!(a.cpus.height, 3);
    assert_eq!(a.history.unwrap().height, HISTORY_ROWS);
    assert_eq!(split(area, 5, true).cpus.height, 7);
    assert_eq!(split(area, 64, true).cpus.height, 10);
    let a = split(area, 1, false);
    assert!(a.history.is_none());
    assert_eq!(a.footer.y, 29);
    assert_eq!(View::Grid.toggled(), View::Nodes);
}
