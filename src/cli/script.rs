//! `clankie-read script list|read --shell posix|powershell`: prints exactly what a host would
//! be sent for one primitive — the exec string on the first line, a blank line, then the stdin
//! payload — without connecting anywhere. For inspecting and hand-testing the remote scripts.

use std::io::Write;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

use super::context::GlobalArgs;
use crate::driver::roots_for;
use crate::error::{Error, Outcome, UsageError};
use clankie_host::local::LocalHost;
use clankie_host::script::{new_nonce, posix};
use clankie_host::{Dialect, FileRef, check_relative_path};
use clankie_model::limits::MAX_RANGES;
use clankie_model::limits::MAX_READ_BYTES;
use clankie_model::{ByteRange, RootSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Primitive {
    /// The list script for the roots (`--root`, else every harness's default home).
    List,
    /// The read script for one range of each `--path` under the first `--root` (several
    /// paths: one batched script for POSIX, one script per file for PowerShell).
    Read,
}

/// `--shell`: a [`Dialect`] by its name, each with the help clap shows.
fn dialect_parser() -> impl TypedValueParser<Value = Dialect> {
    PossibleValuesParser::new([
        PossibleValue::new(Dialect::Posix.name()).help("`sh -s`, the script on stdin"),
        PossibleValue::new(Dialect::PowerShell.name()).help(
            "Windows PowerShell 5.1: `powershell … -EncodedCommand …` (the script on stdin only \
             when it is too long for cmd.exe)",
        ),
    ])
    .map(|name| Dialect::from_name(&name).expect("clap admits only the dialects' names"))
}

#[derive(Debug, Args)]
pub struct ScriptArgs {
    /// Which primitive's script to print.
    #[arg(value_enum)]
    pub primitive: Primitive,
    /// The remote shell dialect.
    #[arg(long, value_parser = dialect_parser(), default_value = Dialect::Posix.name())]
    pub shell: Dialect,
    /// read: the file, relative to the root, `/`-separated (as a listing returns it); repeat
    /// it to read several files in one call. The root is the first `--root` (spelled as the
    /// remote host spells it), else the harness's default home as this machine resolves it.
    #[arg(long, value_name = "REL", required_if_eq("primitive", "read"))]
    pub path: Vec<String>,
    /// read: the first byte.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u64,
    /// read: how many bytes (at most 4 MiB).
    #[arg(long, value_name = "M", default_value_t = 65536)]
    pub len: u64,
}

pub(super) fn run(global: &GlobalArgs, args: ScriptArgs) -> Result<Outcome, Error> {
    // No hosts file: this subcommand reaches no host, so it needs only the roots.
    let overrides = global.root_overrides()?;
    let dialect = args.shell;
    let nonce = new_nonce();
    let invocation = match args.primitive {
        Primitive::List => {
            if !args.path.is_empty() {
                return Err(UsageError::ScriptListPath.into());
            }
            dialect.list(&nonce, &roots_for(&overrides, None))
        }
        Primitive::Read => {
            for rel in &args.path {
                check_relative_path(rel.as_bytes()).map_err(|reason| UsageError::ScriptPath {
                    path: rel.clone(),
                    reason,
                })?;
            }
            if args.len > MAX_READ_BYTES {
                return Err(UsageError::ScriptLen.into());
            }
            let spec = overrides.first().cloned().unwrap_or_else(|| {
                RootSpec::default_for(clankie_engine::harness::all().next().expect("a harness"))
            });
            let root = match &spec.dir {
                Some(dir) => dir.clone(),
                None => {
                    #[cfg(windows)]
                    use clankie_host::windows_shims::OsStrExt;
                    #[cfg(unix)]
                    use std::os::unix::ffi::OsStrExt;
                    let path = LocalHost::new("local").resolve_root(&spec);
                    path.as_os_str().as_bytes().to_vec()
                }
            };
            let ranges = vec![ByteRange::new(args.offset, args.len)];
            debug_assert!(ranges.len() <= MAX_RANGES);
            let reads: Vec<(FileRef, Vec<ByteRange>)> = args
                .path
                .iter()
                .map(|rel| {
                    let file = FileRef {
                        harness: spec.harness,
                        root: root.clone(),
                        rel: rel.clone().into_bytes(),
                    };
                    (file, ranges.clone())
                })
                .collect();
            match (dialect, reads.as_slice()) {
                (_, [(file, ranges)]) => dialect.read(&nonce, file, ranges),
                (Dialect::Posix, _) => {
                    posix::invocation(posix::read_many_script(&nonce, &reads, None))
                }
                // PowerShell hosts read file by file: one invocation each, one after another.
                (Dialect::PowerShell, _) => {
                    let stdout = std::io::stdout();
                    let mut out = stdout.lock();
                    for (i, (file, ranges)) in reads.iter().enumerate() {
                        let invocation = dialect.read(&new_nonce(), file, ranges);
                        if i > 0 {
                            out.write_all(b"\n")?;
                        }
                        out.write_all(invocation.exec.as_bytes())?;
                        out.write_all(b"\n\n")?;
                        out.write_all(&invocation.stdin)?;
                    }
                    out.flush()?;
                    return Ok(Outcome::Done);
                }
            }
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(invocation.exec.as_bytes())?;
    out.write_all(b"\n\n")?;
    out.write_all(&invocation.stdin)?;
    out.flush()?;
    Ok(Outcome::Done)
}
