use super::*;

#[test]
fn the_view_carries_no_counters() {
    let snap = Snapshot { module: Some(ModuleStatus { kfuncs: true, proxies: vec![(1, 0)], ..Default::default() }), ..Default::default() };
    let v = serde_json::to_value(&snap).unwrap();
    assert!(v.get("counters").is_none(), "{v}");
    let module = v["module"].as_object().unwrap();
    let mut keys: Vec<&str> = module.keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["duty", "emulate", "kfuncs", "offlined", "proxies"]);
}

#[test]
fn a_file_from_an_agent_that_wrote_counters_still_reads() {
    let old = r#"{"agent_pid": 7, "objects": [], "requesters": [], "nodes": [[0, 1]], "defrag_moves": 0,
        "counters": {"enqueued": 1, "fuse": 2},
        "module": {"kfuncs": true, "lends": 3, "reclaims": 2, "irqs_moved": 1, "proxies": [[1, 0]],
                   "park_critical_ns": 5, "offlined": [], "emulate": null, "duty": []}}"#;
    let snap: Snapshot = serde_json::from_str(old).unwrap();
    assert_eq!(snap.agent_pid, 7);
    assert_eq!(snap.module.unwrap().proxies, [(1, 0)]);
}
