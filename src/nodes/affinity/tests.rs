#[test]
fn this_process_may_run_on_the_cpus_it_is_allowed() {
    let mine = super::of(std::process::id() as i32).expect("own affinity");
    assert!(!mine.is_empty());
    // A pid that cannot exist reads as unknown, not as "nowhere".
    assert_eq!(super::of(i32::MAX), None);
}

#[test]
fn a_cgroups_cpuset_is_its_own_or_its_nearest_ancestors() {
    let root = std::env::temp_dir().join(format!("cpuset-test-{}", std::process::id()));
    let leaf = root.join("kubepods/pod1/c1");
    std::fs::create_dir_all(&leaf).unwrap();
    std::fs::write(root.join("cpuset.cpus.effective"), "0-7\n").unwrap();
    std::fs::write(root.join("kubepods/pod1/cpuset.cpus.effective"), "2-3\n").unwrap();
    // The leaf has no file of its own (no cpuset controller there): its
    // parent's.
    assert_eq!(super::cpuset_from(&root, "/kubepods/pod1/c1", 8), Some([2, 3].into()));
    std::fs::write(leaf.join("cpuset.cpus.effective"), "1,5\n").unwrap();
    assert_eq!(super::cpuset_from(&root, "/kubepods/pod1/c1", 8), Some([1, 5].into()));
    assert_eq!(super::cpuset_from(&root, "/", 8), Some((0..8).collect()));
    // Nothing readable up to the root: unknown, not "nowhere".
    std::fs::remove_file(root.join("cpuset.cpus.effective")).unwrap();
    assert_eq!(super::cpuset_from(&root, "/kubepods", 8), None);
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(super::cpuset_of(i32::MAX), None);
}
