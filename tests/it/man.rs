//! The man page as `man -l` renders it: every option of every subcommand that clap knows is on
//! it, with the exit statuses, the environment, the files and examples; the only pages it
//! names are pages that exist elsewhere (no `clankie-read-ls(1)`).

use std::process::Command;

use clankie_read::cli::Cli;
use clap::CommandFactory;

use crate::common::require_tool;
use crate::support::{code, run, stderr};

/// The page rendered by `man -l`, as plain text: wide, so that no option is hyphenated or
/// broken across lines, and with groff's typographic dashes made plain.
fn rendered_page() -> Option<String> {
    if !require_tool("man") {
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["man"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = home.path().join("clankie-read.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let rendered = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANWIDTH", "250")
        .env("MANROFFOPT", "-rHY=0")
        .env("LANG", "C.UTF-8")
        .env("MANPAGER", "cat")
        .env_remove("MAN_KEEP_FORMATTING")
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "man -l: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&rendered.stderr),
        "",
        "man -l complained about the page"
    );
    let text = String::from_utf8(rendered.stdout).unwrap();
    Some(text.replace(['\u{2010}', '\u{2212}'], "-"))
}

#[test]
fn every_option_of_every_subcommand_is_on_the_page() {
    let Some(text) = rendered_page() else { return };
    let mut cli = Cli::command();
    cli.build();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || ",[]|<>()".contains(c))
        .collect();
    let mut checked = 0;
    let commands = std::iter::once(&cli).chain(cli.get_subcommands());
    for command in commands {
        if command.get_name() == "help" {
            continue;
        }
        if command.get_name() != cli.get_name() {
            let heading = format!("clankie-read {}", command.get_name());
            assert!(text.contains(&heading), "no section {heading:?}");
        }
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                let flag = format!("--{long}");
                assert!(
                    words.contains(&flag.as_str()),
                    "{}: {flag} is not on the page",
                    command.get_name()
                );
                checked += 1;
            }
            if let Some(short) = arg.get_short() {
                let flag = format!("-{short}");
                assert!(
                    words.contains(&flag.as_str()),
                    "{}: {flag} is not on the page",
                    command.get_name()
                );
            }
        }
    }
    assert!(checked > 40, "only {checked} options checked");
}

#[test]
fn exit_statuses_environment_files_and_examples_are_on_the_page() {
    let Some(text) = rendered_page() else { return };
    for heading in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "GLOBAL OPTIONS",
        "COMMANDS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
        "SEE ALSO",
    ] {
        assert!(
            text.lines().any(|l| l == heading),
            "no {heading} section:\n{text}"
        );
    }
    let section = |name: &str| -> String {
        let start = text.lines().position(|l| l == name).unwrap();
        text.lines()
            .skip(start + 1)
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let exit = section("EXIT STATUS");
    for status in ["0", "1", "2", "3", "4", "5", "6", "75"] {
        assert!(
            exit.lines()
                .any(|l| l.trim_start().starts_with(&format!("{status} "))),
            "exit status {status} is not explained:\n{exit}"
        );
    }
    let environment = section("ENVIRONMENT");
    for var in [
        "CLANKIE_HOSTS",
        "CLANKIE_PAGER",
        "PAGER",
        "NO_COLOR",
        "COLUMNS",
        "LINES",
        "HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "PI_CODING_AGENT_DIR",
        "GEMINI_CLI_HOME",
        "GROK_HOME",
        "XDG_DATA_HOME",
        "OPENCODE_DB",
        "CLANKIE_COMPLETE",
    ] {
        assert!(
            environment
                .lines()
                .any(|l| l.trim() == var || l.trim_start().starts_with(&format!("{var} "))),
            "{var} is not in ENVIRONMENT:\n{environment}"
        );
    }
    let files = section("FILES");
    for file in [
        "~/.config/clankie/hosts.toml",
        "~/.ssh/config",
        "~/.ssh/known_hosts",
    ] {
        assert!(files.contains(file), "{file} is not in FILES:\n{files}");
    }
    assert!(section("EXAMPLES").contains("clankie-read ls devbox"));
}

#[test]
fn the_page_names_no_page_that_does_not_exist() {
    let Some(text) = rendered_page() else { return };
    let reference = regex::Regex::new(r"([A-Za-z0-9_.-]+)\(([1-8])\)").unwrap();
    let named: Vec<String> = reference
        .captures_iter(&text)
        .map(|c| format!("{}({})", &c[1], &c[2]))
        .collect();
    for page in &named {
        assert!(
            ["clankie-read(1)", "ssh(1)", "ssh_config(5)", "less(1)"].contains(&page.as_str()),
            "the page names {page}"
        );
    }
    assert!(named.iter().any(|p| p == "ssh_config(5)"), "{named:?}");
}
