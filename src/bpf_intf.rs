// bindgen output of bpf/intf.h: the types shared with the BPF policy.
#![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));

/// The bytes of a plain-old-data value shared with BPF (a map's key or
/// value): the agent's modules write the policy's maps through it.
pub(crate) fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a bindgen struct of integers, read only as bytes.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}
