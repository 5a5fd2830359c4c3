//! The built-in engine as a USI engine on stdin/stdout (for GUIs and manual tests):
//! `cargo run --release -p stera-engine --example usi_builtin`.

fn main() -> std::io::Result<()> {
    stera_engine::builtin::run_usi(std::io::stdin().lock(), std::io::stdout())
}
