use super::*;

#[test]
fn the_filter_takes_an_id_or_a_path() {
    assert_eq!(Filter::parse("54"), Some(Filter::Id(54)));
    assert_eq!(Filter::parse("/work/"), Some(Filter::Path("/work".into())));
    assert_eq!(Filter::parse("work/db"), Some(Filter::Path("/work/db".into())));
    assert_eq!(Filter::parse("/"), Some(Filter::Path("/".into())));
    assert_eq!(Filter::parse("  "), None);
    let names = Names::default();
    assert!(Filter::Id(3).matches(3, &names.cgroups) && !Filter::Id(3).matches(4, &names.cgroups));
    assert!(!Filter::Path("/".into()).matches(3, &names.cgroups), "an unknown path is not kept");
    assert_eq!(Filter::Id(3).describe(&names), "cgroup id 3");
    assert_eq!(Filter::Path("/work".into()).describe(&names), "cgroups /work/*");
}

#[test]
fn tag_fields() {
    let t = "v1 level=1 weight=2 tax=auto smt=any";
    assert_eq!((tag_field(t, "level"), tag_field(t, "tax"), tag_field(t, "prio")), (Some("1"), Some("auto"), None));
}
