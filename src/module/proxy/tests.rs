use super::*;

#[test]
fn request_codes_are_the_kernels() {
    // What the C header's _IOR/_IO/_IOWR compute (checked with gcc and
    // against proxy_ctl's values), as nix encodes the declarations in
    // `ioc`: the same type, number, direction and size.
    assert_eq!(std::mem::size_of::<uapi::chameleon_proxy_info>(), 16);
    assert_eq!(nix::request_code_read!(0xC7, 0, std::mem::size_of::<uapi::chameleon_proxy_info>()), 0x8010_C700);
    assert_eq!(nix::request_code_none!(0xC7, 5), 0x0000_C705);
    assert_eq!(std::mem::size_of::<uapi::chameleon_proxy_claim>(), 56);
    assert_eq!(
        nix::request_code_readwrite!(0xC7, 6, std::mem::size_of::<uapi::chameleon_proxy_claim>()),
        0xC038_C706
    );
}

#[test]
fn repaired_says_what_claim_found() {
    assert_eq!(Claimed::default().repaired(), None);
    let c = Claimed {
        found: u64::from(uapi::CHAMELEON_PROXY_FOUND_OFFLINED) | u64::from(uapi::CHAMELEON_PROXY_FOUND_IRQS) | u64::from(uapi::CHAMELEON_PROXY_FOUND_EMULATING),
        nr_offlined: 2,
        nr_irqs: 3,
        generation: 1,
    };
    assert_eq!(c.repaired().unwrap(), "2 CPUs back online, 3 IRQs restored, emulation stopped");
    let c = Claimed { found: u64::from(uapi::CHAMELEON_PROXY_FOUND_PARKED) | u64::from(uapi::CHAMELEON_PROXY_FOUND_LENT) | 1 << 40, nr_offlined: 0, nr_irqs: 1, generation: 1 };
    assert_eq!(c.repaired().unwrap(), "parked CPUs unparked, lent CPUs reclaimed, other state 0x10000000000");
    let c = Claimed { found: u64::from(uapi::CHAMELEON_PROXY_FOUND_IRQS), nr_offlined: 0, nr_irqs: 1, generation: 1 };
    assert_eq!(c.repaired().unwrap(), "1 IRQ restored");
}

#[test]
fn the_wait_ends_when_our_references_are_gone() {
    let poll = Duration::from_millis(1);
    // 3 (the device and two programs), then back to 1 held by someone else.
    let mut counts = [3, 3, 2, 1].into_iter();
    assert!(wait_refs(|| counts.next(), 1, Duration::from_secs(5), poll).is_ok());
    // The module removed meanwhile: nothing left to wait for.
    assert!(wait_refs(|| None, 0, Duration::from_secs(5), poll).is_ok());
    // Another user's reference that stays: given up after the timeout.
    assert_eq!(wait_refs(|| Some(2), 0, Duration::from_millis(20), poll), Err(2));
}
