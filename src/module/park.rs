//! `scx_chameleon park` / `unpark`: which requests the agent accepts, and
//! running the policy's critical part (the `chameleon_park` syscall program,
//! bpf/park.bpf.c). The module's part is in `proxy.rs`; the agent's loop
//! (agent/park_op.rs) runs one after the other and tells the node manager.

use anyhow::{bail, Result};
use scx_utils::Cpumask;
use std::collections::BTreeSet;
use std::path::Path;

const SYSFS_CPU: &str = "/sys/devices/system/cpu";

/// Is parking (`park` true) or unparking `cpus` acceptable? `online`: the
/// kernel's online CPUs; `parked`: parked now; `nr_cpus`: possible CPU ids.
///
/// The module's rules (chameleon_proxy.h, PARK and UNPARK), from the same
/// facts and in the same order, so that the agent refuses what the module
/// would and for the same reason (tests/vm/guest/park_rules.sh sends both the
/// same requests): first the mask as a whole (empty, an id past the last,
/// a CPU not present: EINVAL); to unpark, then any CPU not parked (EINVAL);
/// to park, then CPU 0 (EINVAL), each CPU in ascending order (parked already
/// or offline: EBUSY; one the kernel cannot take offline: EOPNOTSUPP), and
/// whether a CPU is left (EINVAL).
pub fn check(cpus: &[usize], park: bool, online: &[usize], parked: &BTreeSet<usize>, nr_cpus: usize) -> Result<()> {
    check_in(Path::new(SYSFS_CPU), cpus, park, online, parked, nr_cpus)
}

/// `check` with the kernel's CPU directory at `sysfs` (a copy in tests).
/// Present CPUs come from its `present` list (all, if it cannot be read);
/// a CPU can be taken offline when it has an `online` file: the kernel
/// creates one exactly for the CPUs whose device is hotpluggable, the fact
/// the module's cpu_is_hotpluggable() reads (on x86, every CPU but 0).
fn check_in(sysfs: &Path, cpus: &[usize], park: bool, online: &[usize], parked: &BTreeSet<usize>, nr_cpus: usize) -> Result<()> {
    let asked: BTreeSet<usize> = cpus.iter().copied().collect();
    if asked.is_empty() {
        bail!("no CPU given");
    }
    if let Some(c) = asked.iter().find(|&&c| c >= nr_cpus) {
        bail!("CPU {c}: this machine has CPUs 0-{}", nr_cpus - 1);
    }
    let present = std::fs::read_to_string(sysfs.join("present"))
        .ok()
        .and_then(|l| scx_utils::read_cpulist(l.trim()).ok());
    if let Some(c) = present.and_then(|p| asked.iter().copied().find(|c| !p.contains(c))) {
        bail!("CPU {c} is not present");
    }
    if !park {
        if let Some(c) = asked.iter().find(|&&c| !parked.contains(&c)) {
            bail!("CPU {c} is not parked");
        }
        return Ok(());
    }
    if asked.contains(&0) {
        bail!("CPU 0 cannot be parked: the boot CPU runs what cannot move");
    }
    for &c in &asked {
        if parked.contains(&c) {
            bail!("CPU {c} is parked already");
        }
        if !online.contains(&c) {
            bail!("CPU {c} is offline");
        }
        if !sysfs.join(format!("cpu{c}/online")).exists() {
            bail!("CPU {c} cannot be taken offline: the kernel does not allow it (no {}/cpu{c}/online)", sysfs.display());
        }
    }
    if !online.iter().any(|c| !parked.contains(c) && !asked.contains(c)) {
        bail!("parking {} would leave no CPU to run on", list(cpus));
    }
    Ok(())
}

/// `cpus` as a mask of as many words as the largest needs.
fn mask_of(cpus: &[usize]) -> Cpumask {
    let words = cpus.iter().max().map_or(1, |&c| c / 64 + 1);
    let mut m = Cpumask::from_vec(vec![0; words]);
    for &c in cpus {
        // In range: the mask has a bit for the largest.
        let _ = m.set_cpu(c);
    }
    m
}

/// "1,3-5" for a set of CPUs ("" for none).
pub fn list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return String::new();
    }
    mask_of(cpus).to_cpulist()
}

/// Run the policy's `chameleon_park` program over `cpus`: returns how many
/// CPUs changed state.
pub fn run_policy(prog: &libbpf_rs::ProgramMut<'_>, cpus: &[usize], park: bool) -> Result<u32> {
    const WORDS: usize = crate::bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as usize / 64;
    let mut args = crate::bpf_intf::chameleon_park_args { mask: [0; WORDS], park: park as u32, pad: 0 };
    let words = mask_of(cpus);
    let words = words.as_raw_slice();
    if words.len() > WORDS {
        bail!("CPU {}: past the policy's {} CPUs", cpus.iter().max().copied().unwrap_or(0), WORDS * 64);
    }
    args.mask[..words.len()].copy_from_slice(words);
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
mod tests;
