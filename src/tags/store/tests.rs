//! The scan over a tree of directories (a temporary one: the filesystem
//! check is `Tree::open`'s parameter): delegated subtrees, found by their
//! owners, take no rule unless it says `delegated = true`.

use super::*;
use crate::tags::rules::RuleSet;
use std::os::unix::fs::PermissionsExt;

const USER: &str = "user.slice/user-1000.slice/user@1000.service";

/// A cgroup-like tree: the system's postgres.service, and a user's, below
/// its user@1000.service owned by uid 1000 (as systemd delegates it), plus
/// directories delegated by group and world write.
fn fixture(name: &str) -> Option<PathBuf> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: cannot chown, delegated trees not tested");
        return None;
    }
    let base = std::env::temp_dir().join(format!("chameleon-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for d in ["system.slice/postgres.service", &format!("{USER}/app.slice/postgres.service"), "grp.slice/postgres.service", "all.slice/postgres.service", "root-grp.slice/postgres.service"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
        // Whatever the umask: only what each case sets below is writable.
        let mut p = base.clone();
        for c in Path::new(d).components() {
            p.push(c);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    for d in [USER.to_string(), format!("{USER}/app.slice"), format!("{USER}/app.slice/postgres.service")] {
        std::os::unix::fs::chown(base.join(d), Some(1000), Some(1000)).unwrap();
    }
    std::os::unix::fs::chown(base.join("grp.slice"), Some(0), Some(1000)).unwrap();
    std::fs::set_permissions(base.join("grp.slice"), std::fs::Permissions::from_mode(0o775)).unwrap();
    std::fs::set_permissions(base.join("all.slice"), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(base.join("root-grp.slice"), std::fs::Permissions::from_mode(0o775)).unwrap();
    Some(base)
}

fn scan_with(base: &Path, rules: &str) -> Vec<Entry> {
    let tree = Tree::open(base, None).unwrap();
    let rules = RuleSet::parse(Path::new("rules.toml"), rules).unwrap();
    scan_tree(&tree, &[], Some(&rules), &mut RuleMatches { fresh: true, ..Default::default() }).unwrap()
}

fn entry<'a>(entries: &'a [Entry], base: &Path, rel: &str) -> &'a Entry {
    let p = base.join(rel);
    entries.iter().find(|e| e.path == p).unwrap_or_else(|| panic!("{rel} not scanned"))
}

const PG: &str = "[[rule]]\nname = \"pg\"\nmatch.unit = \"postgres.service\"\nlevel = 2\nprio = \"high\"\n";

#[test]
fn a_delegated_user_cannot_claim_a_rule_by_naming_its_cgroup() {
    let Some(base) = fixture("claim") else { return };
    let entries = scan_with(&base, PG);
    let sys = entry(&entries, &base, "system.slice/postgres.service");
    assert_eq!(sys.own.map(|p| p.level), Some(2), "the system's unit keeps its rule");
    let user_pg = format!("{USER}/app.slice/postgres.service");
    for rel in [user_pg.as_str(), "grp.slice/postgres.service", "all.slice/postgres.service"] {
        let e = entry(&entries, &base, rel);
        assert_eq!((e.own, e.effective, &e.source), (None, None, &None), "{rel}: a delegated cgroup took the rule");
    }
    let e = entry(&entries, &base, &user_pg);
    assert_eq!(
        e.warnings,
        vec![format!(
            "rule \"pg\" (rules.toml:1) does not apply to {}: it lies in delegated {} (owned by uid 1000); add delegated = true to the rule to apply it there",
            base.join(&user_pg).display(),
            base.join(USER).display()
        )]
    );
    assert!(entry(&entries, &base, "grp.slice/postgres.service").warnings[0].contains("(writable by group 1000)"));
    assert!(entry(&entries, &base, "all.slice/postgres.service").warnings[0].contains("(writable by every user)"));
    // Group write by group 0 delegates nothing.
    assert_eq!(entry(&entries, &base, "root-grp.slice/postgres.service").own.map(|p| p.level), Some(2));
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn delegated_true_and_inherited_tags_reach_into_the_subtree() {
    let Some(base) = fixture("explicit") else { return };
    let user_pg = format!("{USER}/app.slice/postgres.service");
    let entries = scan_with(&base, &format!("{PG}delegated = true\n"));
    let e = entry(&entries, &base, &user_pg);
    assert_eq!((e.own.map(|p| p.level), e.warnings.len()), (Some(2), 0), "said explicitly");
    // A tag on a cgroup above the subtree is the administrator's, for all of it.
    let entries = scan_with(&base, "[[rule]]\nmatch.cgroup = \"/user.slice/user-1000.slice\"\nlevel = 1\n");
    let e = entry(&entries, &base, &user_pg);
    assert_eq!((e.own, e.effective.map(|p| p.level)), (None, Some(1)));
    assert_eq!(e.source, Some(Source::Inherited { from: base.join("user.slice/user-1000.slice") }));
    std::fs::remove_dir_all(&base).unwrap();
}

/// The scan opens each directory beneath its parent and follows no link:
/// a link in the tree to a directory elsewhere is not scanned.
#[test]
fn the_scan_follows_no_link() {
    let Some(base) = fixture("links") else { return };
    let elsewhere = std::env::temp_dir().join(format!("chameleon-store-elsewhere-{}", std::process::id()));
    std::fs::create_dir_all(elsewhere.join("postgres.service")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, base.join("system.slice/link.slice")).unwrap();
    let entries = scan_with(&base, PG);
    assert!(entries.iter().all(|e| !e.path.starts_with(base.join("system.slice/link.slice"))), "followed a link");
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::remove_dir_all(&elsewhere).unwrap();
}
