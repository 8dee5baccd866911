//! Command line: clap definitions and the one place that prints and exits.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
