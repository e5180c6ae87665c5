use super::*;
use std::time::{Duration, Instant};

fn cpus(text: &str, nr_cpus: usize) -> Vec<usize> {
    CpuList::parse(text, nr_cpus).unwrap_or_else(|e| panic!("{text:?}: {e}")).cpus().to_vec()
}

fn refusal(text: &str, nr_cpus: usize) -> String {
    match CpuList::parse(text, nr_cpus) {
        Ok(l) => panic!("{text:?} accepted as {:?}", l.cpus()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn reads_the_kernels_list_syntax() {
    assert_eq!(cpus("2", 4), [2]);
    assert_eq!(cpus("1,3-5", 8), [1, 3, 4, 5]);
    assert_eq!(cpus(" 3 , 1-2 \n", 4), [1, 2, 3]);
    // Ascending and each CPU once, whatever the order and overlaps given.
    assert_eq!(cpus("3,1-2,2,0-1", 4), [0, 1, 2, 3]);
    assert_eq!(cpus("2-2", 4), [2]);
    let l = CpuList::parse("5,1,3-4", 8).unwrap();
    assert_eq!(l.to_string(), "1,3-5");
    assert_eq!(CpuList::parse(&l.to_string(), 8).unwrap(), l, "its text reads back as itself");
}

#[test]
fn a_huge_range_is_refused_at_once_without_expanding_it() {
    for text in ["0-4000000000", "4000000000", "1,0-4000000000", "0-18446744073709551615", "18446744073709551615-0"] {
        let t0 = Instant::now();
        let e = refusal(text, 4);
        assert!(t0.elapsed() < Duration::from_millis(50), "{text:?}: {:?} to refuse", t0.elapsed());
        assert!(e.contains("this machine has CPUs 0-3"), "{text:?}: {e}");
    }
    assert!(refusal("0-4000000000", 4).contains("CPU 4000000000"));
}

#[test]
fn a_number_past_u64_is_refused_without_overflowing() {
    for text in ["0-18446744073709551616", "99999999999999999999999999", "1-99999999999999999999999999"] {
        let e = refusal(text, 4);
        assert!(e.contains("this machine has CPUs 0-3"), "{text:?}: {e}");
    }
    // The number is named as given (not wrapped, not truncated) when short.
    assert!(refusal("18446744073709551616", 4).contains("CPU 18446744073709551616"));
    // And a very long one is cut in the message.
    let long = "9".repeat(4000);
    let e = refusal(&long, 4);
    assert!(e.len() < 200, "{} bytes: {e}", e.len());
}

#[test]
fn the_bound_is_the_number_of_cpu_ids() {
    assert_eq!(cpus("0-3", 4), [0, 1, 2, 3]);
    assert!(refusal("4", 4).contains("CPU 4: this machine has CPUs 0-3"));
    assert!(refusal("3-4", 4).contains("CPU 4"));
    assert!(refusal("0", 0).contains("no CPU"), "{}", refusal("0", 0));
}

#[test]
fn a_range_must_go_upwards() {
    let e = refusal("3-1", 4);
    assert!(e.contains("3-1") && e.contains("upwards"), "{e}");
}

#[test]
fn garbage_is_refused_with_a_reason() {
    assert!(refusal("", 4).contains("no CPU given"));
    assert!(refusal("  ", 4).contains("no CPU given"));
    for (text, why) in [
        ("x", "'x' is not a CPU number"),
        ("x-y", "'x' is not a CPU number"),
        ("1-", "'' is not a CPU number"),
        ("-1", "'' is not a CPU number"),
        ("1--2", "is not a CPU number"),
        ("1-2-3", "'2-3' is not a CPU number"),
        ("1,,2", "an empty item"),
        ("1,", "an empty item"),
        ("+1", "'+1' is not a CPU number"),
        ("0x1", "'0x1' is not a CPU number"),
        ("1 2", "'1 2' is not a CPU number"),
        ("\u{0661}", "is not a CPU number"),
        ("0-7:2", "'7:2' is not a CPU number"),
    ] {
        let e = refusal(text, 8);
        assert!(e.contains(why), "{text:?}: {e:?} lacks {why:?}");
        assert!(e.contains("not a CPU list"), "{text:?}: {e:?}");
    }
}

#[test]
fn many_items_cost_no_more_than_the_cpus() {
    // Each item is bounded by the machine, and the result is a set of it.
    let text = "0-63,".repeat(800) + "0";
    let t0 = Instant::now();
    assert_eq!(cpus(&text, 64).len(), 64);
    assert!(t0.elapsed() < Duration::from_millis(200), "{:?}", t0.elapsed());
}

#[test]
fn a_clap_argument_is_bounded_by_the_possible_cpus() {
    let n = *scx_utils::NR_CPU_IDS;
    assert_eq!(arg("0").unwrap().cpus(), [0]);
    let e = arg(&n.to_string()).unwrap_err();
    assert!(e.contains(&format!("CPU {n}: this machine has CPUs 0-{}", n - 1)), "{e}");
    assert!(arg("0-4000000000").is_err());
}
