//! panto: the terminal REPL and print mode (being written).

fn main() -> anyhow::Result<()> {
    Ok(())
}
