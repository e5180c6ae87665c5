use super::*;

/// A CPU directory like the kernel's: `present`, and a cpuN directory
/// per CPU, with an `online` file for those in `hotpluggable`.
fn sysfs(name: &str, present: &str, nr: usize, hotpluggable: &[usize]) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("chameleon-park-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for c in 0..nr {
        std::fs::create_dir_all(d.join(format!("cpu{c}"))).unwrap();
        if hotpluggable.contains(&c) {
            std::fs::write(d.join(format!("cpu{c}/online")), "1\n").unwrap();
        }
    }
    std::fs::write(d.join("present"), present).unwrap();
    d
}

fn refusal(sysfs: &Path, cpus: &[usize], park: bool, online: &[usize], parked: &[usize]) -> String {
    let parked: BTreeSet<usize> = parked.iter().copied().collect();
    match check_in(sysfs, cpus, park, online, &parked, 4) {
        Ok(()) => "accepted".into(),
        Err(e) => e.to_string(),
    }
}

// Whether these are the module's rules is park_rules.sh's question (it
// asks the module); here: the facts come from the kernel's files, and
// the whole request is judged before any one CPU of it.
#[test]
fn goes_by_the_kernels_cpu_files() {
    let all = [0, 1, 2, 3];
    // CPU 2 has no online file: the kernel will not take it offline.
    let d = sysfs("hotplug", "0-3\n", 4, &[1, 3]);
    assert!(refusal(&d, &[2], true, &all, &[]).contains("cannot be taken offline"));
    assert!(refusal(&d, &[2], true, &all, &[]).contains("cpu2/online"));
    assert_eq!(refusal(&d, &[1, 3], true, &all, &[]), "accepted");
    let d = sysfs("present", "0-2\n", 4, &[1, 2, 3]);
    assert!(refusal(&d, &[3], true, &all, &[]).contains("not present"));
    assert!(refusal(&d, &[3], false, &all, &[3]).contains("not present"));
    std::fs::remove_file(d.join("present")).unwrap();
    assert_eq!(refusal(&d, &[3], true, &all, &[]), "accepted");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn judges_the_whole_request_before_each_cpu() {
    let all = [0, 1, 2, 3];
    let d = sysfs("order", "0-3\n", 4, &[1, 2, 3]);
    // 2 is parked, but an id past the last or CPU 0 in the same request
    // is what is wrong with it, whatever the order given.
    assert!(refusal(&d, &[2, 4], true, &all, &[2]).contains("0-3"));
    assert!(refusal(&d, &[2, 0], true, &all, &[2]).contains("CPU 0"));
    // 3 offline, 2 parked: the lowest first.
    assert!(refusal(&d, &[3, 2], true, &[0, 1, 2], &[2]).contains("CPU 2 is parked"));
    assert!(refusal(&d, &[], true, &all, &[]).contains("no CPU"));
    assert!(refusal(&d, &[3], true, &[1, 2, 3], &[1, 2]).contains("no CPU"));
    assert!(refusal(&d, &[1, 3], false, &all, &[1, 2]).contains("CPU 3 is not parked"));
    assert_eq!(refusal(&d, &[2, 1], false, &all, &[1, 2]), "accepted");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lists_ranges() {
    scx_utils::set_cpumask_test_width(64);
    assert_eq!(list(&[3, 1, 2, 5, 7, 8]), "1-3,5,7-8");
    assert_eq!(list(&[4]), "4");
}
