// Builds the BPF policy and its Rust skeleton (scx_cargo reads BPF_CLANG), turns
// bpf/intf.h into Rust with bindgen, and compiles the BPF policy's pure
// decision helpers for the host so that unit tests run exactly that code.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("BPF builder")
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF policy");

    cc::Build::new()
        .file("tests/host/policy_shim.c")
        .include("bpf")
        .warnings(true)
        .extra_warnings(true)
        .compile("chameleon_policy");
    println!("cargo:rerun-if-changed=tests/host/policy_shim.c");
    println!("cargo:rerun-if-changed=bpf");
}
