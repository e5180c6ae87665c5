//! The kernel's own sched_ext event counters (kernel 6.16+): while a
//! scheduler is loaded, /sys/kernel/sched_ext/root/events lists one counter a
//! line, "SCX_EV_NAME VALUE" (tasks the kernel placed itself because
//! select_cpu picked an unusable CPU, dispatches to an offline CPU's local
//! queue, time spent in bypass mode...). They are what the kernel saw of the
//! policy from outside, so the metrics carry them next to our own counters.
//!
//! The names differ between kernel versions (new ones appear), so they are
//! parsed generically: whatever the file lists, the metrics list.

use std::collections::BTreeMap;
use std::path::Path;

/// Where the kernel publishes the counters of the scheduler loaded now.
pub const PATH: &str = "/sys/kernel/sched_ext/root/events";

/// What one read of the file gave: the counters (by metric name, see
/// `metric_name`), and the lines that were not "NAME VALUE", each with its
/// line number, so that a format change is reported, not silently dropped.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Parsed {
    pub counters: BTreeMap<String, u64>,
    pub errors: Vec<String>,
}

/// "SCX_EV_SELECT_CPU_FALLBACK" -> "select_cpu_fallback": the kernel's prefix
/// says nothing once the counters are labelled as kernel events.
pub fn metric_name(kernel_name: &str) -> String {
    kernel_name.strip_prefix("SCX_EV_").unwrap_or(kernel_name).to_ascii_lowercase()
}

/// Parse the file's text. Blank lines are skipped; a line that is not a name
/// ([A-Za-z0-9_]) and an unsigned integer is reported in `errors` and the
/// rest are still used.
pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => {}
            [name, value] => {
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    out.errors.push(format!("line {}: {name:?} is not a counter name", i + 1));
                    continue;
                }
                match value.parse::<u64>() {
                    Ok(v) => {
                        out.counters.insert(metric_name(name), v);
                    }
                    Err(_) => out.errors.push(format!("line {}: {name}: {value:?} is not an unsigned integer", i + 1)),
                }
            }
            _ => out.errors.push(format!("line {}: expected \"NAME VALUE\", got {line:?}", i + 1)),
        }
    }
    out
}

/// Read and parse `path`. No file (an older kernel, or no scheduler loaded)
/// means no counters, not an error; an unreadable file is an error.
pub fn read(path: &Path) -> std::io::Result<Parsed> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Parsed::default()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
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
}
