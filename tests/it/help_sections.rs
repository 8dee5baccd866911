//! Each subcommand's help: its own options first, the global ones after under their headings,
//! then its examples; a global option that does nothing for it (`--timeout` for `man`) is not
//! shown.

use crate::support::{code, run, stderr};

fn help(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn at(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("no {needle:?} in:\n{text}"))
}

#[test]
fn a_subcommands_own_options_come_first_and_examples_last() {
    for (args, own) in [
        (&["read", "--help"][..], "--tail"),
        (&["ls", "-h"][..], "--modified-within"),
        (&["grep", "--help"][..], "--files-with-matches"),
        (&["hosts", "--help"][..], "--check"),
    ] {
        let text = help(args);
        let own = at(&text, own);
        let globals = at(&text, "Global host options:");
        assert!(own < globals, "{args:?}:\n{text}");
        assert!(globals < at(&text, "--ssh-config"), "{args:?}:\n{text}");
        assert!(at(&text, "Global output options:") < at(&text, "Examples:"));
    }
}

#[test]
fn man_and_completions_show_no_host_option() {
    for args in [&["man", "-h"][..], &["completions", "--help"][..]] {
        let text = help(args);
        for option in ["--timeout", "--ssh-config", "--hosts", "--format"] {
            assert!(!text.contains(option), "{args:?} shows {option}:\n{text}");
        }
        assert!(text.contains("Examples:"), "{text}");
    }
}
