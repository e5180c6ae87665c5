use super::*;

fn set(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn settings_become_the_whole_tag() {
    let p = props(&set(&[("level", "2"), ("tax", "0.5"), ("prio", "high")])).unwrap();
    assert_eq!(p.level, 2);
    assert_eq!(p.tax, 50);
    assert_eq!(p.weight, 0, "unset settings keep the defaults");
    assert_eq!(props(&set(&[])).unwrap(), Props::default());
}

#[test]
fn a_bad_value_names_its_setting() {
    for (k, v, r) in [
        ("level", "9", Reason::Level),
        ("level", "one", Reason::Level),
        ("weight", "0", Reason::Weight),
        ("tax", "1.234", Reason::Tax),
        ("smt", "quad", Reason::Smt),
        ("prio", "urgent", Reason::Prio),
        ("colour", "red", Reason::UnknownKey),
    ] {
        let e = props(&set(&[("level", "1"), (k, v)])).unwrap_err();
        assert_eq!(e.reason, r, "{k}={v}: {e}");
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn only_the_plugins_refusals_are_counted() {
    let before = nri_rejected().get("smt").copied().unwrap_or(0);
    count(Via::Cli, Reason::Smt);
    count(Via::Nri, Reason::Smt);
    count(Via::Nri, Reason::Smt);
    assert_eq!(nri_rejected().get("smt").copied().unwrap_or(0), before + 2);
}

#[test]
fn a_missing_cgroup_is_refused_as_such() {
    let e = tag(Path::new("/nonexistent/cg"), &set(&[("level", "1")])).unwrap_err();
    assert_eq!(e.reason, Reason::Cgroup);
    assert!(!untag(Path::new("/nonexistent/cg")).unwrap());
}
