//! Host tests of the rules file: matching by each key, first match wins,
//! every error names file, line and field, and precedence (tag_source).

use crate::tags::rules::{Facts, RuleSet};
use crate::tags::tag::{parse_props, Prio, Props, Smt};
use crate::tags::source::{decide, Found, Source};
use std::path::{Path, PathBuf};

fn parse(text: &str) -> RuleSet {
    RuleSet::parse(Path::new("rules.toml"), text).unwrap_or_else(|e| panic!("{e:#}\n{text}"))
}

fn err(text: &str) -> String {
    match RuleSet::parse(Path::new("rules.toml"), text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => format!("{e:#}"),
    }
}

fn at(path: &str) -> Facts {
    Facts { path: path.into(), ..Default::default() }
}

fn with(path: &str, comms: &[&str], uids: &[u32]) -> Facts {
    Facts { path: path.into(), comms: comms.iter().map(|c| c.to_string()).collect(), uids: uids.to_vec(), delegated: false }
}

/// The name of the rule matching `f`, if any.
fn who(rules: &RuleSet, f: &Facts) -> Option<String> {
    rules.first_match(f).map(|r| r.label())
}

fn one(match_line: &str) -> RuleSet {
    parse(&format!("[[rule]]\nname = \"r\"\n{match_line}\nlevel = 1\n"))
}

#[test]
fn cgroup_glob_stays_within_a_component() {
    let r = one(r#"match.cgroup = "/system.slice/postgres*""#);
    assert!(r.first_match(&at("/system.slice/postgres.service")).is_some());
    assert!(r.first_match(&at("/system.slice/postgresql@16-main.service")).is_some());
    // Its children inherit the tag instead of matching themselves.
    assert!(r.first_match(&at("/system.slice/postgres.service/worker")).is_none());
    assert!(r.first_match(&at("/system.slice/nginx.service")).is_none());
    assert!(r.first_match(&at("/user.slice/postgres")).is_none());
    let r = one(r#"match.cgroup = "/machine.slice/**/vcpu*""#);
    assert!(r.first_match(&at("/machine.slice/qemu-1.scope/libvirt/vcpu0")).is_some());
    assert!(r.first_match(&at("/machine.slice/qemu-1.scope/libvirt/emulator")).is_none());
}

#[test]
fn prefix_regex_unit_slice() {
    let r = one(r#"match.cgroup_prefix = "/machine.slice/""#);
    assert!(r.first_match(&at("/machine.slice/vm1.scope")).is_some());
    assert!(r.first_match(&at("/machine.slice/vm1.scope/vcpu0")).is_some());
    assert!(r.first_match(&at("/machine.slice")).is_none(), "the slice itself: no trailing slash");

    let r = one(r#"match.cgroup_regex = "^/user.slice/user-[0-9]+\\.slice/.*\\.scope$""#);
    assert!(r.first_match(&at("/user.slice/user-1000.slice/session-2.scope")).is_some());
    assert!(r.first_match(&at("/user.slice/user-x.slice/session-2.scope")).is_none());

    let r = one(r#"match.unit = "postgres.service""#);
    assert!(r.first_match(&at("/system.slice/postgres.service")).is_some());
    assert!(r.first_match(&at("/postgres.service")).is_some(), "in the root slice");
    assert!(r.first_match(&at("/system.slice/postgres.service.d")).is_none());
    let r = one(r#"match.unit = "getty@*.service""#);
    assert!(r.first_match(&at("/system.slice/system-getty.slice/getty@tty1.service")).is_some());
    assert!(r.first_match(&at("/system.slice/getty@tty1.service/x")).is_none());

    let r = one(r#"match.slice = "db.slice""#);
    assert!(r.first_match(&at("/db.slice")).is_some());
    assert!(r.first_match(&at("/system.slice/db.slice")).is_some());
    assert!(r.first_match(&at("/system.slice/mydb.slice")).is_none());
}

/// A unit or a slice is the cgroup's own name where systemd places one:
/// directly in a slice (or at the root). Before, any component matched, so
/// every cgroup below a unit matched the rule itself (and a later, more
/// specific rule never got a say), and so did a cgroup that a service made
/// below itself with a unit's name.
#[test]
fn units_and_slices_are_the_cgroups_own_name_as_systemd_places_it() {
    let r = parse(
        r#"
[[rule]]
name = "pg"
match.unit = "postgres.service"
level = 2

[[rule]]
name = "worker"
match.cgroup = "/system.slice/postgres.service/worker"
level = 1

[[rule]]
name = "db"
match.slice = "db.slice"
level = 1
"#,
    );
    assert_eq!(who(&r, &at("/system.slice/postgres.service")).as_deref(), Some("\"pg\""));
    // Below the unit: not the unit (it inherits), so the later rule names it.
    assert_eq!(who(&r, &at("/system.slice/postgres.service/worker")).as_deref(), Some("\"worker\""));
    assert_eq!(who(&r, &at("/system.slice/postgres.service/other")), None);
    // A service's own sub-cgroup named like a unit is no unit.
    assert_eq!(who(&r, &at("/system.slice/app.service/postgres.service")), None);
    // Below a slice: its units inherit the slice's tag, they do not match it.
    assert_eq!(who(&r, &at("/db.slice/x.service")), None);
    assert_eq!(who(&r, &at("/db.slice/x.service/db.slice")), None);
    assert_eq!(who(&r, &at("/a.slice/db.slice")).as_deref(), Some("\"db\""));
}

fn delegated(path: &str) -> Facts {
    Facts { delegated: true, ..at(path) }
}

/// `systemd-run --user -u postgres.service` puts the user's process at
/// USER_PG below its own user@1000.service (owned by uid 1000, as systemd
/// delegates it). Before, `match.unit = "postgres.service"` gave it the
/// system database's level and priority.
#[test]
fn rules_hold_in_delegated_cgroups_only_when_they_say_so() {
    const USER_PG: &str = "/user.slice/user-1000.slice/user@1000.service/app.slice/postgres.service";
    let r = parse("[[rule]]\nname = \"pg\"\nmatch.unit = \"postgres.service\"\nlevel = 2\nprio = \"high\"\n");
    assert!(r.first_match(&at("/system.slice/postgres.service")).is_some());
    assert!(r.first_match(&delegated(USER_PG)).is_none(), "a delegatee named its cgroup after the rule's unit");
    assert_eq!(r.held_back(&delegated(USER_PG)).map(|r| r.label()).as_deref(), Some("\"pg\""));
    assert!(r.held_back(&at(USER_PG)).is_none(), "not delegated: nothing held back");
    assert!(!r.rules[0].delegated);
    // Every kind of key: the delegatee chooses the paths and the processes.
    for m in [
        r#"match.cgroup = "/user.slice/**/postgres.service""#,
        r#"match.cgroup_prefix = "/user.slice/""#,
        r#"match.cgroup_regex = "postgres""#,
        "match.uid = 1000",
    ] {
        let r = one(m);
        let f = Facts { uids: vec![1000], ..delegated(USER_PG.trim_end_matches("/postgres.service")) };
        let f = if m.contains("postgres") { Facts { path: USER_PG.into(), ..f } } else { f };
        assert!(r.first_match(&f).is_none(), "{m}");
        assert!(r.first_match(&Facts { delegated: false, ..f.clone() }).is_some(), "{m}: matches when not delegated");
    }
    // Said explicitly: it applies there too.
    let r = parse("[[rule]]\nname = \"pg\"\nmatch.unit = \"postgres.service\"\ndelegated = true\nlevel = 2\n");
    assert!(r.rules[0].delegated);
    assert!(r.first_match(&delegated(USER_PG)).is_some());
    assert!(r.first_match(&at("/system.slice/postgres.service")).is_some());
    // The first rule that holds wins, delegated ones skipped.
    let r = parse(
        "[[rule]]\nname = \"sys\"\nmatch.unit = \"*.service\"\nlevel = 2\n\n[[rule]]\nname = \"users\"\nmatch.cgroup_prefix = \"/user.slice/\"\ndelegated = true\ntax = 100\n",
    );
    assert_eq!(who(&r, &delegated(USER_PG)).as_deref(), Some("\"users\""));
    assert_eq!(who(&r, &at("/system.slice/x.service")).as_deref(), Some("\"sys\""));
}

#[test]
fn delegated_is_validated() {
    let e = err("[[rule]]\nname = \"x\"\nmatch.unit = \"a.service\"\ndelegated = \"yes\"\n");
    assert_eq!(e, "rules.toml:4: rule \"x\": delegated: expected true or false (whether the rule applies inside delegated cgroups), got a string");
    let e = err("[[rule]]\nname = \"x\"\nmatch.unit = \"a.service\"\ndelegated = 1\n");
    assert!(e.ends_with("got an integer"), "{e}");
    // A comm anchored by a path no longer holds inside a delegated subtree.
    let e = err("[[rule]]\nname = \"x\"\nmatch.unit = \"a.service\"\nmatch.comm = \"pg\"\ndelegated = true\n");
    assert_eq!(e, "rules.toml:4: rule \"x\": match.comm with delegated = true needs match.uid (inside a delegated cgroup its owner names the cgroups, and any process may rename itself)");
    let r = parse("[[rule]]\nmatch.unit = \"a.service\"\nmatch.comm = \"pg\"\nmatch.uid = 1000\ndelegated = true\n");
    assert!(r.rules[0].delegated);
    assert!(!parse("[[rule]]\nmatch.unit = \"a.service\"\ndelegated = false\n").rules[0].delegated);
}

#[test]
fn comm_and_uid_look_at_every_process() {
    let r = one("match.comm = \"postgres\"\nmatch.uid = 70");
    assert!(r.first_match(&with("/a", &["postgres"], &[70])).is_some());
    assert!(r.first_match(&with("/a", &["postgres2"], &[70])).is_none(), "exact");
    assert!(r.first_match(&at("/postgres")).is_none(), "the path is not a comm; no process, no match");
    assert!(r.needs_procs());
    let r = one("match.comm = \"kworker/*\"\nmatch.uid = 0");
    assert!(r.first_match(&with("/a", &["kworker/0:1"], &[0])).is_some(), "a comm glob crosses '/'");
    let r = one("match.uid = 1000");
    assert!(r.first_match(&with("/a", &[], &[1000])).is_some());
    assert!(r.first_match(&with("/a", &[], &[0])).is_none());
    assert!(r.first_match(&with("/a", &[], &[])).is_none(), "an empty cgroup has no uid");
    // Path keys alone never need /proc.
    assert!(!one(r#"match.slice = "db.slice""#).needs_procs());
}

/// A process may rename itself (prctl PR_SET_NAME) and may join a cgroup it
/// shares with others: neither may tag a cgroup. Process keys hold for a
/// cgroup only when every process in it matches, and a comm needs an anchor
/// its processes cannot forge (a uid, a path).
#[test]
fn a_renamed_process_gains_nothing() {
    let r = one("match.comm = \"pgwork\"\nmatch.uid = 0");
    // An unprivileged process renamed into the rule's comm, beside a root one.
    assert!(r.first_match(&with("/shared", &["pgwork", "spin"], &[0, 1000])).is_none());
    // Alone: its uid gives it away.
    assert!(r.first_match(&with("/mine", &["pgwork"], &[1000])).is_none());
    // The real thing: every process is pgwork, as root.
    assert!(r.first_match(&with("/db", &["pgwork"], &[0])).is_some());
    // A uid rule: one process of another uid in the cgroup is enough to stop it.
    let r = one("match.uid = 1000");
    assert!(r.first_match(&with("/s", &[], &[0, 1000])).is_none());
    // A comm alone, which anyone can take, is refused.
    let e = err("[[rule]]\nname = \"x\"\nmatch.comm = \"pgwork\"\nlevel = 1\n");
    assert!(
        e.starts_with("rules.toml:3: rule \"x\": match.comm alone can be spoofed (any process may rename itself: prctl PR_SET_NAME); add match.uid or a path key"),
        "{e}"
    );
    // With a path key it is scoped to where only the administrator puts processes.
    assert!(one("match.comm = \"pgwork\"\nmatch.unit = \"pg.service\"").first_match(&with("/system.slice/pg.service", &["pgwork"], &[70])).is_some());
}

#[test]
fn the_first_matching_rule_wins() {
    let r = parse(
        r#"
[[rule]]
name = "db"
match.slice = "db.slice"
level = 2

[[rule]]
match = { comm = "postgres", uid = 70 }
level = 1
tax = 0.5

[[rule]]
name = "rest"
match.cgroup_prefix = "/"
smt = "smt"
"#,
    );
    // Both the slice and the processes hold: the first rule wins.
    assert_eq!(who(&r, &with("/db.slice", &["postgres"], &[70])).as_deref(), Some("\"db\""));
    let pg = r.first_match(&with("/system.slice/pg.service", &["postgres"], &[70])).unwrap();
    assert_eq!((pg.label().as_str(), pg.index, pg.line), ("#2", 2, 7), "unnamed: its position");
    assert_eq!(pg.props, Props { level: 1, tax: 50, ..Props::default() });
    assert_eq!(who(&r, &at("/other")).as_deref(), Some("\"rest\""));
    assert_eq!(r.rules[0].line, 2);
    assert_eq!(r.rules[2].line, 12);
    assert_eq!(r.source(&r.rules[0]).to_string(), "rule \"db\" (rules.toml:2)");
}

#[test]
fn values_are_what_the_tag_command_accepts() {
    let r = parse(
        r#"
[[rule]]
match.cgroup = "/a"
level = 2
weight = 200
tax = 1.5
smt = "uni"
prio = "high"

[[rule]]
match.cgroup = "/b"
tax = "auto"

[[rule]]
match.cgroup = "/c"
tax = 0.01
level = "3"

[[rule]]
match.cgroup = "/d"
"#,
    );
    let want = parse_props("level:2,weight:200,tax:1.5,smt:uni,prio:high").unwrap();
    assert_eq!(r.rules[0].props, want);
    assert_eq!((want.smt, want.prio, want.tax), (Smt::Uni, Prio::High, 150));
    assert!(r.rules[1].props.auto_tax());
    assert_eq!((r.rules[2].props.tax, r.rules[2].props.level), (1, 3));
    assert_eq!(r.rules[3].props, Props::default(), "no property: the defaults, as `tag` with no flag");
    // An empty file (or one with only comments): no rules.
    assert!(parse("# nothing yet\n").is_empty());
}

#[test]
fn bad_values_name_file_line_rule_and_field() {
    let base = "[[rule]]\nname = \"database\"\nmatch.cgroup = \"/db\"\n";
    let cases = [
        ("level = 5", "rules.toml:4: rule \"database\": level \"5\": expected an integer 1..=3"),
        ("level = 0", "rules.toml:4: rule \"database\": level \"0\""),
        ("weight = 0", "rules.toml:4: rule \"database\": weight \"0\": expected an integer 1..=10000"),
        ("weight = 1.5", "rules.toml:4: rule \"database\": weight \"1.5\""),
        ("tax = 200", "rules.toml:4: rule \"database\": tax \"200\": expected a number from 0.01 to 100"),
        ("tax = nan", "rules.toml:4: rule \"database\": tax \"NaN\""),
        ("tax = \"Auto\"", "rules.toml:4: rule \"database\": tax \"Auto\""),
        ("tax = true", "rules.toml:4: rule \"database\": tax: expected a number or a string, got a boolean"),
        ("smt = \"half\"", "rules.toml:4: rule \"database\": smt \"half\": expected uni, smt, kwork or any"),
        ("prio = \"urgent\"", "rules.toml:4: rule \"database\": prio \"urgent\": expected high or normal"),
        ("level = [1]", "rules.toml:4: rule \"database\": level: expected a number or a string, got an array"),
    ];
    for (line, want) in cases {
        let e = err(&format!("{base}{line}\n"));
        assert!(e.contains(want), "{line}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    // Unnamed: its position.
    let e = err("[[rule]]\nmatch.cgroup = \"/a\"\n\n[[rule]]\nmatch.cgroup = \"/b\"\nlevel = 9\n");
    assert!(e.starts_with("rules.toml:6: rule #2: level \"9\""), "{e}");
    let e = err("[[rule]]\nname = 7\nmatch.cgroup = \"/a\"\n");
    assert!(e.starts_with("rules.toml:2: rule #1: name: expected a string, got an integer"), "{e}");
}

#[test]
fn bad_matches_name_file_line_and_field() {
    let rule = |m: &str| format!("[[rule]]\nname = \"x\"\n{m}\n");
    let cases = [
        (r#"match.cgroup = "/a/[b""#, "rules.toml:3: rule \"x\": match.cgroup: bad glob \"/a/[b\": unclosed character class"),
        (r#"match.cgroup_regex = "^/a/(""#, "rules.toml:3: rule \"x\": match.cgroup_regex: bad regex \"^/a/(\": unclosed group"),
        (r#"match.cgroup = "system.slice/x""#, "rules.toml:3: rule \"x\": match.cgroup: \"system.slice/x\" must start with /"),
        (r#"match.cgroup_prefix = "/sys/fs/cgroup/db.slice""#, "match.cgroup_prefix: \"/sys/fs/cgroup/db.slice\": write the path relative to /sys/fs/cgroup (\"/db.slice\")"),
        (r#"match.unit = "postgres""#, "rules.toml:3: rule \"x\": match.unit: \"postgres\" is not a systemd unit name"),
        (r#"match.slice = "a/b.slice""#, "rules.toml:3: rule \"x\": match.slice: \"a/b.slice\" is not a slice name"),
        ("match.comm = \"postgres-checkpointer\"\nmatch.uid = 70", "match.comm: \"postgres-checkpointer\" is longer than 15 characters, which the kernel keeps of a name (write \"postgres-checkp\")"),
        ("match.comm = \"a[\"\nmatch.uid = 70", "rules.toml:3: rule \"x\": match.comm: bad glob"),
        ("match.uid = -1", "rules.toml:3: rule \"x\": match.uid: -1 is out of range 0..=4294967295"),
        ("match.uid = \"root\"", "rules.toml:3: rule \"x\": match.uid: expected an integer uid, got a string"),
        ("match.cgroup = 5", "rules.toml:3: rule \"x\": match.cgroup: expected a string, got an integer"),
        (r#"match.cgroup = """#, "rules.toml:3: rule \"x\": match.cgroup: empty"),
    ];
    for (m, want) in cases {
        let e = err(&rule(m));
        assert!(e.contains(want), "{m}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let e = err("[[rule]]\nname = \"x\"\nlevel = 1\n");
    assert!(e.starts_with("rules.toml:1: rule \"x\": match: missing; give at least one of match.cgroup"), "{e}");
}

#[test]
fn unknown_keys_and_syntax_errors_are_refused_with_their_line() {
    let e = err("[[rule]]\nmatch.cgroup = \"/a\"\nlevle = 2\n");
    assert!(e.starts_with("rules.toml:3: ") && e.contains("unknown field `levle`"), "{e}");
    let e = err("[[rule]]\nmatch.cgroup = \"/a\"\nmatch.path = \"/b\"\n");
    assert!(e.starts_with("rules.toml:3: ") && e.contains("unknown field `path`"), "{e}");
    let e = err("# rules\n[[rules]]\nmatch.cgroup = \"/a\"\n");
    assert!(e.starts_with("rules.toml:2: ") && e.contains("unknown field `rules`"), "{e}");
    let e = err("[[rule]]\nmatch = \"/a\"\n");
    assert!(e.starts_with("rules.toml:2: ") && e.contains("expected match: a table of conditions"), "{e}");
    let e = err("[[rule]]\nmatch.cgroup = \"/a\"\nlevel = \n");
    assert!(e.starts_with("rules.toml:3: "), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn levels_no_node_can_form_are_refused_at_their_line() {
    let r = parse("[[rule]]\nname = \"big\"\nmatch.cgroup = \"/a\"\n\nlevel = 3\n");
    r.check_levels(8).unwrap();
    let e = format!("{:#}", r.check_levels(4).unwrap_err());
    assert_eq!(e, "rules.toml:5: rule \"big\": level 3: needs 8 CPUs in one node, the largest node here has 4 (level at most 2)");
}

#[test]
fn a_missing_file_is_named() {
    let e = format!("{:#}", RuleSet::load(Path::new("/nonexistent/rules.toml")).unwrap_err());
    assert!(e.starts_with("rules file /nonexistent/rules.toml: "), "{e}");
}

fn found(flag: Option<Props>, stored: Result<Option<Props>, String>, rule: Option<Props>, parent: Option<Props>) -> Found {
    let src = Source::Rule { name: "\"r\"".into(), file: "rules.toml".into(), line: 1 };
    Found { flag, stored, rule: rule.map(|p| (p, src)), inherited: parent.map(|p| (p, PathBuf::from("/sys/fs/cgroup/up"))) }
}

#[test]
fn explicit_tags_beat_rules_which_beat_the_parent() {
    let p = |level| Props { level, ..Props::default() };
    // --tag beats the stored tag beats a rule.
    let d = decide(found(Some(p(3)), Ok(Some(p(2))), Some(p(1)), None));
    assert_eq!((d.effective, d.source), (Some(p(3)), Some(Source::Flag)));
    let d = decide(found(None, Ok(Some(p(2))), Some(p(1)), Some(p(3))));
    assert_eq!((d.own, d.effective, d.source), (Some(p(2)), Some(p(2)), Some(Source::Stored)));
    // A rule beats the parent's tag (the nearest own tag wins).
    let d = decide(found(None, Ok(None), Some(p(1)), Some(p(3))));
    assert_eq!(d.effective, Some(p(1)));
    assert_eq!(d.source.unwrap().to_string(), "rule \"r\" (rules.toml:1)");
    // Nothing of its own: the parent's, and from where.
    let d = decide(found(None, Ok(None), None, Some(p(3))));
    assert_eq!((d.own, d.effective), (None, Some(p(3))));
    assert_eq!(d.source.unwrap().to_string(), "inherited from /sys/fs/cgroup/up");
    // A damaged stored tag: no tag, not the rule's, not the parent's.
    let d = decide(found(None, Err("bad".into()), Some(p(1)), Some(p(3))));
    assert_eq!((d.own, d.effective), (None, None));
    assert_eq!(d.source.unwrap().to_string(), "DAMAGED, no tag in force: bad");
    let d = decide(found(None, Ok(None), None, None));
    assert_eq!((d.effective, d.source), (None, None));
}

#[test]
fn listed_lines() {
    use crate::tags::source::Listed;
    let l = Listed { path: "/sys/fs/cgroup/db".into(), id: 7, tag: Some("v1 level=2 tax=1.00 smt=any".into()), source: Source::Stored };
    assert_eq!(l.to_string(), "/sys/fs/cgroup/db (cgroup 7): v1 level=2 tax=1.00 smt=any (stored)");
    let json = serde_json::to_string(&l).unwrap();
    assert_eq!(serde_json::from_str::<Listed>(&json).unwrap(), l);
    assert!(json.contains(r#""source":{"kind":"stored"}"#), "{json}");
    let l = Listed { tag: None, source: Source::Damaged { error: "why".into() }, ..l };
    assert_eq!(l.to_string(), "/sys/fs/cgroup/db (cgroup 7): DAMAGED, no tag in force: why");
    assert_eq!(Source::Flag.to_string(), "--tag");
}

