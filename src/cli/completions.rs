//! `clankie-read completions SHELL`: a completion script generated from the clap definitions
//! (clap_complete), printed to stdout.

use std::io::Write;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;
use crate::error::{Error, Outcome};

#[derive(Debug, Args)]
#[command(after_help = "\
Install, for example:
  clankie-read completions bash > ~/.local/share/bash-completion/completions/clankie-read
  clankie-read completions zsh > ~/.zfunc/_clankie-read      # with fpath+=~/.zfunc
  clankie-read completions fish > ~/.config/fish/completions/clankie-read.fish
  clankie-read completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells we generate completions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

impl CompletionShell {
    fn generator(self) -> Shell {
        match self {
            CompletionShell::Bash => Shell::Bash,
            CompletionShell::Zsh => Shell::Zsh,
            CompletionShell::Fish => Shell::Fish,
            CompletionShell::Powershell => Shell::PowerShell,
        }
    }
}

/// The completion script for `shell`.
fn script(shell: CompletionShell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(
        shell.generator(),
        &mut Cli::command(),
        "clankie-read",
        &mut out,
    );
    out
}

pub(super) fn run(args: CompletionsArgs) -> Result<Outcome, Error> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&script(args.shell))?;
    stdout.flush()?;
    Ok(Outcome::Done)
}
