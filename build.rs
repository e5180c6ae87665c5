// Builds the BPF policy and its Rust skeleton (scx_cargo reads BPF_CLANG): each
// concept of the policy is a unit of its own (bpf/*.bpf.c), compiled apart and
// linked into one object, as scx_lavd does. Turns bpf/intf.h and
// kmod_proxy/chameleon_proxy.h into Rust with bindgen. (The host tests of
// the policy's C build their shim themselves: tests/host.)
fn main() {
    let mut bpf = scx_cargo::BpfBuilder::new().expect("BPF builder");
    bpf.enable_intf("bpf/intf.h", "bpf_intf.rs").enable_skel("bpf/main.bpf.c", "bpf");
    let mut units: Vec<_> = std::fs::read_dir("bpf")
        .expect("bpf/")
        .map(|e| e.expect("bpf/ entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c") && !p.ends_with("main.bpf.c"))
        .collect();
    units.sort();
    for unit in &units {
        bpf.add_source(unit.to_str().expect("UTF-8 path"));
    }
    bpf.compile_link_gen().expect("building the BPF policy");

    // The companion module's UAPI (ioctl argument structs), for src/proxy.rs.
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    bindgen::Builder::default()
        .header("kmod_proxy/chameleon_proxy.h")
        .allowlist_type("chameleon_proxy_.*")
        .allowlist_var("CHAMELEON_PROXY_.*")
        .derive_default(true)
        // The flags are _BITULL()/_BITUL() (linux/const.h): macros clang expands.
        .clang_macro_fallback()
        .generate()
        .expect("bindgen of kmod_proxy/chameleon_proxy.h")
        .write_to_file(out.join("proxy_uapi.rs"))
        .expect("writing proxy_uapi.rs");
    println!("cargo:rerun-if-changed=kmod_proxy/chameleon_proxy.h");

    println!("cargo:rerun-if-changed=bpf");
}
