//! Shell completion. `clankie-read completions SHELL` prints a script that registers a function
//! which, on every Tab, calls the binary back (`CLANKIE_COMPLETE=SHELL clankie-read -- WORDS…`);
//! [`answer_if_asked`], first thing in `main`, answers from the clap definitions (clap_complete's
//! engine) and from what only a run can know: the hosts (`HOST:`, from the hosts file and the
//! `Host` names of the SSH config) and a host's session ids (one listing, bounded in time,
//! silent when it fails). PowerShell gets clap_complete's static script.
//!
//! Why not clap_complete's static bash script: for a binary whose name holds a `-` it sets
//! `cmd` to `clankie__read__subcmd__ls` but dispatches on `clankie__subcmd__read__subcmd__ls`,
//! so no subcommand's flags ever completed.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser};
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::{EnvCompleter, Shells};
use clap_complete::{CompleteEnv, Shell};

use super::context::{Context, GlobalArgs};
use super::{Cli, SUBCOMMANDS, VALUE_OPTIONS};
use crate::driver::{Reader, roots_for};
use crate::error::{Error, Outcome};

/// The environment variable that turns a run into a completion request (its value names the
/// shell). Not clap_complete's default `COMPLETE`: a name that general may be set for other
/// reasons, and a run would then print completions instead of working.
pub(super) const COMPLETE_VAR: &str = "CLANKIE_COMPLETE";

/// How long completing a host's session ids may take, connection included: a Tab that hangs
/// is worse than one that offers nothing.
const SESSION_LISTING_BUDGET: Duration = Duration::from_secs(3);

const BIN: &str = "clankie-read";

#[derive(Debug, Args)]
#[command(after_help = "\
Install, for example:
  clankie-read completions bash > ~/.local/share/bash-completion/completions/clankie-read
  clankie-read completions zsh > ~/.zfunc/_clankie-read      # with fpath+=~/.zfunc
  clankie-read completions fish > ~/.config/fish/completions/clankie-read.fish
  clankie-read completions powershell >> $PROFILE
The bash, zsh and fish scripts call clankie-read back on every Tab (CLANKIE_COMPLETE=SHELL), so
they complete host names (HOST:) and a host's session ids, and never go stale after an upgrade.
Completing session ids of a remote host connects to it (at most 3 s, silent on failure).")]
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

/// The shells whose scripts call the binary back, with how each is answered.
const DYNAMIC_SHELLS: Shells<'static> = Shells(&[&BashShell, &ZshShell, &FishShell]);

/// Answers a completion request (`CLANKIE_COMPLETE=SHELL`) and exits; returns at once on a
/// normal run. Must run before anything is printed.
pub(super) fn answer_if_asked() {
    CompleteEnv::with_factory(Cli::command)
        .var(COMPLETE_VAR)
        .bin(BIN)
        .shells(DYNAMIC_SHELLS)
        .complete();
}

/// The clap command, with the completers of the values only a run can know; they see only the
/// word under the cursor, so they are given the line's global options (`--hosts`,
/// `--ssh-config`, `--root`, `--timeout`) as `global_words`.
fn with_completers(cmd: clap::Command, global_words: Vec<OsString>) -> clap::Command {
    let global_words = Arc::new(global_words);
    let target = || {
        let words = Arc::clone(&global_words);
        ArgValueCompleter::new(move |current: &OsStr| complete_target(&words, current))
    };
    let host = || {
        let words = Arc::clone(&global_words);
        ArgValueCompleter::new(move |current: &OsStr| complete_host(&words, current))
    };
    let cmd = cmd
        .mut_subcommand("read", |c| c.mut_arg("target", |a| a.add(target())))
        .mut_subcommand("resume", |c| c.mut_arg("target", |a| a.add(target())))
        .mut_subcommand("ls", |c| c.mut_arg("host_names", |a| a.add(host())))
        .mut_subcommand("hosts", |c| c.mut_arg("host_names", |a| a.add(host())))
        .mut_subcommand("check", |c| c.mut_arg("host_names", |a| a.add(host())))
        .mut_subcommand("grep", |c| c.mut_arg("host_names", |a| a.add(host())));
    let cmd = on_every_subcommand(cmd, "harness", || ArgValueCompleter::new(complete_harness));
    on_every_subcommand(cmd, "kind", || ArgValueCompleter::new(complete_kinds))
}

/// `completer` added to the argument `id` of every subcommand that has one.
fn on_every_subcommand(
    mut cmd: clap::Command,
    id: &str,
    completer: impl Fn() -> ArgValueCompleter,
) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|sub| sub.get_arguments().any(|arg| arg.get_id() == id))
        .map(|sub| sub.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |sub| sub.mut_arg(id, |arg| arg.add(completer())));
    }
    cmd
}

/// The harnesses' names, as `--harness` takes them.
fn complete_harness(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    clankie_engine::harness::all()
        .map(|harness| harness.name())
        .filter(|name| name.starts_with(current.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// The record kinds `--kind` takes, with what each keeps.
const KINDS: [(&str, &str); 7] = [
    ("user", "what the person typed"),
    ("assistant", "the agent's text"),
    ("tool_call", "the agent's tool calls"),
    ("tool_result", "what the tools returned"),
    ("tools", "tool_call and tool_result"),
    ("notice", "what the reader notes about the transcript"),
    ("terminal", "a terminal recording's lines"),
];

/// `--kind`'s comma-separated list: the kinds for the part after the last `,`, each after the
/// kinds already given (and not one of them).
fn complete_kinds(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let (given, prefix) = match current.rsplit_once(',') {
        Some((given, prefix)) => (Some(given), prefix),
        None => (None, current.as_ref()),
    };
    let given_kinds: Vec<&str> = given.map(|g| g.split(',').collect()).unwrap_or_default();
    KINDS
        .iter()
        .filter(|(kind, _)| kind.starts_with(prefix) && !given_kinds.contains(kind))
        .map(|(kind, help)| {
            let value = match given {
                Some(given) => format!("{given},{kind}"),
                None => kind.to_string(),
            };
            CompletionCandidate::new(value).help(Some((*help).into()))
        })
        .collect()
}

/// The candidates for `args[index]`. Besides clap's own: the shorthand `clankie-read
/// HOST:SESSION` (a first word that is no subcommand is `read`'s target), so the first word
/// also completes hosts, and what follows a target completes `read`'s options.
fn candidates(
    mut args: Vec<OsString>,
    mut index: usize,
    current_dir: Option<&Path>,
) -> std::io::Result<Vec<CompletionCandidate>> {
    while args.len() <= index {
        args.push(OsString::new());
    }
    let global_words = global_words(&args[..index]);
    let mut cmd = with_completers(Cli::command(), global_words.clone());
    let mut extra = Vec::new();
    match first_positional(&args[..=index]) {
        Some(at) if at == index => extra = complete_target(&global_words, &args[index]),
        Some(at) if !SUBCOMMANDS.contains(&args[at].to_string_lossy().as_ref()) => {
            args.insert(at, "read".into());
            index += 1;
        }
        _ => {}
    }
    let mut candidates = clap_complete::engine::complete(&mut cmd, args, index, current_dir)?;
    candidates.extend(extra);
    Ok(candidates)
}

/// Where the first word that is neither an option nor an option's value is, after the
/// program's name (as `expand_shorthand` finds it).
fn first_positional(args: &[OsString]) -> Option<usize> {
    let mut i = 1;
    while i < args.len() {
        let arg = args[i].to_string_lossy();
        if arg == "--" {
            return None;
        }
        if !arg.starts_with('-') {
            return Some(i);
        }
        if VALUE_OPTIONS.contains(&arg.as_ref()) {
            i += 1;
        }
        i += 1;
    }
    None
}

/// The words of the global options that say where hosts are and how to reach them.
fn global_words(args: &[OsString]) -> Vec<OsString> {
    const WANTED: [&str; 4] = ["--hosts", "--ssh-config", "--root", "--timeout"];
    let mut words = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let arg = args[i].to_string_lossy();
        if WANTED.contains(&arg.as_ref()) && i + 1 < args.len() {
            words.extend([args[i].clone(), args[i + 1].clone()]);
            i += 1;
        } else if WANTED.iter().any(|o| arg.starts_with(&format!("{o}="))) {
            words.push(args[i].clone());
        }
        i += 1;
    }
    words
}

/// The global options of the command line being completed, parsed as a run would; the
/// defaults when they do not parse (a value half typed).
fn global_args(words: &[OsString]) -> GlobalArgs {
    let words = words.to_vec();
    let parse = |words: Vec<OsString>| {
        let args = std::iter::once(OsString::from(BIN))
            .chain(words)
            .chain([OsString::from("man")]);
        Cli::try_parse_from(args).map(|cli| cli.global)
    };
    parse(words)
        .or_else(|_| parse(Vec::new()))
        .expect("the bare command line parses")
}

/// `HOST:SESSION` as typed so far: before a `:`, the hosts (each with its `:`); after it, that
/// host's session ids.
fn complete_target(global_words: &[OsString], current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    match current.split_once(':') {
        Some((host, prefix)) => session_ids(global_words, host)
            .into_iter()
            .filter(|(id, _)| id.starts_with(prefix))
            .map(|(id, harness)| {
                CompletionCandidate::new(format!("{host}:{id}")).help(Some(harness.into()))
            })
            .collect(),
        None => host_names(global_words)
            .into_iter()
            .filter(|name| name.starts_with(current))
            .map(|name| CompletionCandidate::new(format!("{name}:")).help(Some("host".into())))
            .collect(),
    }
}

/// A host's name as `ls`, `hosts` and `check` take it.
fn complete_host(global_words: &[OsString], current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    host_names(global_words)
        .into_iter()
        .filter(|name| name.starts_with(current.as_ref()))
        .map(|name| CompletionCandidate::new(name).help(Some("host".into())))
        .collect()
}

/// `local`, the hosts file's hosts, and the SSH config's `Host` names without wildcards; a
/// file that cannot be read adds nothing.
fn host_names(global_words: &[OsString]) -> Vec<String> {
    let global = global_args(global_words);
    let mut names = vec!["local".to_string()];
    if let Ok(ctx) = Context::new(&global) {
        names.extend(ctx.hosts_file().names().map(String::from));
    }
    let ssh_config = global
        .ssh_config
        .clone()
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".ssh/config")));
    if let Some(text) = ssh_config.and_then(|path| std::fs::read(path).ok()) {
        names.extend(clankie_host::ssh::config::plain_host_aliases(
            &String::from_utf8_lossy(&text),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|name| seen.insert(name.clone()));
    names
}

/// The session ids of `host`, newest first, with their harness: one listing, given
/// [`SESSION_LISTING_BUDGET`], quiet (no prompt, no line on stderr); nothing on any failure.
fn session_ids(global_words: &[OsString], host: &str) -> Vec<(String, &'static str)> {
    let mut global = global_args(global_words);
    global.timeout = global
        .timeout
        .min(SESSION_LISTING_BUDGET.as_secs_f64())
        .max(0.1);
    global.verbose = false;
    let Ok(ctx) = Context::new(&global) else {
        return Vec::new();
    };
    let ctx = ctx.quiet();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let list = async {
        let opened = ctx.open(host).ok()?;
        let reader = Reader::new(&opened.host);
        let (_, sessions) = reader
            .list_sessions(&roots_for(&opened.roots, None))
            .await
            .ok()?;
        Some(sessions)
    };
    let listing =
        runtime.block_on(async { tokio::time::timeout(SESSION_LISTING_BUDGET, list).await });
    // A connection still open when the budget runs out is abandoned: a plain drop would wait
    // for blocking tasks (an `ssh -G` still running), and the Tab with it.
    runtime.shutdown_background();
    let Ok(Some(mut sessions)) = listing else {
        return Vec::new();
    };
    sessions.sort_by(|a, b| (b.entry.mtime, &a.id).cmp(&(a.entry.mtime, &b.id)));
    let mut seen = std::collections::HashSet::new();
    sessions
        .into_iter()
        .filter(|s| seen.insert(s.id.clone()))
        .map(|s| (s.harness().name(), s.id))
        .map(|(harness, id)| (id, harness))
        .collect()
}

/// bash: clap_complete's adapter, but with the words glued back where bash splits them at `:`
/// and `=`.
struct BashShell;
/// zsh: clap_complete's registration and answer format, with [`candidates`].
struct ZshShell;
/// fish: clap_complete's registration and answer format, with [`candidates`].
struct FishShell;

/// The bash registration. bash splits `devbox:3f1c` into `devbox`, `:`, `3f1c` and
/// `--sort=na` into `--sort`, `=`, `na` (`:` and `=` are in `COMP_WORDBREAKS`), and replaces
/// only the part after the last of them, so the function glues the words back for the binary
/// (where `COMP_LINE` shows no blank between them) and strips what precedes that part from each
/// answer (as bash-completion's `__ltrim_colon_completions` does).
///
/// The word under the cursor is `$2`, the text before the cursor, except when the cursor is
/// right after a `:` or `=`: then bash gives an empty `$2` and `COMP_WORDS` holds the `:` as
/// that word, which must be glued to the host before it (an empty word would complete the
/// options).
const BASH_REGISTRATION: &str = r#"
_clankie_read() {
    local IFS=$'\013'
    local breaks= words=() word raw i blank previous_break=0 is_break line=$COMP_LINE
    [[ $COMP_WORDBREAKS == *:* ]] && breaks+=:
    [[ $COMP_WORDBREAKS == *=* ]] && breaks+==
    for ((i = 0; i <= COMP_CWORD; i++)); do
        raw=${COMP_WORDS[i]}
        blank=0
        if [[ $line == [[:space:]]* ]]; then
            blank=1
            line=${line#"${line%%[![:space:]]*}"}
        fi
        line=${line#"$raw"}
        is_break=0
        [[ -n $breaks && -n $raw && -z ${raw//["$breaks"]/} ]] && is_break=1
        word=$raw
        if ((i == COMP_CWORD && !is_break)) && [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
            word=$2
        fi
        if ((${#words[@]} > 1 && !blank && (is_break || previous_break))); then
            words[${#words[@]}-1]+=$word
        else
            words+=("$word")
        fi
        previous_break=$is_break
    done
    local index=$((${#words[@]} - 1))
    local answers
    answers=$(_CLAP_IFS="$IFS" _CLAP_COMPLETE_INDEX="$index" VAR=bash COMPLETER -- "${words[@]}" 2>/dev/null) || {
        unset COMPREPLY
        return
    }
    COMPREPLY=($answers)
    local typed=${words[index]}
    if [[ -n $breaks && $typed == *["$breaks"]* ]]; then
        local glued=${typed%"${typed##*["$breaks"]}"}
        COMPREPLY=("${COMPREPLY[@]#"$glued"}")
    fi
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *[:=/] ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -o bashdefault -o default -o nosort -F _clankie_read BIN
else
    complete -o bashdefault -o default -F _clankie_read BIN
fi
"#;

/// A word quoted for a POSIX shell (bash, zsh): as is when it needs no quoting.
fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,=:@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The index of the word being completed, as the bash and zsh scripts pass it.
fn index_from_env() -> usize {
    std::env::var("_CLAP_COMPLETE_INDEX")
        .ok()
        .and_then(|i| i.parse().ok())
        .unwrap_or_default()
}

/// What the bash and zsh scripts split the answers on.
fn separator_from_env() -> String {
    std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".into())
}

impl EnvCompleter for BashShell {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn is(&self, name: &str) -> bool {
        name == "bash"
    }
    fn write_registration(
        &self,
        var: &str,
        _name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        let script = BASH_REGISTRATION
            .replace("VAR", var)
            .replace("BIN", &shell_quote(bin))
            .replace("COMPLETER", &shell_quote(completer));
        buf.write_all(script.as_bytes())
    }
    fn write_complete(
        &self,
        // Built anew by `candidates`, with completers that know the line's global options.
        _cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        let found = candidates(args, index_from_env(), current_dir)?;
        let values: Vec<String> = found
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        buf.write_all(values.join(&separator_from_env()).as_bytes())
    }
}

impl EnvCompleter for ZshShell {
    fn name(&self) -> &'static str {
        "zsh"
    }
    fn is(&self, name: &str) -> bool {
        name == "zsh"
    }
    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        clap_complete::env::Zsh.write_registration(var, name, bin, completer, buf)
    }
    fn write_complete(
        &self,
        // Built anew by `candidates`, with completers that know the line's global options.
        _cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        let found = candidates(args, index_from_env(), current_dir)?;
        // `_describe` reads `value:help`: a `:` in the value is escaped.
        let lines: Vec<String> = found
            .iter()
            .map(|c| {
                let value = c
                    .get_value()
                    .to_string_lossy()
                    .replace('\\', r"\\")
                    .replace(':', r"\:");
                match c.get_help() {
                    Some(help) => {
                        let help = help.to_string();
                        let help = help.lines().next().unwrap_or_default().replace('\\', r"\\");
                        format!("{value}:{help}")
                    }
                    None => value,
                }
            })
            .collect();
        buf.write_all(lines.join(&separator_from_env()).as_bytes())
    }
}

impl EnvCompleter for FishShell {
    fn name(&self) -> &'static str {
        "fish"
    }
    fn is(&self, name: &str) -> bool {
        name == "fish"
    }
    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        clap_complete::env::Fish.write_registration(var, name, bin, completer, buf)
    }
    fn write_complete(
        &self,
        // Built anew by `candidates`, with completers that know the line's global options.
        _cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        // fish passes the words before the cursor and then the word under it.
        let index = args.len().saturating_sub(1);
        for candidate in candidates(args, index, current_dir)? {
            write!(buf, "{}", candidate.get_value().to_string_lossy())?;
            if let Some(help) = candidate.get_help() {
                let help = help.to_string();
                write!(buf, "\t{}", help.lines().next().unwrap_or_default())?;
            }
            writeln!(buf)?;
        }
        Ok(())
    }
}

/// How the scripts call the binary back: as it was called to print them, made absolute when
/// it was a path (`./target/debug/clankie-read`), else by name through `PATH`.
fn completer_path() -> String {
    let argv0 = PathBuf::from(std::env::args_os().next().unwrap_or_else(|| BIN.into()));
    let path = if argv0.components().count() > 1 {
        std::env::current_dir()
            .map(|dir| dir.join(&argv0))
            .unwrap_or(argv0)
    } else {
        argv0
    };
    path.to_string_lossy().into_owned()
}

/// The completion script for `shell`.
fn script(shell: CompletionShell) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let completer = completer_path();
    let name = BIN;
    match shell {
        CompletionShell::Bash => {
            BashShell.write_registration(COMPLETE_VAR, name, BIN, &completer, &mut out)?
        }
        CompletionShell::Zsh => {
            ZshShell.write_registration(COMPLETE_VAR, name, BIN, &completer, &mut out)?
        }
        CompletionShell::Fish => {
            FishShell.write_registration(COMPLETE_VAR, name, BIN, &completer, &mut out)?
        }
        CompletionShell::Powershell => {
            clap_complete::generate(Shell::PowerShell, &mut Cli::command(), BIN, &mut out)
        }
    }
    Ok(out)
}

pub(super) fn run(args: CompletionsArgs) -> Result<Outcome, Error> {
    let script = script(args.shell)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&script)?;
    stdout.flush()?;
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_positional_skips_global_options_and_their_values() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            first_positional(&words(&["c", "--root", "claude=/x", "-v", "dev:1"])),
            Some(4)
        );
        assert_eq!(first_positional(&words(&["c", "--color=never"])), None);
        assert_eq!(
            global_words(&words(&["c", "--hosts", "h.toml", "ls", "--ssh-config=s"])),
            words(&["--hosts", "h.toml", "--ssh-config=s"])
        );
    }

    #[test]
    fn every_completed_kind_is_one_kind_takes() {
        for (kind, _) in KINDS {
            let parsed = clankie_engine::filter::RecordFilter::parse(
                &[kind.to_string()],
                None,
                None,
                None,
                jiff::Timestamp::UNIX_EPOCH,
            );
            assert!(parsed.is_ok(), "{kind}");
        }
        let values = |current: &str| -> Vec<String> {
            complete_kinds(OsStr::new(current))
                .iter()
                .map(|c| c.get_value().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            values("user,tool"),
            ["user,tool_call", "user,tool_result", "user,tools"]
        );
        assert_eq!(values("user,a"), ["user,assistant"]);
        assert_eq!(values("user,u"), Vec::<String>::new());
        assert_eq!(values("no"), ["notice"]);
    }

    #[test]
    fn quoting_for_the_scripts() {
        assert_eq!(
            shell_quote("/usr/bin/clankie-read"),
            "/usr/bin/clankie-read"
        );
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
