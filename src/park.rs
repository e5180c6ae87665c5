//! `scx_chameleon park` / `unpark`: which requests the agent accepts, and
//! running the policy's critical part (the `chameleon_park` syscall program,
//! bpf/park.bpf.h). The module's part is in `proxy.rs`; the agent's loop
//! (scheduler.rs) runs one after the other and tells the node manager.

use anyhow::{bail, Result};
use std::collections::BTreeSet;

/// Is parking (`park` true) or unparking `cpus` acceptable? `online`: the
/// kernel's online CPUs; `parked`: parked now; `nr_cpus`: possible CPU ids.
/// The module applies the same rules, so the policy and the module never
/// disagree about a CPU.
pub fn check(cpus: &[usize], park: bool, online: &[usize], parked: &BTreeSet<usize>, nr_cpus: usize) -> Result<()> {
    if cpus.is_empty() {
        bail!("no CPU given");
    }
    for &c in cpus {
        if c >= nr_cpus {
            bail!("CPU {c}: this machine has CPUs 0-{}", nr_cpus - 1);
        }
        if park {
            if c == 0 {
                bail!("CPU 0 cannot be parked: the boot CPU runs what cannot move");
            }
            if parked.contains(&c) {
                bail!("CPU {c} is parked already");
            }
            if !online.contains(&c) {
                bail!("CPU {c} is offline");
            }
        } else if !parked.contains(&c) {
            bail!("CPU {c} is not parked");
        }
    }
    if park && !online.iter().any(|c| !parked.contains(c) && !cpus.contains(c)) {
        bail!("parking {} would leave no CPU to run on", list(cpus));
    }
    Ok(())
}

/// "1,3-5" for a set of CPUs.
pub fn list(cpus: &[usize]) -> String {
    let mut v: Vec<usize> = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// Run the policy's `chameleon_park` program over `cpus`: returns how many
/// CPUs changed state.
pub fn run_policy(prog: &libbpf_rs::ProgramMut<'_>, cpus: &[usize], park: bool) -> Result<u32> {
    const WORDS: usize = crate::bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as usize / 64;
    let mut args = crate::bpf_intf::chameleon_park_args { mask: [0; WORDS], park: park as u32, pad: 0 };
    for &c in cpus {
        args.mask[c / 64] |= 1 << (c % 64);
    }
    // SAFETY: chameleon_park_args is plain integers, read by the program as its context.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(
            (&mut args as *mut crate::bpf_intf::chameleon_park_args).cast::<u8>(),
            std::mem::size_of_val(&args),
        )
    };
    let input = libbpf_rs::ProgramInput { context_in: Some(bytes), ..Default::default() };
    let out = prog.test_run(input)?;
    Ok(out.return_value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_the_module_would() {
        let online = [0, 1, 2, 3];
        let none = BTreeSet::new();
        assert!(check(&[2, 3], true, &online, &none, 4).is_ok());
        assert!(check(&[], true, &online, &none, 4).is_err());
        assert!(check(&[0], true, &online, &none, 4).unwrap_err().to_string().contains("CPU 0"));
        assert!(check(&[4], true, &online, &none, 4).unwrap_err().to_string().contains("0-3"));
        assert!(check(&[3], true, &[0, 1, 2], &none, 4).unwrap_err().to_string().contains("offline"));
        let parked: BTreeSet<usize> = [1, 2].into();
        assert!(check(&[2], true, &online, &parked, 4).unwrap_err().to_string().contains("already"));
        // CPU 0 stays, but it is the only one left: 1, 2 parked, 3 asked.
        assert!(check(&[3], true, &[1, 2, 3], &parked, 4).unwrap_err().to_string().contains("no CPU"));
        assert!(check(&[1, 2], false, &online, &parked, 4).is_ok());
        assert!(check(&[3], false, &online, &parked, 4).unwrap_err().to_string().contains("not parked"));
    }

    #[test]
    fn lists_ranges() {
        assert_eq!(list(&[3, 1, 2, 5, 7, 8]), "1-3,5,7-8");
        assert_eq!(list(&[4]), "4");
    }
}
