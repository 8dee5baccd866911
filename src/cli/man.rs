//! `clankie-read man`: the roff man page, generated from the clap definitions (clap_mangen),
//! printed to stdout (`clankie-read man > clankie-read.1; man ./clankie-read.1`).

use std::io::Write;

use clap::{Args, CommandFactory};

use super::Cli;
use crate::error::{Error, Outcome};

#[derive(Debug, Args)]
pub struct ManArgs {}

/// The man page, in roff.
fn page() -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    Ok(out)
}

pub(super) fn run(_args: ManArgs) -> Result<Outcome, Error> {
    let page = page()?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&page)?;
    stdout.flush()?;
    Ok(Outcome::Done)
}
