//! The pager, as git and gh have it: text output on a terminal that is longer than the screen
//! goes through `$CLANKIE_PAGER`, else `$PAGER`, else `less -FRX`, run by `sh -c`. Output is
//! held until it is known to be longer than the screen (so a short page never starts a pager)
//! and then streamed to the pager; the pager is waited for before the program ends. An empty
//! pager command, or `cat`, means no pager.

use std::ffi::OsString;
use std::io::{self, BufWriter, Stdout, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use super::tty;

/// The pager when neither `$CLANKIE_PAGER` nor `$PAGER` is set: quit at once when the text fits
/// one screen (`-F`), pass colour through (`-R`), leave the text on the screen (`-X`).
const DEFAULT_PAGER: &str = "less -FRX";
/// Rows assumed when the terminal does not tell its height.
const DEFAULT_ROWS: usize = 24;

/// The pager command: `$CLANKIE_PAGER`, else `$PAGER`, else `less -FRX`; `None` when the one
/// chosen is empty or `cat` (set but empty stops the search, as in git).
pub fn command(clankie_pager: Option<OsString>, pager: Option<OsString>) -> Option<String> {
    let chosen = clankie_pager
        .or(pager)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_PAGER.to_string());
    let trimmed = chosen.trim();
    (!trimmed.is_empty() && trimmed != "cat").then(|| trimmed.to_string())
}

/// Stdout, possibly through a pager.
#[derive(Debug)]
pub struct PagedStdout {
    state: State,
}

#[derive(Debug)]
enum State {
    Direct(BufWriter<Stdout>),
    /// Not yet longer than the screen: held back.
    Holding {
        held: Vec<u8>,
        lines: usize,
        rows: usize,
        command: String,
    },
    Paging(Pager),
}

#[derive(Debug)]
struct Pager {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    /// While the pager runs, Ctrl-C is the pager's (less uses it to stop a search): holding a
    /// handler keeps it from ending this program under the pager's feet, as git does.
    #[cfg(unix)]
    _interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(windows)]
    _interrupt: Option<tokio::signal::windows::CtrlC>,
}

impl PagedStdout {
    /// Plain stdout: no pager.
    pub fn direct() -> PagedStdout {
        PagedStdout {
            state: State::Direct(BufWriter::new(io::stdout())),
        }
    }

    /// Stdout through the pager of the environment once the output is longer than the screen
    /// (`LINES`, else the terminal's height). The caller decides that paging applies (stdout
    /// is a terminal, not `--json`, `--follow` or `--no-pager`).
    pub fn paged() -> PagedStdout {
        let command = command(std::env::var_os("CLANKIE_PAGER"), std::env::var_os("PAGER"));
        let Some(command) = command else {
            return PagedStdout::direct();
        };
        PagedStdout {
            state: State::Holding {
                held: Vec::new(),
                lines: 0,
                rows: tty::stdout_height().unwrap_or(DEFAULT_ROWS),
                command,
            },
        }
    }

    /// Ends the output: what is held goes to stdout, or the pager gets the end of its input and
    /// is waited for. Writing afterwards goes straight to stdout.
    pub fn finish(&mut self) -> io::Result<()> {
        let state = std::mem::replace(&mut self.state, State::Direct(BufWriter::new(io::stdout())));
        match state {
            State::Direct(mut out) => out.flush(),
            State::Holding { held, .. } => {
                let mut out = io::stdout();
                out.write_all(&held)?;
                out.flush()
            }
            State::Paging(mut pager) => pager.close(),
        }
    }

    /// Starts the pager and gives it what was held; if it cannot be started, stdout gets it.
    fn start(&mut self) -> io::Result<()> {
        let State::Holding { held, command, .. } = &mut self.state else {
            return Ok(());
        };
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(&*command).stdin(Stdio::piped());
        // As git: less and lv colour and quit as above even when named bare in $PAGER.
        if std::env::var_os("LESS").is_none() {
            sh.env("LESS", "FRX");
        }
        if std::env::var_os("LV").is_none() {
            sh.env("LV", "-c");
        }
        let held = std::mem::take(held);
        // `sh -c` always starts, so a pager that does not exist would swallow the page (git
        // loses it too): a plain program name missing from PATH is caught here instead.
        let spawned = if pager_program_exists(command) {
            sh.spawn()
        } else {
            eprintln!(
                "warning: pager `{}` not found; writing to the terminal (set CLANKIE_PAGER, or use --no-pager)",
                command.split_whitespace().next().unwrap_or_default()
            );
            Err(io::Error::from(io::ErrorKind::NotFound))
        };
        match spawned {
            Ok(mut child) => {
                let stdin = child.stdin.take().map(BufWriter::new);
                let _interrupt = tokio::runtime::Handle::try_current().ok().and_then(|_| {
                    #[cfg(unix)]
                    return tokio::signal::unix::signal(
                        tokio::signal::unix::SignalKind::interrupt(),
                    )
                    .ok();
                    #[cfg(windows)]
                    return tokio::signal::windows::ctrl_c().ok();
                });
                let mut pager = Pager {
                    child,
                    stdin,
                    _interrupt,
                };
                let written = pager.write_all(&held);
                self.state = State::Paging(pager);
                written
            }
            Err(_) => {
                let mut out = BufWriter::new(io::stdout());
                out.write_all(&held)?;
                self.state = State::Direct(out);
                Ok(())
            }
        }
    }
}

/// Whether the program a pager command starts with can be found. A command whose first word is
/// shell syntax (an assignment, an expansion, a quote) is given the benefit of the doubt.
fn pager_program_exists(command: &str) -> bool {
    let Some(program) = command.split_whitespace().next() else {
        return false;
    };
    if program.chars().any(|c| "=$`'\"\\(){}<>|;&*?[~".contains(c)) {
        return true;
    }
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    // Windows finds `less` as `less.exe`.
    let found = |dir: std::path::PathBuf| {
        dir.join(program).is_file()
            || (cfg!(windows) && dir.join(format!("{program}.exe")).is_file())
    };
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(found))
}

impl Write for PagedStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.state {
            State::Direct(out) => out.write(buf),
            State::Paging(pager) => pager.write(buf),
            State::Holding {
                held, lines, rows, ..
            } => {
                held.extend_from_slice(buf);
                *lines += memchr::memchr_iter(b'\n', buf).count();
                // A page as tall as the screen would scroll its first line away under the
                // prompt that follows: it is paged too.
                if *lines >= *rows {
                    self.start()?;
                }
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            State::Direct(out) => out.flush(),
            State::Paging(pager) => pager.flush(),
            // Held output is shown once it is a screenful or the page ends.
            State::Holding { .. } => Ok(()),
        }
    }
}

impl Pager {
    /// Closes the pager's input and waits for it. The pager quitting before reading all (the
    /// user pressed `q`) is not an error.
    fn close(&mut self) -> io::Result<()> {
        let flushed = match self.stdin.take() {
            Some(mut stdin) => stdin.flush(),
            None => Ok(()),
        };
        self.child.wait()?;
        match flushed {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}

impl Write for Pager {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.stdin {
            Some(stdin) => stdin.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.stdin {
            Some(stdin) => stdin.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for PagedStdout {
    /// On an early return (an error, a broken pipe) the pager is still waited for, so the
    /// shell does not take the terminal back from under it; held output is still shown.
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::command;

    #[test]
    #[cfg(unix)]
    fn a_missing_pager_program_is_caught_before_sh_runs_it() {
        use super::pager_program_exists;
        assert!(pager_program_exists("sh -c true"));
        assert!(pager_program_exists("/bin/sh"));
        assert!(!pager_program_exists("no-such-pager-ck -R"));
        assert!(!pager_program_exists("/nonexistent/less"));
        // Shell syntax is left to the shell.
        assert!(pager_program_exists("LESS=R less"));
    }

    #[test]
    fn the_pager_is_clankie_s_then_the_user_s_then_less() {
        let some = |s: &str| Some(s.into());
        assert_eq!(command(some("most"), some("more")).as_deref(), Some("most"));
        assert_eq!(command(None, some("more")).as_deref(), Some("more"));
        assert_eq!(command(None, None).as_deref(), Some("less -FRX"));
        // Set but empty, or cat: no pager, and $PAGER is not consulted.
        assert_eq!(command(some(""), some("more")), None);
        assert_eq!(command(some("cat"), None), None);
        assert_eq!(command(None, some(" cat ")), None);
    }
}
