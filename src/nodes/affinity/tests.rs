#[test]
fn the_processor_field_is_read_after_the_command() {
    let mut line = String::from("123 (a) b) c) R");
    for i in 4..=52 {
        line += &format!(" {}", if i == 39 { 5 } else { i * 1000 });
    }
    assert_eq!(super::parse_processor(&line), Some(5));
    assert_eq!(super::parse_processor("123 (x) R 1 2"), None);
    assert_eq!(super::parse_processor("garbage"), None);
    let me = super::cpu_of(std::process::id() as i32).expect("own CPU");
    assert!(me < nix::sched::CpuSet::count());
}

#[test]
fn this_process_may_run_on_the_cpus_it_is_allowed() {
    let mine = super::of(std::process::id() as i32).expect("own affinity");
    assert!(!mine.is_empty());
    // A pid that cannot exist reads as unknown, not as "nowhere".
    assert_eq!(super::of(i32::MAX), None);
}
