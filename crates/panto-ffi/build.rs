//! Gives the release shared library its SONAME when `cargo xtask dist` asks for one.
//!
//! `cargo xtask dist` builds `panto` and libpanto in one `cargo build`, so that both share one
//! feature resolution and the dependency graph compiles once; a per-crate link argument for the
//! cdylib can only come from here. It sets `PANTO_SONAME` (`libpanto.so.<PANTO_ABI_VERSION>`);
//! every other build leaves it unset and links as plain `libpanto.so`, which is what the debug
//! builds' tests link against.

fn main() {
    println!("cargo:rerun-if-env-changed=PANTO_SONAME");
    if let Ok(soname) = std::env::var("PANTO_SONAME") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }
}
