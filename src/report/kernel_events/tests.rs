use super::*;

// The layout of the file on 6.16-7.x kernels (names padded to a column).
const SAMPLE: &str = "SCX_EV_SELECT_CPU_FALLBACK                 12
SCX_EV_DISPATCH_LOCAL_DSQ_OFFLINE           0
SCX_EV_DISPATCH_KEEP_LAST                 345
SCX_EV_ENQ_SKIP_EXITING                     1
SCX_EV_BYPASS_DURATION              123456789
";

#[test]
fn parses_every_counter_the_kernel_lists() {
    let p = parse(SAMPLE);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(p.counters.len(), 5);
    assert_eq!(p.counters["select_cpu_fallback"], 12);
    assert_eq!(p.counters["dispatch_keep_last"], 345);
    assert_eq!(p.counters["bypass_duration"], 123_456_789);
}

#[test]
fn unknown_names_are_kept_as_they_come() {
    let p = parse("SCX_EV_SOMETHING_NEW 7\nPLAIN_NAME 3\n\n");
    assert_eq!(p.counters["something_new"], 7);
    assert_eq!(p.counters["plain_name"], 3);
    assert!(p.errors.is_empty());
}

#[test]
fn bad_lines_are_reported_with_their_number_and_the_rest_kept() {
    let p = parse("SCX_EV_A 1\nSCX_EV_B -4\nSCX_EV_C\nSCX_EV_D 2 extra\nbad-name 5\nSCX_EV_E 18446744073709551616\nSCX_EV_F 6\n");
    assert_eq!(p.counters.len(), 2, "{:?}", p.counters);
    assert_eq!((p.counters["a"], p.counters["f"]), (1, 6));
    assert_eq!(p.errors.len(), 5, "{:?}", p.errors);
    assert!(p.errors[0].starts_with("line 2: SCX_EV_B: \"-4\""), "{:?}", p.errors);
    assert!(p.errors[1].starts_with("line 3: expected"), "{:?}", p.errors);
    assert!(p.errors[2].starts_with("line 4: expected"), "{:?}", p.errors);
    assert!(p.errors[3].starts_with("line 5: \"bad-name\""), "{:?}", p.errors);
    assert!(p.errors[4].starts_with("line 6: SCX_EV_E"), "u64 overflow: {:?}", p.errors);
}

#[test]
fn no_file_means_no_counters() {
    let p = read(Path::new("/nonexistent/sched_ext/root/events")).unwrap();
    assert_eq!(p, Parsed::default());
}
