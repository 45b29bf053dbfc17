//! The committed header carries the crate's version and ABI version, so `PANTO_VERSION` and
//! `panto_version()` cannot disagree with Cargo.toml. (`cargo xtask codegen --check` keeps the
//! rest of the header in step with the source.)

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/panto.h");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}; run `cargo xtask codegen`"))
}

fn define(header: &str, name: &str) -> String {
    let prefix = format!("#define {name} ");
    header
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("the header has no #define {name}; run `cargo xtask codegen`"))
        .trim()
        .to_owned()
}

#[test]
fn version_macros_equal_the_crate_version() {
    let h = header();
    let stale = "include/panto.h is stale: run `cargo xtask codegen`";
    assert_eq!(
        define(&h, "PANTO_VERSION"),
        format!("\"{}\"", env!("CARGO_PKG_VERSION")),
        "{stale}"
    );
    assert_eq!(
        define(&h, "PANTO_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MAJOR"),
        "{stale}"
    );
    assert_eq!(
        define(&h, "PANTO_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        "{stale}"
    );
    assert_eq!(
        define(&h, "PANTO_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION_PATCH"),
        "{stale}"
    );
    assert_eq!(
        define(&h, "PANTO_ABI_VERSION"),
        panto::panto_abi_version().to_string(),
        "{stale}"
    );
}

#[test]
fn the_library_reports_the_crate_version() {
    // SAFETY: panto_version returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(panto::panto_version()) };
    assert_eq!(version.to_str(), Ok(env!("CARGO_PKG_VERSION")));
    assert_eq!(panto::panto_abi_version(), panto::PANTO_ABI_VERSION);
}
