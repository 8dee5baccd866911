//! Aider's histories under a root that holds projects (`--root aider=DIR`), as people keep
//! them: the root's own history and those of projects below it down to four directories, a
//! copied project, a hidden one, hostile and newline names; none from past the bound, from
//! `.git` or `node_modules`, or from behind a symlink out of the root. Listed and read the
//! same locally and over the test sshd, each project one session with its own id.

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Output;

use crate::common::sshd::{Sshd, sshd_or_skip};
use crate::support::{code, ndjson, records, run, stderr};

const HISTORY: &str = ".aider.chat.history.md";

/// A directory name holding a quote, a command substitution, backticks and non-ASCII.
const HOSTILE: &str = "it's \"q\" $(touch pwned) `touch pwned2` ünï";

/// A history of one run whose first prompt is `title`; every history starts in the same second,
/// as a copied project's does.
fn history(title: &str) -> String {
    let started = "# aider chat started at";
    format!(
        "{started} 2026-12-06 03:20:01\n\n> Aider v0.86.2\n> Model: openai/m with whole edit \
         format\n\n#### {title}\n\nThe answer to {title}.\n"
    )
}

/// The project directories (below the root, `""` the root itself) whose histories are listed,
/// each with its history's title.
fn listed_projects() -> Vec<(String, String)> {
    [
        ("", "the root's own"),
        ("app", "the app"),
        ("app-copy", "the app"),
        ("org/team/area/deep", "four down"),
        (".config/nvim", "a hidden project"),
        (HOSTILE, "a hostile name"),
        ("new\nline", "a newline in the name"),
        ("target", "a project named target"),
    ]
    .into_iter()
    .map(|(dir, title)| (dir.to_string(), title.to_string()))
    .collect()
}

/// The histories that are not listed: past the bound, inside what the walk skips, a file of
/// another name, and a directory named like a history.
fn unlisted_files() -> Vec<String> {
    vec![
        format!("org/team/area/deep/five/{HISTORY}"),
        format!(".git/{HISTORY}"),
        format!("web/node_modules/pkg/{HISTORY}"),
        format!("app/.venv/lib/{HISTORY}"),
        format!("app/old{HISTORY}"),
    ]
}

/// Writes the tree under `root` with `put` (a local write, or the sshd's `put_file`), and the
/// symlinks out of it to histories in `outside`.
fn lay_out(root: &Path, outside: &Path, put: &dyn Fn(&Path, &str)) {
    for (dir, title) in listed_projects() {
        put(&root.join(&dir).join(HISTORY), &history(title.as_str()));
    }
    for rel in unlisted_files() {
        put(&root.join(rel), &history("never listed"));
    }
    put(&outside.join(HISTORY), &history("outside the root"));
    put(
        &outside.join("p").join(HISTORY),
        &history("outside the root"),
    );
    std::fs::create_dir_all(root.join(format!("dir/{HISTORY}"))).unwrap();
    let _ = std::fs::remove_file(root.join("escape"));
    symlink(outside, root.join("escape")).unwrap();
    std::fs::create_dir_all(root.join("linked")).unwrap();
    let _ = std::fs::remove_file(root.join("linked").join(HISTORY));
    symlink(outside.join(HISTORY), root.join("linked").join(HISTORY)).unwrap();
}

/// A listed session: its id, title and cwd.
type Listed = (String, String, Option<String>);

/// `ls --json --long` of the aider sessions.
fn listed(out: &Output) -> Vec<Listed> {
    assert_eq!(code(out), 0, "{}", stderr(out));
    ndjson(out)
        .into_iter()
        .filter(|l| l["harness"] == "aider")
        .map(|l| {
            let field = |k: &str| {
                l[k].as_str()
                    .unwrap_or_else(|| panic!("{k}: {l}"))
                    .to_string()
            };
            (
                field("session"),
                field("title"),
                l["cwd"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// Each listed project once, with its title and its directory as cwd (none for a directory
/// whose name holds a newline: a cwd never does), and ids all different.
fn assert_projects(sessions: &[Listed], root: &str) {
    let want: BTreeSet<(String, Option<String>)> = listed_projects()
        .into_iter()
        .map(|(dir, title)| {
            let cwd = if dir.is_empty() {
                Some(root.to_string())
            } else {
                Some(format!("{root}/{dir}")).filter(|_| !dir.contains('\n'))
            };
            (title, cwd)
        })
        .collect();
    let got: BTreeSet<(String, Option<String>)> = sessions
        .iter()
        .map(|(_, title, cwd)| (title.clone(), cwd.clone()))
        .collect();
    assert_eq!(got, want, "{sessions:#?}");
    assert_eq!(sessions.len(), want.len(), "{sessions:#?}");
    let ids: BTreeSet<&str> = sessions.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids.len(), sessions.len(), "ids collide: {sessions:#?}");
    for (id, _, _) in sessions {
        assert!(id.starts_with("aider-20261206-032001-"), "{id}");
    }
}

/// The session whose cwd is `cwd`.
fn id_at<'s>(sessions: &'s [Listed], cwd: &str) -> &'s str {
    &sessions
        .iter()
        .find(|(_, _, c)| c.as_deref() == Some(cwd))
        .unwrap_or_else(|| panic!("no session at {cwd}: {sessions:#?}"))
        .0
}

/// The prompts of a read.
fn prompts(out: &Output) -> Vec<String> {
    assert_eq!(code(out), 0, "{}", stderr(out));
    records(&ndjson(out))
        .iter()
        .filter(|r| r["kind"] == "user")
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn projects_below_a_root_are_each_one_session_down_to_four_directories() {
    let home = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("projects");
    lay_out(&root, &base.path().join("outside"), &|path, text| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    });
    let real = std::fs::canonicalize(&root).unwrap();
    let real = real.to_str().unwrap();
    let spec = format!("aider={}", root.display());
    let out = run(home.path(), &["--root", &spec, "ls", "--json", "--long"]);
    let sessions = listed(&out);
    assert_projects(&sessions, real);
    assert!(!home.path().join("pwned").exists());

    // The same project through a root at it keeps its id; a copy of it has its own.
    let app = id_at(&sessions, &format!("{real}/app"));
    let copy = id_at(&sessions, &format!("{real}/app-copy"));
    assert_ne!(app, copy);
    let nearer = format!("aider={real}/app");
    let out = run(home.path(), &["--root", &nearer, "ls", "--json", "--long"]);
    let alone = listed(&out);
    assert_eq!(alone.len(), 1, "{alone:#?}");
    assert_eq!(alone[0].0, app);

    for cwd in [
        format!("{real}/{HOSTILE}"),
        format!("{real}/org/team/area/deep"),
    ] {
        let id = id_at(&sessions, &cwd);
        let target = format!("local:aider/{id}");
        let out = run(
            home.path(),
            &["--root", &spec, "read", &target, "--all", "--json"],
        );
        let title = &sessions.iter().find(|s| s.0 == id).unwrap().1;
        assert_eq!(prompts(&out), std::slice::from_ref(title), "{cwd}");
    }
}

fn run_ssh(sshd: &Sshd, home: &Path, args: &[&str]) -> Output {
    let mut full = vec!["--ssh-config", sshd.ssh_config().to_str().unwrap()];
    full.extend_from_slice(args);
    crate::support::clankie(home)
        .args(&full)
        .output()
        .expect("run clankie-read")
}

/// Over SSH, from a dash and a busybox-only login: the same sessions, ids and reads as a local
/// listing of the same directory gives.
#[test]
fn projects_below_a_root_list_over_ssh_as_they_do_locally() {
    let Some(sshd) = sshd_or_skip() else { return };
    let home = tempfile::tempdir().unwrap();
    for user in ["ck_dash", "ck_busybox"] {
        let user_home = sshd.home(user);
        let root = user_home.join("aider-tree");
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(user_home.join("aider-outside"));
        lay_out(&root, &user_home.join("aider-outside"), &|path, text| {
            let rel = path.strip_prefix(&user_home).unwrap();
            sshd.put_file(user, rel, text.as_bytes());
        });
        let spec = format!("aider={}", root.display());
        let local = listed(&run(
            home.path(),
            &["--root", &spec, "ls", "--json", "--long"],
        ));
        let real = std::fs::canonicalize(&root).unwrap();
        assert_projects(&local, real.to_str().unwrap());

        let alias = sshd.alias(user);
        let out = run_ssh(
            sshd,
            home.path(),
            &["--root", &spec, "ls", &alias, "--json", "--long"],
        );
        let remote = listed(&out);
        let sorted = |mut v: Vec<Listed>| {
            v.sort();
            v
        };
        assert_eq!(sorted(remote.clone()), sorted(local.clone()), "{user}");
        assert!(!user_home.join("pwned").exists(), "{user}");

        let id = id_at(&remote, &format!("{}/{HOSTILE}", real.display()));
        let target = format!("{alias}:aider/{id}");
        let out = run_ssh(
            sshd,
            home.path(),
            &["--root", &spec, "read", &target, "--all", "--json"],
        );
        assert_eq!(prompts(&out), ["a hostile name"], "{user}");
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(user_home.join("aider-outside"));
    }
}
