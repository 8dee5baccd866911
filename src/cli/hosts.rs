//! `clankie-read hosts [--check] [HOST…]`: the configured hosts, and with `--check` why one does
//! not answer — connection and auth, host key, shell dialect, whether the login shell is clean,
//! which harness roots exist with how many sessions, round-trip times, and which way the
//! commands go (the user's ControlMaster, or a new connection). Text is one table aligned
//! across the hosts, with a header row on a terminal.

use std::io::Write;

use clap::Args;

use super::context::{Context, GlobalArgs, OpenHost};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome};
use crate::render::{HostReport, RootReport};
use clankie_host::{AnyHost, Transport};

#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Hosts to show [default: `local` and every host in the hosts file]; any `[user@]alias`
    /// works.
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// Connect to each host and report what works and what does not.
    #[arg(long)]
    pub check: bool,
}

pub(super) async fn run(global: &GlobalArgs, args: HostsArgs) -> Result<Outcome, Error> {
    let ctx = Context::new(global)?;
    let names: Vec<String> = if args.host_names.is_empty() {
        std::iter::once("local")
            .chain(ctx.hosts_file().names())
            .map(String::from)
            .collect()
    } else {
        args.host_names.clone()
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (index, name) in names.iter().enumerate() {
        let config = ctx.host_config(name);
        let mut report = HostReport {
            name: name.clone(),
            transport: match &config.transport {
                Transport::Local => "local".into(),
                Transport::Ssh(dest) => format!("ssh {dest}"),
            },
            shell: config.shell_name(),
            ..Default::default()
        };
        let opened = args.check.then(|| ctx.open(name));
        tasks.spawn(async move {
            if let Some(opened) = opened {
                check(&mut report, opened).await;
            }
            (index, report)
        });
    }
    let mut reports = tasks.join_all().await;
    reports.sort_by_key(|(index, _)| *index);
    let renderer = ctx.renderer(false);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let reports: Vec<HostReport> = reports.into_iter().map(|(_, report)| report).collect();
    let failed = reports.iter().filter(|r| r.ok == Some(false)).count();
    renderer.hosts(&mut out, &reports, crate::render::tty::stdout_is_terminal())?;
    out.flush()?;
    Ok(Outcome::Checked {
        failed,
        strict_failures: 0,
    })
}

async fn check(report: &mut HostReport, opened: Result<OpenHost, Error>) {
    let opened = match opened {
        Ok(opened) => opened,
        Err(err) => {
            report.ok = Some(false);
            report.error = Some(err.to_string());
            return;
        }
    };
    if let AnyHost::Ssh(ssh) = &opened.host {
        match ssh.probe().await {
            Ok(probe) => {
                report.connect_ms = Some(probe.connect.as_millis());
                report.exec_ms = Some(probe.exec.as_millis());
                report.uname = Some(probe.uname);
                report.host_key = Some("known");
                report.auth = Some(probe.auth);
                report.connection = Some(probe.connection.to_string());
                report.clean_shell = Some(probe.noise.is_empty());
                if !probe.noise.is_empty() {
                    let noise = String::from_utf8_lossy(&probe.noise[..probe.noise.len().min(120)])
                        .into_owned();
                    report.warnings.push(format!(
                        "the login shell prints {noise:?} for non-interactive commands; reads still work (output is framed), \
                         but fix the rc file: print only when interactive, e.g. wrap it in `case $- in *i*) … ;; esac` \
                         or `[ -t 1 ] && …`"
                    ));
                    report.shell_noise = Some(noise);
                }
            }
            Err(err) => {
                report.ok = Some(false);
                report.error = Some(err.to_string());
                return;
            }
        }
    }
    let start = std::time::Instant::now();
    match Reader::new(&opened.host)
        .list_sessions(&roots_for(&opened.roots, None))
        .await
    {
        Ok((listing, sessions)) => {
            report.list_ms = Some(start.elapsed().as_millis());
            for root in &listing.roots {
                let count = sessions
                    .iter()
                    .filter(|s| s.harness() == root.harness && *s.entry.root == *root.dir)
                    .count();
                let dir = String::from_utf8_lossy(&root.dir).into_owned();
                // A harness whose root the user named is one they use; a default home that
                // is not there is a harness never installed, not worth a warning.
                let named = opened
                    .roots
                    .iter()
                    .any(|r| r.harness == root.harness && r.dir.is_some());
                if !root.exists && named {
                    report.warnings.push(format!(
                        "no {} root at {dir}{}",
                        root.harness,
                        root.harness.list_spec().where_sessions_go()
                    ));
                }
                report.roots.push(RootReport {
                    harness: root.harness.name().into(),
                    dir,
                    exists: root.exists,
                    sessions: count,
                });
            }
            report.ok = Some(true);
        }
        Err(err) => {
            report.ok = Some(false);
            report.error = Some(err.to_string());
        }
    }
}
