//! The `clankie-read` binary: one call into the CLI layer.

// Reads allocate one short-lived string per record field; mimalloc's thread-local free lists
// took `--all --json` from ~15% of its time in glibc malloc/free to a few percent.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    clankie_read::cli::main()
}
