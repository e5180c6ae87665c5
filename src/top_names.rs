//! Names for what the agent reports by number, for the tools (`top`,
//! `trace`): a cgroup's path instead of its id, a task's comm beside its
//! pid, and times in human units instead of raw nanoseconds.
//!
//! The tools run on the agent's host, so names come from its filesystems:
//! on cgroup v2 a cgroup directory's inode number is the cgroup's id, so a
//! walk of the cgroup root maps ids to paths (done lazily, on a miss, at most
//! once a second; paths already known are kept, a removed cgroup keeps its
//! last name); a task's comm is /proc/PID/comm (cached, re-read after
//! COMM_TTL; a task that is gone keeps its last known comm). The roots are
//! given, so host tests use a temporary directory; with no root nothing is
//! resolved and the numbers are shown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cgroup v2 mount and procfs, where `top` resolves names.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
pub const PROC_ROOT: &str = "/proc";
/// A miss walks the cgroup tree again at most this often.
pub const REWALK: Duration = Duration::from_secs(1);
/// How long a comm read from /proc is trusted (a pid may be reused).
pub const COMM_TTL: Duration = Duration::from_secs(5);
/// Comms kept at most; the least recently read go first beyond it.
const COMMS_KEPT: usize = 4096;

/// A duration (or a time on the monotonic clock) in nanoseconds, in the
/// largest unit it reaches, to three significant figures below a second:
/// "850 ns", "7.94 µs", "11.9 ms", "250 ms"; seconds with two decimals,
/// "43.02 s". Rounding that reaches 1000 of a unit moves to the next
/// ("1.00 ms", not "1000 µs").
pub fn fmt_ns(ns: u64) -> String {
    if ns < 1000 {
        return format!("{ns} ns");
    }
    let ns = ns as u128;
    // round(ns * scale / unit), without floating point.
    let round = |unit: u128, scale: u128| (ns * scale + unit / 2) / unit;
    for (unit, name) in [(1_000u128, "µs"), (1_000_000, "ms")] {
        let hundredths = round(unit, 100);
        if hundredths < 1000 {
            return format!("{}.{:02} {name}", hundredths / 100, hundredths % 100);
        }
        let tenths = round(unit, 10);
        if tenths < 1000 {
            return format!("{}.{} {name}", tenths / 10, tenths % 10);
        }
        let whole = round(unit, 1);
        if whole < 1000 {
            return format!("{whole} {name}");
        }
    }
    let hundredths = round(1_000_000_000, 100);
    format!("{}.{:02} s", hundredths / 100, hundredths % 100)
}

/// "141 (pgbench)", or the pid alone while its comm is unknown.
pub fn pid_text(pid: i32, comm: Option<&str>) -> String {
    match comm.filter(|c| !c.is_empty()) {
        Some(c) => format!("{pid} ({})", crate::event::escape_comm(c)),
        None => pid.to_string(),
    }
}

/// Whether cgroup `path` is `prefix` or below it, by whole components:
/// "/work" holds "/work/db" but not "/workers"; "/" holds everything.
pub fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// `path` in at most `width` columns: whole if it fits, else its systemd
/// unit ("nginx.service") if that fits, else its tail after '…'.
pub fn fit_path(path: &str, width: usize) -> String {
    let len = path.chars().count();
    if len <= width {
        return path.to_string();
    }
    let last = path.rsplit('/').next().unwrap_or(path);
    let unit = [".service", ".scope", ".slice", ".socket", ".mount"].iter().any(|s| last.ends_with(s));
    if unit && last.chars().count() <= width {
        return last.to_string();
    }
    let keep = width.saturating_sub(1);
    let tail: String = path.chars().skip(len - keep.min(len)).collect();
    format!("…{tail}")
}

/// Every cgroup under `root`: id (the directory's inode) → path relative to
/// `root` ("/" for the root itself, "/work/db" below). Unreadable
/// directories are skipped; symlinks are not followed.
pub fn walk_cgroups(root: &Path) -> HashMap<u64, String> {
    use std::os::unix::fs::MetadataExt;
    let mut found = HashMap::new();
    let Ok(meta) = std::fs::symlink_metadata(root) else { return found };
    found.insert(meta.ino(), "/".to_string());
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            let path = format!("{rel}/{}", e.file_name().to_string_lossy());
            found.insert(meta.ino(), path.clone());
            stack.push((e.path(), path));
        }
    }
    found
}

/// A task's comm from `proc_root`/PID/comm (None: gone or unreadable).
pub fn read_comm(proc_root: &Path, pid: i32) -> Option<String> {
    if pid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("comm")).ok()?;
    let comm = text.trim_end_matches('\n');
    (!comm.is_empty()).then(|| comm.to_string())
}

/// Cgroup ids → paths, walked lazily and kept.
#[derive(Debug, Default)]
pub struct CgroupNames {
    root: Option<PathBuf>,
    paths: HashMap<u64, String>,
    walked: Option<Instant>,
    walks: usize,
}

impl CgroupNames {
    pub fn new(root: Option<PathBuf>) -> Self {
        CgroupNames { root, ..Default::default() }
    }

    /// Make sure `id` is known if it can be: on a miss, walk the tree again
    /// unless that was done less than REWALK ago.
    pub fn resolve(&mut self, id: u64, now: Instant) {
        if id == 0 || self.paths.contains_key(&id) {
            return;
        }
        let Some(root) = &self.root else { return };
        if self.walked.is_some_and(|t| now.saturating_duration_since(t) < REWALK) {
            return;
        }
        self.walked = Some(now);
        self.walks += 1;
        self.paths.extend(walk_cgroups(root));
    }

    pub fn get(&self, id: u64) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    /// How many walks were done (tests: misses do not walk every time).
    pub fn walks(&self) -> usize {
        self.walks
    }

    /// The ids whose path is `prefix` or below it.
    pub fn ids_under(&self, prefix: &str) -> Vec<u64> {
        self.paths.iter().filter(|(_, p)| under(p, prefix)).map(|(id, _)| *id).collect()
    }
}

/// Pids → comms, from the events and from /proc.
#[derive(Debug, Default)]
pub struct Comms {
    proc_root: Option<PathBuf>,
    /// comm and when it was last confirmed.
    comms: HashMap<i32, (String, Instant)>,
}

impl Comms {
    pub fn new(proc_root: Option<PathBuf>) -> Self {
        Comms { proc_root, ..Default::default() }
    }

    /// The kernel named the task in one of its events.
    pub fn learn(&mut self, pid: i32, comm: &str, now: Instant) {
        if pid > 0 && !comm.is_empty() {
            self.comms.insert(pid, (comm.to_string(), now));
            self.bound();
        }
    }

    /// Read /proc if the comm is unknown or older than COMM_TTL; a task that
    /// is gone keeps the comm it had.
    pub fn resolve(&mut self, pid: i32, now: Instant) {
        if pid <= 0 || self.comms.get(&pid).is_some_and(|(_, t)| now.saturating_duration_since(*t) < COMM_TTL) {
            return;
        }
        let Some(root) = &self.proc_root else { return };
        match read_comm(root, pid) {
            Some(c) => {
                self.comms.insert(pid, (c, now));
                self.bound();
            }
            // Gone: keep the last known comm, and do not ask again until the TTL.
            None => {
                if let Some(e) = self.comms.get_mut(&pid) {
                    e.1 = now;
                }
            }
        }
    }

    pub fn get(&self, pid: i32) -> Option<&str> {
        self.comms.get(&pid).map(|(c, _)| c.as_str())
    }

    fn bound(&mut self) {
        if self.comms.len() > COMMS_KEPT {
            let mut by_age: Vec<(Instant, i32)> = self.comms.iter().map(|(p, (_, t))| (*t, *p)).collect();
            by_age.sort_unstable();
            for (_, pid) in by_age.into_iter().take(self.comms.len() - COMMS_KEPT) {
                self.comms.remove(&pid);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.comms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.comms.is_empty()
    }
}

/// Both, as `top` keeps them.
#[derive(Debug, Default)]
pub struct Names {
    pub cgroups: CgroupNames,
    pub comms: Comms,
}

impl Names {
    /// Resolving under these roots (the host's: CGROUP_ROOT, PROC_ROOT).
    pub fn at(cgroup_root: &Path, proc_root: &Path) -> Self {
        Names { cgroups: CgroupNames::new(Some(cgroup_root.into())), comms: Comms::new(Some(proc_root.into())) }
    }

    pub fn host() -> Self {
        Self::at(Path::new(CGROUP_ROOT), Path::new(PROC_ROOT))
    }

    /// "141 (pgbench)".
    pub fn pid(&self, pid: i32) -> String {
        pid_text(pid, self.comms.get(pid))
    }

    /// "/work/db", or "cgroup 54" while unknown ("-" for none).
    pub fn cgroup(&self, id: u64) -> String {
        match (id, self.cgroups.get(id)) {
            (0, _) => "-".into(),
            (_, Some(p)) => p.to_string(),
            (id, None) => format!("cgroup {id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn fmt_ns_picks_the_unit_and_three_figures() {
        let cases = [
            (0, "0 ns"),
            (999, "999 ns"),
            (1_000, "1.00 µs"),
            (1_234, "1.23 µs"),
            (9_994, "9.99 µs"),
            (9_995, "10.0 µs"),
            (99_949, "99.9 µs"),
            (99_950, "100 µs"),
            (999_499, "999 µs"),
            (999_500, "1.00 ms"),
            (7_942_281, "7.94 ms"),
            (11_912_245, "11.9 ms"),
            (250_000_000, "250 ms"),
            (999_499_999, "999 ms"),
            (999_500_000, "1.00 s"),
            (43_020_412_836, "43.02 s"),
            (3_600_000_000_000, "3600.00 s"),
            (u64::MAX, "18446744073.71 s"),
        ];
        for (ns, want) in cases {
            assert_eq!(fmt_ns(ns), want, "{ns}");
        }
    }

    #[test]
    fn pids_paths_and_prefixes() {
        assert_eq!(pid_text(141, Some("pgbench")), "141 (pgbench)");
        assert_eq!(pid_text(141, None), "141");
        assert_eq!(pid_text(7, Some("a b")), "7 (a\\x20b)", "a comm cannot forge fields");
        assert!(under("/work/db", "/work") && under("/work", "/work/") && under("/work", "/"));
        assert!(!under("/workers", "/work") && !under("/wor", "/work"));
        assert_eq!(fit_path("/work/db", 10), "/work/db");
        assert_eq!(fit_path("/system.slice/nginx.service", 14), "nginx.service");
        assert_eq!(fit_path("/a/very/long/path/db", 8), "…path/db");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("chameleon-names-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn ino(p: &Path) -> u64 {
        std::fs::metadata(p).unwrap().ino()
    }

    #[test]
    fn cgroup_ids_are_directory_inodes_walked_lazily() {
        let root = scratch("cg");
        std::fs::create_dir_all(root.join("work/db")).unwrap();
        std::fs::write(root.join("work/cgroup.procs"), "").unwrap();
        let walked = walk_cgroups(&root);
        assert_eq!(walked[&ino(&root)], "/");
        assert_eq!(walked[&ino(&root.join("work/db"))], "/work/db");
        assert_eq!(walked.len(), 3, "directories only: {walked:?}");

        let mut names = CgroupNames::new(Some(root.clone()));
        let t0 = Instant::now();
        let db = ino(&root.join("work/db"));
        names.resolve(db, t0);
        assert_eq!((names.get(db), names.walks()), (Some("/work/db"), 1));
        names.resolve(db, t0 + REWALK * 5);
        assert_eq!(names.walks(), 1, "a hit does not walk");
        // A cgroup made later: a miss within REWALK of the last walk waits.
        std::fs::create_dir_all(root.join("web")).unwrap();
        let web = ino(&root.join("web"));
        names.resolve(web, t0 + REWALK / 2);
        assert_eq!((names.get(web), names.walks()), (None, 1));
        names.resolve(web, t0 + REWALK);
        assert_eq!((names.get(web), names.walks()), (Some("/web"), 2));
        let mut under_work = names.ids_under("/work");
        under_work.sort();
        let mut want = vec![ino(&root.join("work")), db];
        want.sort();
        assert_eq!(under_work, want);
        // Removed: the last name stays.
        std::fs::remove_dir(root.join("web")).unwrap();
        names.resolve(12345678, t0 + REWALK * 3);
        assert_eq!(names.get(web), Some("/web"));
        assert_eq!(CgroupNames::new(None).get(db), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn comms_come_from_proc_expire_and_outlive_their_task() {
        let proc = scratch("proc");
        std::fs::create_dir_all(proc.join("141")).unwrap();
        std::fs::write(proc.join("141/comm"), "pgbench\n").unwrap();
        assert_eq!(read_comm(&proc, 141).as_deref(), Some("pgbench"));
        assert_eq!(read_comm(&proc, 142), None);
        let mut c = Comms::new(Some(proc.clone()));
        let t0 = Instant::now();
        c.resolve(141, t0);
        assert_eq!(c.get(141), Some("pgbench"));
        // Renamed: seen once the cached one has expired.
        std::fs::write(proc.join("141/comm"), "postgres\n").unwrap();
        c.resolve(141, t0 + COMM_TTL / 2);
        assert_eq!(c.get(141), Some("pgbench"));
        c.resolve(141, t0 + COMM_TTL);
        assert_eq!(c.get(141), Some("postgres"));
        // Gone: keeps its last comm.
        std::fs::remove_dir_all(proc.join("141")).unwrap();
        c.resolve(141, t0 + COMM_TTL * 3);
        assert_eq!(c.get(141), Some("postgres"));
        c.learn(9, "spin", t0);
        assert_eq!(c.get(9), Some("spin"));
        for pid in 1000..(1000 + COMMS_KEPT as i32 + 10) {
            c.learn(pid, "x", t0 + Duration::from_secs(1));
        }
        assert_eq!(c.len(), COMMS_KEPT, "bounded");
        assert_eq!(c.get(9), None, "the oldest went first");
        std::fs::remove_dir_all(&proc).unwrap();
    }

    #[test]
    fn names_fall_back_to_numbers() {
        let n = Names::default();
        assert_eq!(n.pid(5), "5");
        assert_eq!(n.cgroup(54), "cgroup 54");
        assert_eq!(n.cgroup(0), "-");
    }
}
