//! cargo xtask (being written).
fn main() -> anyhow::Result<()> {
    Ok(())
}
