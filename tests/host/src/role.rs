//! The CPU role state machine (bpf/role.h), exactly the code the policy
//! runs: every edge of the written machine and no other, and every
//! interleaving of concurrent fuses, splits and parks on a small machine,
//! checked for the invariants the policy relies on (issue 29).

use std::collections::HashSet;

use chameleon::bpf_intf::{
    chameleon_role_CHAMELEON_ROLE_FUSING as FUSING, chameleon_role_CHAMELEON_ROLE_LENT as LENT,
    chameleon_role_CHAMELEON_ROLE_NATIVE as NATIVE, chameleon_role_CHAMELEON_ROLE_PARKED as PARKED,
    chameleon_role_CHAMELEON_ROLE_REP as REP, chameleon_role_CHAMELEON_ROLE_SPLITTING as SPLITTING,
};

extern "C" {
    fn host_role_step(old: u32, ev: u32, arg: i32) -> u32;
    fn host_role_lent(rep: i32) -> u32;
    fn host_role_with(word: u32) -> i32;
    fn host_role_lent_ok(word: u32, rep_word: u32) -> i32;
}

// enum chameleon_role_event (role.h).
const FUSE_BEGIN: u32 = 0;
const FUSE_DONE: u32 = 1;
const FUSE_ABORT: u32 = 2;
const LEND: u32 = 3;
const GIVE_BACK: u32 = 4;
const SPLIT_BEGIN: u32 = 5;
const SPLIT_DONE: u32 = 6;
const PARK: u32 = 7;
const UNPARK: u32 = 8;
const INVALID: u32 = u32::MAX;

fn step(old: u32, ev: u32, arg: i32) -> u32 {
    // SAFETY: pure function of its arguments (bpf/role.h).
    unsafe { host_role_step(old, ev, arg) }
}
fn lent(rep: i32) -> u32 {
    // SAFETY: pure.
    unsafe { host_role_lent(rep) }
}
fn kind(w: u32) -> u32 {
    w & ((1 << chameleon::bpf_intf::chameleon_consts_CHAMELEON_ROLE_SHIFT) - 1)
}
fn lent_ok(w: u32, rep_word: u32) -> bool {
    // SAFETY: pure.
    unsafe { host_role_lent_ok(w, rep_word) != 0 }
}

/// Every word a CPU of a machine of `n` CPUs can hold.
fn words(n: i32) -> Vec<u32> {
    let mut v = vec![NATIVE, FUSING, REP, SPLITTING, PARKED];
    v.extend((0..n).map(lent));
    v
}

/// The edges of the machine drawn in role.h, and nothing else: for every
/// word and event, the step is exactly the documented one, and a step never
/// returns the word it started from (so of two CPUs racing from one read,
/// the CAS of the second always fails).
#[test]
fn role_steps_are_exactly_the_written_machine() {
    let n = 4;
    for &w in &words(n) {
        for ev in 0..=UNPARK {
            for arg in -1..=n {
                let want = match (ev, w) {
                    (FUSE_BEGIN, NATIVE) => FUSING,
                    (FUSE_DONE, FUSING) => REP,
                    (FUSE_ABORT, FUSING) => NATIVE,
                    (LEND, NATIVE) if arg >= 0 => lent(arg),
                    (GIVE_BACK, _) if arg >= 0 && w == lent(arg) => NATIVE,
                    (SPLIT_BEGIN, REP) => SPLITTING,
                    (SPLIT_DONE, SPLITTING) => NATIVE,
                    (PARK, NATIVE) => PARKED,
                    (UNPARK, PARKED) => NATIVE,
                    _ => INVALID,
                };
                let got = step(w, ev, arg);
                assert_eq!(got, want, "word {w:#x} event {ev} arg {arg}");
                assert_ne!(got, w, "a step that keeps the word would let two CAS win");
            }
        }
    }
    // The representative a LENT word names, and nothing for the others.
    for r in 0..n {
        // SAFETY: pure.
        assert_eq!(unsafe { host_role_with(lent(r)) }, r);
        assert_eq!(kind(lent(r)), LENT);
    }
    for w in [NATIVE, FUSING, REP, SPLITTING, PARKED] {
        // SAFETY: pure.
        assert_eq!(unsafe { host_role_with(w) }, -1);
    }
}

/// One CPU's part in a fuse, split or park, as bpf/exec_object.bpf.c and
/// bpf/park.bpf.c run it: each variant is one CAS (or one read) away from
/// the next, so exploring every order of these steps explores every
/// interleaving the policy can meet.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Actor {
    /// try_fuse(): rep, the CPUs it wants, the next position, the borrowed count.
    Fuse { rep: usize, want: Vec<usize>, pc: u8, i: usize },
    /// split(): rep, the next position of its fused set.
    Split { rep: usize, pc: u8, i: usize },
    /// park_one(): the CPU, tries left, a split it runs inline.
    Park { cpu: usize, tries: u8, inner: Option<Box<Actor>> },
    Done,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct World {
    word: Vec<u32>,
    /// rc->cpus[1..nr]: written by the fuse before FUSE_DONE, read by a split.
    fused: Vec<Vec<usize>>,
}

fn cas(w: &mut World, cpu: usize, ev: u32, arg: i32) -> bool {
    let new = step(w.word[cpu], ev, arg);
    if new == INVALID {
        return false;
    }
    w.word[cpu] = new;
    true
}

/// One step of `a` on `w`; returns the actor's next state.
fn advance(a: &Actor, w: &mut World) -> Actor {
    match a.clone() {
        Actor::Fuse { rep, want, pc, i } => match pc {
            0 => {
                if cas(w, rep, FUSE_BEGIN, 0) {
                    Actor::Fuse { rep, want, pc: 1, i: 0 }
                } else {
                    Actor::Done
                }
            }
            // Borrow want[i], or start giving back on a lost race.
            1 if i < want.len() => {
                let c = want[i];
                if w.word[c] == lent(rep as i32) || cas(w, c, LEND, rep as i32) {
                    Actor::Fuse { rep, want, pc: 1, i: i + 1 }
                } else {
                    Actor::Fuse { rep, want, pc: 2, i }
                }
            }
            1 => {
                w.fused[rep] = want.clone();
                Actor::Fuse { rep, want, pc: 3, i }
            }
            // unborrow(): positions [0, i) back, one CAS each, then abort.
            2 if i > 0 => {
                cas(w, want[i - 1], GIVE_BACK, rep as i32);
                Actor::Fuse { rep, want, pc: 2, i: i - 1 }
            }
            2 => {
                assert!(cas(w, rep, FUSE_ABORT, 0), "only its own fuse ends FUSING");
                Actor::Done
            }
            _ => {
                assert!(cas(w, rep, FUSE_DONE, 0), "only its own fuse ends FUSING");
                Actor::Done
            }
        },
        Actor::Split { rep, pc, i } => match pc {
            0 => {
                if cas(w, rep, SPLIT_BEGIN, 0) {
                    Actor::Split { rep, pc: 1, i: 0 }
                } else {
                    Actor::Done
                }
            }
            1 if i < w.fused[rep].len() => {
                let c = w.fused[rep][i];
                cas(w, c, GIVE_BACK, rep as i32);
                Actor::Split { rep, pc: 1, i: i + 1 }
            }
            _ => {
                assert!(cas(w, rep, SPLIT_DONE, 0), "only its own split ends SPLITTING");
                Actor::Done
            }
        },
        Actor::Park { cpu, tries, inner } => {
            if let Some(s) = inner {
                let next = advance(&s, w);
                let inner = (next != Actor::Done).then(|| Box::new(next));
                return Actor::Park { cpu, tries, inner };
            }
            if tries == 0 || cas(w, cpu, PARK, 0) {
                return Actor::Done;
            }
            let word = w.word[cpu];
            let inner = match kind(word) {
                PARKED => return Actor::Done,
                REP => Some(Box::new(Actor::Split { rep: cpu, pc: 0, i: 0 })),
                LENT => {
                    // SAFETY: pure.
                    let rep = unsafe { host_role_with(word) } as usize;
                    Some(Box::new(Actor::Split { rep, pc: 0, i: 0 }))
                }
                _ => None,
            };
            Actor::Park { cpu, tries: tries - 1, inner }
        }
        Actor::Done => Actor::Done,
    }
}

/// The invariants of role.h, on every state reached.
fn check(w: &World, trace: &str) {
    for (c, &word) in w.word.iter().enumerate() {
        if kind(word) == LENT {
            // SAFETY: pure.
            let rep = unsafe { host_role_with(word) } as usize;
            assert!(lent_ok(word, w.word[rep]), "cpu{c} lent to cpu{rep}, which is {:#x}: {trace}", w.word[rep]);
        }
        if kind(word) == REP {
            for &l in &w.fused[c] {
                assert_eq!(w.word[l], lent(c as i32), "cpu{c} fused, its cpu{l} not lent to it: {trace}");
            }
        }
    }
}

/// Explore every interleaving of `actors` from `w`; returns the states seen.
fn explore(w: World, actors: Vec<Actor>) -> usize {
    let mut seen = HashSet::new();
    let mut stack = vec![(w, actors, String::new())];
    while let Some((w, actors, trace)) = stack.pop() {
        if !seen.insert((w.clone(), actors.clone())) {
            continue;
        }
        check(&w, &trace);
        if actors.iter().all(|a| *a == Actor::Done) {
            // Quiescent: nothing half-done, nobody lent to a CPU that holds no object.
            for (c, &word) in w.word.iter().enumerate() {
                assert!(![FUSING, SPLITTING].contains(&kind(word)), "cpu{c} left {word:#x}: {trace}");
            }
            continue;
        }
        for (k, a) in actors.iter().enumerate() {
            if *a == Actor::Done {
                continue;
            }
            let mut w2 = w.clone();
            let mut next = actors.clone();
            next[k] = advance(a, &mut w2);
            stack.push((w2, next, format!("{trace} a{k}")));
        }
    }
    seen.len()
}

fn fresh(n: usize) -> World {
    World { word: vec![NATIVE; n], fused: vec![Vec::new(); n] }
}

fn fuse(rep: usize, want: &[usize]) -> Actor {
    Actor::Fuse { rep, want: want.to_vec(), pc: 0, i: 0 }
}

/// Two representatives whose objects overlap (the agent publishes one pid at
/// a time, so overlapping CPU sets exist for a moment), each also wanting
/// the other as a lent CPU: never a CPU both representative and lent, never
/// a fused object missing one of its CPUs.
#[test]
fn overlapping_fuses_never_share_or_cross() {
    let states = explore(fresh(3), vec![fuse(0, &[1, 2]), fuse(1, &[0, 2]), fuse(2, &[1])]);
    assert!(states > 50, "explored {states} states");
}

/// Fuses, splits from other CPUs and a park of a CPU in the middle of it all.
#[test]
fn fuse_split_park_interleavings_keep_the_invariants() {
    let split = |rep| Actor::Split { rep, pc: 0, i: 0 };
    let park = |cpu| Actor::Park { cpu, tries: 4, inner: None };
    let n = explore(fresh(3), vec![fuse(0, &[1, 2]), split(0), park(2)]);
    let m = explore(fresh(3), vec![fuse(0, &[1]), fuse(2, &[1]), split(0), split(2), park(1)]);
    let k = explore(fresh(4), vec![fuse(0, &[1, 2, 3]), fuse(3, &[2]), split(3), park(0)]);
    assert!(n > 20 && m > 100 && k > 100, "explored {n}, {m}, {k} states");
}

/// A fused object, then a park of its representative or of a lent CPU: the
/// park splits first and ends PARKED, with nothing left lent.
#[test]
fn park_of_a_fused_cpu_splits_then_parks() {
    for target in [0usize, 1] {
        let mut w = fresh(3);
        let mut a = fuse(0, &[1, 2]);
        while a != Actor::Done {
            a = advance(&a, &mut w);
        }
        assert_eq!(kind(w.word[0]), REP);
        let mut p = Actor::Park { cpu: target, tries: 4, inner: None };
        while p != Actor::Done {
            p = advance(&p, &mut w);
        }
        assert_eq!(w.word[target], PARKED, "cpu{target}");
        assert!(w.word.iter().all(|&x| kind(x) != LENT && kind(x) != REP), "{:?}", w.word);
    }
}
