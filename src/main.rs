//! The `clankie-read` binary: one call into the CLI layer.

// Reads allocate one short-lived string per record field; mimalloc's thread-local free lists
// took `--all --json` from ~15% of its time in glibc malloc/free to a few percent.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // mimalloc asks for transparent huge pages on its arenas. Where free memory is fragmented,
    // the kernel then compacts it on a first touch: in about half of the first `check`s of
    // 10,000 sessions here, our time after the reply went from ~200 ms to ~400 ms, nearly all
    // of it zeroing and compacting 2 MiB pages. With 4 KiB pages it is ~230 ms every time, and
    // `--all` on 64 MiB is no slower (docs/performance.md). Inherited by the processes we
    // start (`ssh -G`, a master `ssh -M`), which is harmless.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    clankie_read::cli::main()
}
