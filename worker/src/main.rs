//! `worker`: evaluates positions handed out by the coordinator.

fn main() -> std::process::ExitCode {
    stera_worker::main_with_args(std::env::args())
}
