//! `clankie-read resume HOST:SESSION`: prints the harness's own resume command; runs nothing.

use std::io::Write;

use clap::Args;

use super::context::{Context, GlobalArgs, split_target};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome};
use clankie_engine::resolve::SessionQuery;

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session: `HOST:SESSION`, where SESSION is an id, a unique prefix of at least 6
    /// characters, or `HARNESS/ID`.
    #[arg(value_name = "HOST:SESSION")]
    pub target: String,
}

pub(super) async fn run(global: &GlobalArgs, args: ResumeArgs) -> Result<Outcome, Error> {
    let (host_name, session_arg) = split_target(&args.target)?;
    let query = SessionQuery::parse(session_arg)?;
    let ctx = Context::new(global)?;
    let opened = ctx.open(host_name)?;
    let host = opened.host;
    let reader = Reader::new(&host);
    let session = reader
        .resolve_session(&roots_for(&opened.roots, query.harness), &query)
        .await?;
    let command = reader.resume_command(&session).await?;
    let mut out = std::io::stdout().lock();
    // The command holds names from the host: printed through the sanitiser like everything
    // else that reaches a terminal (quoting already made it one line).
    writeln!(out, "{}", clankie_model::sanitize::sanitize(&command))?;
    out.flush()?;
    Ok(Outcome::Done)
}
