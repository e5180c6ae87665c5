// Compiles the BPF policy's pure decision helpers (bpf/*.h) for the host,
// wrapped by policy_shim.c, so that the tests in src/ run exactly that code.
fn main() {
    cc::Build::new()
        .file("policy_shim.c")
        .include("../../bpf")
        .warnings(true)
        .extra_warnings(true)
        .compile("chameleon_policy");
    println!("cargo:rerun-if-changed=policy_shim.c");
    println!("cargo:rerun-if-changed=../../bpf");
}
