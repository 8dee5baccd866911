//! The `clankie-read` binary: one call into the CLI layer.

fn main() -> std::process::ExitCode {
    clankie_read::cli::main()
}
