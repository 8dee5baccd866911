//! `clankie-read hosts [--check] [HOST…]`: the configured hosts, and with `--check` why one does
//! not answer — connection and auth, host key, shell dialect, whether the login shell is clean,
//! which harness roots exist with how many sessions, and round-trip times.

use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::common::{GlobalArgs, hosts_file, open_host};
use crate::config::{HostsFile, ShellChoice, Transport};
use crate::driver::{list_sessions, roots_for};
use crate::error::{Error, exit};
use clankie_host::AnyHost;
use clankie_model::sanitize::sanitize;

#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Hosts to show [default: `local` and every host in the hosts file]; any `[user@]alias`
    /// works.
    #[arg(value_name = "HOST")]
    pub host_names: Vec<String>,
    /// Connect to each host and report what works and what does not.
    #[arg(long)]
    pub check: bool,
    /// NDJSON output: one `host` object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Default, Serialize)]
struct RootReport {
    harness: String,
    dir: String,
    exists: bool,
    sessions: usize,
}

#[derive(Debug, Default, Serialize)]
struct HostReport {
    #[serde(rename = "type")]
    ty: &'static str,
    name: String,
    transport: String,
    shell: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connect_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exec_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    list_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_key: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clean_shell: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shell_noise: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    roots: Vec<RootReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

fn describe(hosts: &HostsFile, name: &str) -> (String, ShellChoice) {
    match hosts.get(name) {
        Some(h) => match &h.transport {
            Transport::Local => ("local".into(), h.shell),
            Transport::Ssh(dest) => (format!("ssh {dest}"), h.shell),
        },
        None if name == "local" => ("local".into(), ShellChoice::Posix),
        None => (format!("ssh {name}"), ShellChoice::Auto),
    }
}

fn shell_name(shell: ShellChoice) -> &'static str {
    match shell {
        ShellChoice::Auto => "auto",
        ShellChoice::Posix => "posix",
        ShellChoice::Powershell => "powershell",
    }
}

pub(super) async fn run(global: &GlobalArgs, args: HostsArgs) -> Result<u8, Error> {
    let hosts = hosts_file(global)?;
    let names: Vec<String> = if args.host_names.is_empty() {
        std::iter::once("local".to_string())
            .chain(hosts.hosts.iter().map(|h| h.name.clone()))
            .collect()
    } else {
        args.host_names.clone()
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (index, name) in names.iter().enumerate() {
        let (transport, shell) = describe(&hosts, name);
        let mut report = HostReport {
            ty: "host",
            name: name.clone(),
            transport,
            shell: shell_name(shell),
            ..Default::default()
        };
        let opened = if args.check {
            Some(open_host(global, &hosts, name))
        } else {
            None
        };
        tasks.spawn(async move {
            if let Some(opened) = opened {
                check(&mut report, opened).await;
            }
            (index, report)
        });
    }
    let mut reports = tasks.join_all().await;
    reports.sort_by_key(|(index, _)| *index);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut status = exit::OK;
    for (_, report) in &reports {
        if report.ok == Some(false) {
            status = exit::HOST;
        }
        if args.json {
            serde_json::to_writer(&mut out, report).map_err(std::io::Error::other)?;
            writeln!(out)?;
        } else {
            print_text(&mut out, report)?;
        }
    }
    out.flush()?;
    Ok(status)
}

async fn check(report: &mut HostReport, opened: Result<super::common::OpenHost, Error>) {
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
    match list_sessions(&opened.host, &roots_for(&opened.roots, None)).await {
        Ok((listing, sessions)) => {
            report.list_ms = Some(start.elapsed().as_millis());
            for root in &listing.roots {
                let count = sessions
                    .iter()
                    .filter(|s| s.harness() == root.harness && s.entry.root == root.dir)
                    .count();
                let dir = String::from_utf8_lossy(&root.dir).into_owned();
                if !root.exists {
                    report
                        .warnings
                        .push(format!("no {} root at {dir}", root.harness));
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

fn print_text(out: &mut impl Write, r: &HostReport) -> std::io::Result<()> {
    let status = match (r.ok, &r.error) {
        (None, _) => String::new(),
        (Some(true), _) => "  ok".into(),
        (Some(false), Some(e)) => format!("  FAILED: {e}"),
        (Some(false), None) => "  FAILED".into(),
    };
    writeln!(
        out,
        "{}  {}  shell={}{}",
        sanitize(&r.name),
        sanitize(&r.transport),
        r.shell,
        sanitize(&status)
    )?;
    if let (Some(c), Some(e)) = (r.connect_ms, r.exec_ms) {
        let uname = r.uname.as_deref().unwrap_or("?");
        let auth = r.auth.as_deref().unwrap_or("?");
        writeln!(
            out,
            "    connect {c} ms, exec {e} ms, {}, host key known, authenticated with {}",
            sanitize(uname),
            sanitize(auth)
        )?;
    }
    for root in &r.roots {
        let what = if root.exists {
            format!("{} sessions", root.sessions)
        } else {
            "missing".into()
        };
        writeln!(
            out,
            "    {}: {} ({what})",
            root.harness,
            sanitize(&root.dir)
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "    warning: {}", sanitize(w))?;
    }
    Ok(())
}
