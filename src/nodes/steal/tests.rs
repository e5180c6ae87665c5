use super::*;

/// 2 LLCs x 2 cores x 2 threads, siblings numbered n and n+4 as on many x86s.
fn machine() -> Vec<CpuPlace> {
    (0..8).map(|cpu| CpuPlace { cpu, core: cpu % 4, llc: (cpu % 4) / 2 }).collect()
}

#[test]
fn sibling_then_llc_then_the_rest() {
    let all = machine();
    let (o, near) = order(all[0], &all);
    assert_eq!(near, 1);
    assert_eq!(o[0], 4, "SMT sibling first");
    assert_eq!(&o[1..3], &[1, 5], "then the other core of the LLC, nearest id first");
    assert_eq!(&o[3..], &[2, 3, 6, 7], "then the other LLC");
    let (o, _) = order(all[6], &all);
    assert_eq!(o, vec![2, 7, 3, 5, 4, 1, 0]);
}

#[test]
fn every_other_cpu_once() {
    let all = machine();
    for &c in &all {
        let (mut o, _) = order(c, &all);
        o.sort();
        let want: Vec<usize> = (0..8).filter(|&x| x != c.cpu).collect();
        assert_eq!(o, want);
    }
}
