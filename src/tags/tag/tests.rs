use super::*;

#[test]
fn tax_range_and_precision() {
    assert_eq!(parse_tax("0.01").unwrap(), 1);
    assert_eq!(parse_tax("1").unwrap(), 100);
    assert_eq!(parse_tax("1.5").unwrap(), 150);
    assert_eq!(parse_tax(".25").unwrap(), 25);
    assert_eq!(parse_tax("100").unwrap(), 10_000);
    for bad in ["0", "0.001", "100.01", "1e2", "-1", "", ".", "abc", "1.2.3", "999999"] {
        assert!(parse_tax(bad).is_err(), "{bad} accepted");
    }
}

fn err(r: Result<Props>) -> String {
    format!("{:#}", r.unwrap_err())
}

#[test]
fn every_bad_value_names_its_field_and_range() {
    assert!(err(parse_props("level:4")).contains("level \"4\": expected an integer 1..=3"));
    assert!(err(parse_props("level:x")).contains("level \"x\""));
    assert!(err(parse_props("weight:0")).contains("weight \"0\": expected an integer 1..=10000"));
    assert!(err(parse_props("weight:1e3")).contains("weight"));
    assert!(err(parse_props("tax:NaN")).contains("tax \"NaN\": expected a number from 0.01 to 100"));
    assert!(err(parse_props("tax:inf")).contains("tax \"inf\""));
    assert!(err(parse_props("tax:200")).contains("tax \"200\""));
    assert!(err(parse_props("smt:half")).contains("smt \"half\": expected uni, smt, kwork or any"));
    assert!(err(parse_props("speed:9")).contains("unknown property \"speed\""));
    assert!(err(parse_props("prio:urgent")).contains("prio \"urgent\": expected high or normal"));
    assert!(err(parse_props("prio:")).contains("prio \"\""));
}

#[test]
fn prio_is_stored_only_when_high() {
    assert_eq!(parse_props("level:1").unwrap().prio, Prio::Normal);
    let p = parse_props("level:1,prio:normal").unwrap();
    assert_eq!(p.encode(), "v1 level=1 tax=1.00 smt=any", "normal reads as before prio existed");
    let p = parse_props("level:2,prio:high").unwrap();
    assert_eq!(p.prio, Prio::High);
    assert_eq!(p.encode(), "v1 level=2 tax=1.00 smt=any prio=high");
    assert_eq!(Props::decode(&p.encode()).unwrap(), p);
    assert_eq!(Props::from_bpf(&p.to_bpf()).unwrap(), p);
    assert_eq!(p.to_bpf().prio, crate::bpf_intf::chameleon_prio_CHAMELEON_PRIO_HIGH);
    assert!(Props::decode("v1 level=1 prio=top").is_err());
    let mut bad = p.to_bpf();
    bad.prio = 7;
    assert!(format!("{:#}", Props::from_bpf(&bad).unwrap_err()).contains("prio 7"));
    let t = parse_tag("seq=level:1,prio:high").unwrap();
    assert_eq!(t.props.prio, Prio::High);
}

#[test]
fn stored_form_round_trips_and_is_validated() {
    let p = Props { level: 2, weight: 7, tax: 1, smt: Smt::Uni, prio: Prio::Normal };
    assert_eq!(p.encode(), "v1 level=2 weight=7 tax=0.01 smt=uni");
    assert_eq!(Props::decode(&p.encode()).unwrap(), p);
    assert!(Props::decode("v2 level=1").is_err(), "unknown version");
    assert!(Props::decode("v1 level=9").is_err(), "bad value");
    assert!(Props::decode("v1 level").is_err(), "not key=value");
}

#[test]
fn cli_values_are_checked_as_props_are() {
    assert_eq!(arg::level("2"), Ok(2));
    assert_eq!(arg::tax("auto"), Ok(TAX_AUTO));
    assert_eq!(arg::tax("0.5"), Ok(50));
    assert_eq!(arg::smt("uni"), Ok(Smt::Uni));
    assert_eq!(arg::prio("high"), Ok(Prio::High));
    let set_err = |k: &str, v: &str| format!("{:#}", Props::default().set(k, v).unwrap_err());
    assert_eq!(arg::level("5").unwrap_err(), set_err("level", "5"));
    assert_eq!(arg::weight("0").unwrap_err(), set_err("weight", "0"));
    assert_eq!(arg::tax("NaN").unwrap_err(), set_err("tax", "NaN"));
    assert_eq!(arg::smt("half").unwrap_err(), set_err("smt", "half"));
    assert!(arg::prio("urgent").is_err());
}

#[test]
fn props_defaults_and_errors() {
    assert_eq!(parse_props("").unwrap(), Props::default());
    let p = parse_props("level:2,weight:3,tax:0.01").unwrap();
    assert_eq!(p, Props { level: 2, weight: 3, tax: 1, smt: Smt::Any, prio: Prio::Normal });
    // No weight given: the cgroup's cpu.weight decides, and none is stored.
    let p = parse_props("level:2").unwrap();
    assert_eq!(p.weight, 0);
    assert_eq!(p.encode(), "v1 level=2 tax=1.00 smt=any");
    assert_eq!(Props::decode(&p.encode()).unwrap(), p);
    assert_eq!(Props::from_bpf(&p.to_bpf()).unwrap(), p);
    assert!(parse_props("level:0").is_err());
    assert!(parse_props("level:4").is_err());
    assert!(parse_props("weight:0").is_err());
    assert!(parse_props("weight:10001").is_err());
    assert!(parse_props("speed:9").is_err());
    assert!(parse_props("level").is_err());
}

#[test]
fn auto_tax_everywhere_a_tax_goes() {
    // --tag CG=...,tax:auto, `tag --tax auto` (Props::set) and the stored form.
    let p = parse_props("level:1,tax:auto").unwrap();
    assert!(p.auto_tax());
    assert_eq!(p.encode(), "v1 level=1 tax=auto smt=any");
    assert_eq!(Props::decode(&p.encode()).unwrap(), p);
    assert_eq!(parse_tag("seq=tax:auto").unwrap().props.tax, TAX_AUTO);
    // To BPF as 0 and back; a fixed tax never reads as auto.
    assert_eq!(p.to_bpf().tax, 0);
    assert_eq!(Props::from_bpf(&p.to_bpf()).unwrap(), p);
    assert!(!parse_props("tax:0.01").unwrap().auto_tax());
    // A fixed tax replaces auto and back.
    let mut q = p;
    q.set("tax", "2").unwrap();
    assert_eq!(q.tax, 200);
    q.set("tax", "auto").unwrap();
    assert!(q.auto_tax());
    // Tags stored before auto still decode as they did.
    let old = Props::decode("v1 level=2 weight=3 tax=0.50 smt=uni").unwrap();
    assert_eq!(old, Props { level: 2, weight: 3, tax: 50, smt: Smt::Uni, prio: Prio::Normal });
    // Near misses are refused, naming the field and both kinds of value.
    for bad in ["Auto", "automatic", "auto1", "0", "0.00"] {
        let e = err(parse_props(&format!("tax:{bad}")));
        assert!(e.contains(&format!("tax {bad:?}: expected a number from 0.01 to 100")) && e.contains("or auto"), "{bad}: {e}");
    }
    assert!(Props::decode("v1 level=1 tax=AUTO").is_err());
}

#[test]
fn tag_paths() {
    for root in ["/sys/fs/cgroup=level:1", "/sys/fs/cgroup/=tax:1", ".=level:1"] {
        let e = format!("{:#}", parse_tag(root).unwrap_err());
        assert!(e.contains("root cgroup cannot be tagged"), "{root}: {e}");
    }
    let t = parse_tag("seq=level:1").unwrap();
    assert_eq!(t.path, Path::new("/sys/fs/cgroup/seq"));
    let t = parse_tag("/sys/fs/cgroup/a/b=tax:100").unwrap();
    assert_eq!(t.path, Path::new("/sys/fs/cgroup/a/b"));
    assert_eq!(t.props.tax, 10_000);
    assert!(parse_tag("level:1").is_err());
    assert!(parse_tag("=level:1").is_err());
}

#[test]
fn claim_from_weight_or_cpu_weight() {
    // An explicit weight W claims as cpu.weight W * 100 would.
    assert_eq!(claim(1, Some(300)), 100);
    assert_eq!(claim(3, None), 300);
    assert_eq!(claim(10_000, None), 1_000_000);
    // Without one, the cgroup's cpu.weight (CPUWeight=); 100 without the controller.
    assert_eq!(claim(0, Some(300)), 300);
    assert_eq!(claim(0, Some(1)), 1);
    assert_eq!(claim(0, None), 100);
    // A value the kernel never gives is not trusted.
    assert_eq!(claim(0, Some(0)), 100);
    assert_eq!(claim(0, Some(20_000)), 100);
}
