#[test]
fn this_process_may_run_on_the_cpus_it_is_allowed() {
    let mine = super::of(std::process::id() as i32).expect("own affinity");
    assert!(!mine.is_empty());
    // A pid that cannot exist reads as unknown, not as "nowhere".
    assert_eq!(super::of(i32::MAX), None);
}
