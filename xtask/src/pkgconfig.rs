//! `panto.pc`, the pkg-config file of libpanto: one writer for the installed tree (`cargo xtask
//! dist`/`install`) and for the build tree the C and Go tests link against.

use std::path::Path;

use anyhow::{Context, Result};

/// The text of `panto.pc` (libpanto `version`) for a library in `libdir` and a header in `includedir`.
///
/// `Libs` carries an rpath to `libdir`, so a program linked with `$(pkg-config --libs panto)`
/// finds `libpanto.so` at run time wherever it was installed, without `LD_LIBRARY_PATH` or
/// `ldconfig` (docs/ffi.md says so). `Libs.private` lists what the static library needs.
pub(crate) fn panto_pc(version: &str, prefix: &str, libdir: &str, includedir: &str) -> String {
    format!(
        "prefix={prefix}\n\
         libdir={libdir}\n\
         includedir={includedir}\n\
         \n\
         Name: panto\n\
         Description: panto agent runtime (C ABI)\n\
         Version: {version}\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lpanto\n\
         Libs.private: -lpthread -ldl -lm -lrt -lgcc_s\n\
         Cflags: -I${{includedir}}\n"
    )
}

/// Writes a `panto.pc` for the build tree (the header in `<root>/include`, the library in
/// `lib_dir`) into `<out>/panto.pc`, for `PKG_CONFIG_PATH=<out>`.
pub(crate) fn write_for_build_tree(root: &Path, lib_dir: &Path, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let text = panto_pc(
        &crate::codegen::ffi_version(root)?,
        &root.display().to_string(),
        &lib_dir.display().to_string(),
        &root.join("include").display().to_string(),
    );
    let file = out.join("panto.pc");
    std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))
}
