//! A real OpenSSH `sshd` on 127.0.0.1 for the integration tests, and the `ck_*` users it serves.
//!
//! One sshd per test process, started on first use by [`sshd`] (or [`sshd_or_skip`]): its own
//! ed25519 host key, a client key authorized for every test user, a `known_hosts` and an
//! `ssh_config` with one `Host` alias per user, all in a fresh directory under `/tmp`.
//! A watcher process (in its own process group, so Ctrl-C does not kill it first) holds the
//! read end of a pipe whose write end lives in this process; when this process exits for any
//! reason the pipe closes, and the watcher kills sshd and removes the directory.
//!
//! The users are real system users (`/etc/passwd`, homes under `/home/ck_*`), created with
//! `useradd` if absent and shared by every test process on the machine, so:
//! - their setup is idempotent and serialized across processes by a file lock;
//! - homes persist between runs: a test writes under a path no other test uses and does not
//!   assume a home is otherwise empty;
//! - a test that disturbs a user (kills its connections, changes its shell) uses a user of its
//!   own, made with [`Sshd::add_user`].
//!
//! Needs root (CI runs the tests as root) and `.ci/install-deps`.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::{MetadataExt, PermissionsExt, chown, lchown, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use super::{find_tool, in_ci};

const SSHD: &str = "/usr/sbin/sshd";
/// Serializes user creation and rc-file writes across test processes (useradd also takes
/// /etc/passwd's lock, but fails instead of waiting).
const USERS_LOCK: &str = "/tmp/clankie-read-test-users.lock";

/// A test user: its login shell, the rc files written into its home, and which lines those rc
/// files print when sshd runs `<shell> -c '<command>'` (non-interactive, non-login).
pub(crate) struct TestUser {
    pub(crate) name: &'static str,
    /// Program name of the login shell, looked up in /bin then /usr/bin. Unused for
    /// `ck_busybox`, whose login shell is the `sh` applet link in its busybox-only PATH dir.
    pub(crate) shell: &'static str,
    /// (path relative to the home, contents).
    pub(crate) rc_files: &'static [(&'static str, &'static str)],
    /// Lines the rc files print on stdout for every command (verified by `sshd_fixture`).
    pub(crate) stdout_noise: &'static [&'static str],
    /// Lines the rc files print on stderr for every command.
    pub(crate) stderr_noise: &'static [&'static str],
    /// Lines in rc files that such a shell does NOT read for a command (profile and
    /// interactive-only files); they must never appear.
    pub(crate) never_printed: &'static [&'static str],
}

/// The built-in users. Banners name the file they come from, so a test failure says which rc
/// file ran.
pub(crate) const TEST_USERS: &[TestUser] = &[
    TestUser {
        name: "ck_bash",
        shell: "bash",
        rc_files: &[
            // Debian's bash is built with SSH_SOURCE_BASHRC: `bash -c` under sshd reads
            // ~/.bashrc. The profiles are for login shells only.
            (".bashrc", "echo 'BASHRC-BANNER: ck_bash'\n"),
            (
                ".bash_profile",
                "echo 'BASH_PROFILE-BANNER: ck_bash'\n. ~/.bashrc\n",
            ),
            (".profile", "echo 'PROFILE-BANNER: ck_bash'\n"),
        ],
        stdout_noise: &["BASHRC-BANNER: ck_bash"],
        stderr_noise: &[],
        never_printed: &["BASH_PROFILE-BANNER: ck_bash", "PROFILE-BANNER: ck_bash"],
    },
    TestUser {
        name: "ck_dash",
        shell: "dash",
        rc_files: &[(".profile", "echo 'PROFILE-BANNER: ck_dash'\n")],
        stdout_noise: &[],
        stderr_noise: &[],
        never_printed: &["PROFILE-BANNER: ck_dash"],
    },
    TestUser {
        name: "ck_zsh",
        shell: "zsh",
        rc_files: &[
            // zsh reads ~/.zshenv for every invocation, ~/.zshrc for interactive ones only.
            (".zshenv", "echo 'ZSHENV-BANNER: ck_zsh'\n"),
            (".zshrc", "echo 'ZSHRC-BANNER: ck_zsh'\n"),
        ],
        stdout_noise: &["ZSHENV-BANNER: ck_zsh"],
        stderr_noise: &[],
        never_printed: &["ZSHRC-BANNER: ck_zsh"],
    },
    TestUser {
        name: "ck_fish",
        shell: "fish",
        // fish reads config.fish for every invocation, `fish -c` included.
        rc_files: &[(".config/fish/config.fish", "echo 'FISH-BANNER: ck_fish'\n")],
        stdout_noise: &["FISH-BANNER: ck_fish"],
        stderr_noise: &[],
        never_printed: &[],
    },
    TestUser {
        name: "ck_tcsh",
        shell: "tcsh",
        // tcsh reads ~/.tcshrc for every invocation, `tcsh -c` included.
        rc_files: &[(".tcshrc", "echo 'TCSHRC-BANNER: ck_tcsh'\n")],
        stdout_noise: &["TCSHRC-BANNER: ck_tcsh"],
        stderr_noise: &[],
        never_printed: &[],
    },
    TestUser {
        name: "ck_mksh",
        shell: "mksh",
        // mksh reads ~/.mkshrc for interactive shells only.
        rc_files: &[(".mkshrc", "echo 'MKSHRC-BANNER: ck_mksh'\n")],
        stdout_noise: &[],
        stderr_noise: &[],
        never_printed: &["MKSHRC-BANNER: ck_mksh"],
    },
    TestUser {
        name: "ck_yash",
        shell: "yash",
        // yash reads ~/.yashrc for interactive shells only.
        rc_files: &[(".yashrc", "echo 'YASHRC-BANNER: ck_yash'\n")],
        stdout_noise: &[],
        stderr_noise: &[],
        never_printed: &["YASHRC-BANNER: ck_yash"],
    },
    TestUser {
        name: "ck_busybox",
        shell: "busybox",
        // Login shell and every command are busybox applets: see `BUSYBOX_BIN`.
        rc_files: &[],
        stdout_noise: &[],
        stderr_noise: &[],
        never_printed: &[],
    },
    TestUser {
        name: "ck_noisy",
        shell: "bash",
        rc_files: &[(".bashrc", NOISY_BASHRC)],
        stdout_noise: &[
            "NOISY-OUT-1: Welcome to ck_noisy!",
            "NOISY-OUT-2: this banner is on stdout",
            // Printed with no newline after it: whatever the command prints first is glued
            // onto this line, so output framing must not assume it starts at a line start.
            "NOISY-OUT-3: no newline after this",
        ],
        stderr_noise: &["NOISY-ERR-1: and this one", "NOISY-ERR-2: is on stderr"],
        never_printed: &[],
    },
    TestUser {
        name: "ck_clean",
        shell: "bash",
        // Replaces /etc/skel's .bashrc; prints nothing. For benchmarks and exact-output tests.
        rc_files: &[(".bashrc", "# ck_clean: intentionally silent\n")],
        stdout_noise: &[],
        stderr_noise: &[],
        never_printed: &[],
    },
];

/// ck_noisy's ~/.bashrc: banners on stdout and stderr, and a `read` that steals the first line
/// of the command's stdin if it arrives within 0.1 s (bash's `read` takes one byte at a time
/// from a pipe, so it takes exactly one line). It reports what it stole on stderr as
/// `NOISY-READ:<line>`. Verified here (OpenSSH 9.2, bash 5.2, loopback): with the script written
/// to ssh's stdin right away, the first line was stolen in 20 of 20 runs and `sh -s` ran the
/// rest. The `sshd_fixture` test accepts stolen-or-not but never both or neither.
const NOISY_BASHRC: &str = r#"# ck_noisy: a hostile but realistic .bashrc
echo 'NOISY-OUT-1: Welcome to ck_noisy!'
echo 'NOISY-OUT-2: this banner is on stdout'
echo 'NOISY-ERR-1: and this one' >&2
echo 'NOISY-ERR-2: is on stderr' >&2
if read -r -t 0.1 ck_stolen; then
    printf 'NOISY-READ:%s\n' "$ck_stolen" >&2
fi
printf '%s' 'NOISY-OUT-3: no newline after this'
"#;

/// Login shells that accept the command and then misbehave, for the time-bound tests
/// (`tests/it/hostile.rs`); [`Sshd::add_hostile_user`] makes a user with one. Each keeps running
/// only while its connection lives (it polls its parent, sshd's session process), so a test
/// leaves nothing behind however it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hostile {
    /// Reads the script on stdin to its end, then prints nothing and never exits.
    Silent,
    /// Reads the script, prints the BEGIN line of the reply's frame (with the script's own
    /// nonce), then one byte a second, for ever: never the END line.
    Drip,
    /// A plain `sh` while `~/stall` does not exist; [`Hostile::Silent`] while it does (a host
    /// that answers, then stalls).
    StallOnFlag,
}

impl Hostile {
    /// The login shell's script.
    pub(crate) fn script(self) -> &'static str {
        match self {
            Hostile::Silent => SILENT_SHELL,
            Hostile::Drip => DRIP_SHELL,
            Hostile::StallOnFlag => STALL_ON_FLAG_SHELL,
        }
    }
}

const SILENT_SHELL: &str = r#"#!/bin/sh
# A hostile login shell (tests/it/common/sshd.rs, Hostile::Silent): takes the command and its
# stdin, then says nothing until the connection is gone.
cat >/dev/null
while kill -0 "$PPID" 2>/dev/null; do sleep 1; done
"#;

const DRIP_SHELL: &str = r#"#!/bin/sh
# A hostile login shell (tests/it/common/sshd.rs, Hostile::Drip): reads the script, opens the
# reply's frame with the script's own nonce (its line N='…'), then drips a byte a second.
# The script: in the command (`sh -c 'eval "$(printf "…")"'`, crates/host/src/ssh/inline.rs),
# whose printf is run alone, else on stdin.
h="sh -c 'eval \"\$(" t=")\"'"
case $2 in "$h"*"$t") c=${2#"$h"}; s=$(eval "${c%"$t"}") ;; *) s=$(cat) ;; esac
n=$(printf '%s\n' "$s" | sed -n "s/^N='\([0-9a-f]*\)'\$/\1/p")
printf '%s:BEGIN Linux
' "$n"
while kill -0 "$PPID" 2>/dev/null; do
    printf 'x' || exit 0
    sleep 1
done
"#;

const STALL_ON_FLAG_SHELL: &str = r#"#!/bin/sh
# A hostile login shell (tests/it/common/sshd.rs, Hostile::StallOnFlag): a plain sh, except
# that while ~/stall exists it takes the command and says nothing until the connection is gone.
if [ -e "$HOME/stall" ]; then
    cat >/dev/null
    while kill -0 "$PPID" 2>/dev/null; do sleep 1; done
    exit 0
fi
exec /bin/sh "$@"
"#;

/// Directory (relative to ck_busybox's home) holding only symlinks to busybox, one per applet.
/// ck_busybox's `~/.ssh/environment` sets PATH to it and its login shell is its `sh` link.
pub(crate) const BUSYBOX_BIN: &str = ".ck-busybox-bin";

/// The running test sshd. See the module doc.
pub(crate) struct Sshd {
    dir: PathBuf,
    port: u16,
    ssh_config: PathBuf,
    known_hosts: PathBuf,
    identity: PathBuf,
    public_key: String,
    users: Vec<&'static str>,
    /// Users added with `add_user`, in order; `ssh_config` is rewritten when one is added.
    added: Mutex<Vec<String>>,
    /// Never waited on, so sshd's pid cannot be reused while this process lives.
    listener: Child,
    /// Dropping it (at process exit) tells the watcher to kill sshd.
    _watcher_pipe: ChildStdin,
    _watcher: Child,
}

static INSTANCE: OnceLock<Result<Sshd, String>> = OnceLock::new();

/// The test sshd, started on first use. Panics with the reason if it cannot run.
pub(crate) fn sshd() -> &'static Sshd {
    match INSTANCE.get_or_init(start) {
        Ok(sshd) => sshd,
        Err(why) => panic!("the test sshd is unavailable: {why}"),
    }
}

/// The test sshd, or `None` (after saying why on stderr) when it cannot run here — not root, or
/// OpenSSH not installed. Under `CI=true` that panics instead. Use as
/// `let Some(sshd) = sshd_or_skip() else { return };`.
pub(crate) fn sshd_or_skip() -> Option<&'static Sshd> {
    match INSTANCE.get_or_init(start) {
        Ok(sshd) => Some(sshd),
        Err(why) => {
            super::skip_or_panic(&format!("the test sshd is unavailable: {why}"));
            None
        }
    }
}

impl Sshd {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// An ssh_config(5) with a `Host` alias per user (see [`Sshd::alias`]).
    pub(crate) fn ssh_config(&self) -> &Path {
        &self.ssh_config
    }

    /// `[127.0.0.1]:PORT ssh-ed25519 …`, the only host key the aliases accept.
    pub(crate) fn known_hosts(&self) -> &Path {
        &self.known_hosts
    }

    /// The client's private key (ed25519, no passphrase), authorized for every test user.
    pub(crate) fn identity(&self) -> &Path {
        &self.identity
    }

    /// The per-process directory holding keys, configs and sshd's log (`sshd.log`).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `ssh_config` alias for `user`: `ck_bash` → `ck-bash`.
    pub(crate) fn alias(&self, user: &str) -> String {
        user.replace('_', "-")
    }

    /// The user's home directory, `/home/<user>`.
    pub(crate) fn home(&self, user: &str) -> PathBuf {
        home_of(user)
    }

    /// The built-in users whose shells are installed here (all of them after
    /// `.ci/install-deps`; under `CI=true` a missing one fails the start).
    pub(crate) fn users(&self) -> &[&'static str] {
        &self.users
    }

    /// The OpenSSH client, set up for `user`: `ssh -F <ssh_config> <alias>`. Append the remote
    /// command (keep it to plain words, e.g. `sh -s`; the login shell parses it).
    pub(crate) fn ssh(&self, user: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.arg("-F").arg(&self.ssh_config).arg(self.alias(user));
        cmd
    }

    /// sshd's own log so far (`-e`, `LogLevel ERROR`), for failure messages.
    pub(crate) fn log(&self) -> String {
        fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    /// Writes `bytes` to `home(user)/rel_path`, creating the directories between, and makes
    /// everything it creates (and the file) owned by the user, so the user's shell can `cd -P`
    /// into it and read it as it would its own transcripts. Returns the absolute path.
    pub(crate) fn put_file(&self, user: &str, rel_path: impl AsRef<Path>, bytes: &[u8]) -> PathBuf {
        let rel_path = rel_path.as_ref();
        assert!(
            rel_path.is_relative()
                && rel_path
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_))),
            "put_file wants a plain relative path, got {rel_path:?}"
        );
        let account = lookup_user(user)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no such user {user}"));
        let path = account.home.join(rel_path);
        write_owned(&account, &path, bytes, 0o644).unwrap_or_else(|e| panic!("{e}"));
        path
    }

    /// Creates (or updates) user `name` — it must start with `ck_` — with login shell `shell`,
    /// authorizes the test key for it, and adds its alias to `ssh_config`. Returns the alias.
    /// The user is system-wide: choose a name no other test uses.
    pub(crate) fn add_user(&self, name: &str, shell: &Path) -> String {
        assert!(
            name.starts_with("ck_") && name.len() <= 32,
            "test user names start with ck_ and fit useradd: {name:?}"
        );
        let mut added = self.added.lock().unwrap_or_else(|e| e.into_inner());
        with_users_lock(|| ensure_user(name, shell).map(|_| ())).unwrap_or_else(|e| panic!("{e}"));
        self.authorize(name).unwrap_or_else(|e| panic!("{e}"));
        if !added.iter().any(|u| u == name) && !self.users.contains(&name) {
            added.push(name.to_owned());
            self.write_ssh_config(&added)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        self.alias(name)
    }

    /// Like [`Sshd::add_user`], with a login shell that is `script` (it should start with a
    /// `#!` line), stored as `home(name)/.ck-login-shell`.
    pub(crate) fn add_script_user(&self, name: &str, script: &str) -> String {
        let shell = home_of(name).join(".ck-login-shell");
        // The user must exist before its home does, and useradd accepts a shell that does not
        // exist yet; `add_user` creates the user, then the script is put in place.
        let alias = self.add_user(name, &shell);
        let account = lookup_user(name)
            .and_then(|a| a.ok_or_else(|| format!("user {name} vanished")))
            .unwrap_or_else(|e| panic!("{e}"));
        with_users_lock(|| write_owned(&account, &shell, script.as_bytes(), 0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        alias
    }

    /// [`Sshd::add_script_user`] with a [`Hostile`] login shell. Returns the alias.
    pub(crate) fn add_hostile_user(&self, name: &str, kind: Hostile) -> String {
        self.add_script_user(name, kind.script())
    }

    /// Kills every connection this sshd is serving for `user` — the privileged monitor, the
    /// user's session process and the commands under it — with SIGKILL, as a dropped
    /// connection would end them. Returns how many connections it killed. Connections to
    /// other test processes' sshds are left alone.
    pub(crate) fn kill_connections_of(&self, user: &str) -> usize {
        let account = lookup_user(user)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no such user {user}"));
        let procs = processes();
        let is_sshd = |comm: &str| comm == "sshd" || comm == "sshd-session";
        let listener = self.listener.id();
        // Connections are children of the listener: per connection a root-owned monitor
        // ("sshd: ck_x [priv]"), under it the session process running as the user
        // ("sshd: ck_x@notty"), under that the user's shell. OpenSSH 9.8+ names the
        // per-connection binary sshd-session.
        let monitors: Vec<u32> = procs
            .iter()
            .filter(|(_, p)| p.ppid == listener && is_sshd(&p.comm))
            .filter(|(pid, _)| {
                procs.iter().any(|(_, child)| {
                    child.ppid == **pid && child.uid == account.uid && is_sshd(&child.comm)
                })
            })
            .map(|(pid, _)| *pid)
            .collect();
        let mut doomed = Vec::new();
        for monitor in &monitors {
            collect_subtree(&procs, *monitor, &mut doomed);
        }
        if !doomed.is_empty() {
            // Whatever already exited is fine, so the status is not checked.
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(doomed.iter().map(u32::to_string))
                .stderr(Stdio::null())
                .status();
        }
        monitors.len()
    }

    /// Kills the shells (`sh`) this sshd's sessions run as `user`, leaving the connections
    /// up. Returns how many it killed.
    pub(crate) fn kill_shells_of(&self, user: &str) -> usize {
        let account = lookup_user(user)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no such user {user}"));
        let procs = processes();
        let mut below = Vec::new();
        collect_subtree(&procs, self.listener.id(), &mut below);
        let shells: Vec<u32> = below
            .into_iter()
            .filter(|pid| {
                procs
                    .get(pid)
                    .is_some_and(|p| p.uid == account.uid && p.comm == "sh")
            })
            .collect();
        if !shells.is_empty() {
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(shells.iter().map(u32::to_string))
                .stderr(Stdio::null())
                .status();
        }
        shells.len()
    }

    fn authorize(&self, user: &str) -> Result<(), String> {
        let path = self.dir.join("authorized_keys").join(user);
        fs::write(&path, format!("{}\n", self.public_key)).map_err(|e| io_err(&path, e))?;
        // sshd reads authorized_keys as the user.
        set_mode(&path, 0o644)
    }

    fn write_ssh_config(&self, added: &[String]) -> Result<(), String> {
        let mut text = format!(
            "# The test sshd of one test process (tests/it/common/sshd.rs), 127.0.0.1:{}\n",
            self.port
        );
        for user in self
            .users
            .iter()
            .copied()
            .chain(added.iter().map(String::as_str))
        {
            text.push_str(&format!(
                "\nHost {alias}\n    HostName 127.0.0.1\n    Port {port}\n    User {user}\n    \
                 IdentityFile {identity}\n    IdentitiesOnly yes\n    UserKnownHostsFile \
                 {known_hosts}\n    GlobalKnownHostsFile /dev/null\n    StrictHostKeyChecking \
                 yes\n    BatchMode yes\n    LogLevel ERROR\n",
                alias = self.alias(user),
                port = self.port,
                identity = self.identity.display(),
                known_hosts = self.known_hosts.display(),
            ));
        }
        // ssh clients may be reading it right now: replace it atomically.
        write_atomic(&self.ssh_config, text.as_bytes())
    }
}

fn start() -> Result<Sshd, String> {
    // /proc/self belongs to our effective uid.
    let euid = fs::metadata("/proc/self")
        .map_err(|e| io_err("/proc/self", e))?
        .uid();
    if euid != 0 {
        return Err(format!("it needs root to create users (euid is {euid})"));
    }
    for tool in [SSHD, "ssh", "ssh-keygen", "useradd", "usermod", "kill"] {
        if find_tool(tool).is_none() {
            return Err(format!("`{tool}` is not installed (run .ci/install-deps)"));
        }
    }

    // Under /tmp rather than $TMPDIR: sshd reads authorized_keys as the user, who must be able
    // to traverse every directory above it.
    let dir = tempfile::Builder::new()
        .prefix("ck-sshd-")
        .tempdir_in("/tmp")
        .map_err(|e| format!("creating a temp dir in /tmp: {e}"))?
        .keep();
    set_mode(&dir, 0o755)?;
    let keys = dir.join("authorized_keys");
    fs::create_dir(&keys).map_err(|e| io_err(&keys, e))?;
    set_mode(&keys, 0o755)?;

    let host_key = dir.join("ssh_host_ed25519_key");
    let identity = dir.join("id_ed25519");
    keygen(&host_key, "ck-test-sshd")?;
    keygen(&identity, "ck-test-client")?;
    let public_key = read_public_key(&identity)?;
    let host_public_key = read_public_key(&host_key)?;

    let users = with_users_lock(setup_builtin_users)?;

    // sshd's privilege-separation directory; it refuses to start without it.
    fs::create_dir_all("/run/sshd").map_err(|e| io_err("/run/sshd", e))?;

    let (listener, port) = spawn_sshd(&dir, &host_key)?;
    let watcher = spawn_watcher(&dir, listener.id());
    let (watcher, watcher_pipe) = match watcher {
        Ok(w) => w,
        Err(e) => {
            let mut listener = listener;
            let _ = listener.kill();
            return Err(e);
        }
    };

    let known_hosts = dir.join("known_hosts");
    fs::write(
        &known_hosts,
        format!("[127.0.0.1]:{port} {host_public_key}\n"),
    )
    .map_err(|e| io_err(&known_hosts, e))?;
    let sshd = Sshd {
        ssh_config: dir.join("ssh_config"),
        known_hosts,
        identity,
        public_key,
        port,
        users,
        added: Mutex::new(Vec::new()),
        listener,
        _watcher_pipe: watcher_pipe,
        _watcher: watcher,
        dir,
    };
    for user in &sshd.users {
        sshd.authorize(user)?;
    }
    sshd.write_ssh_config(&[])?;
    Ok(sshd)
}

fn keygen(path: &Path, comment: &str) -> Result<(), String> {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path))
}

/// `<type> <base64>` from `<path>.pub`, without the comment.
fn read_public_key(private: &Path) -> Result<String, String> {
    let path = private.with_extension("pub");
    let text = fs::read_to_string(&path).map_err(|e| io_err(&path, e))?;
    let fields: Vec<&str> = text.split_whitespace().take(2).collect();
    match fields.as_slice() {
        [kind, key] => Ok(format!("{kind} {key}")),
        _ => Err(format!("{}: not a public key: {text:?}", path.display())),
    }
}

fn sshd_config(dir: &Path, host_key: &Path, port: u16, penalties_keyword: bool) -> String {
    let d = dir.display();
    let mut text = format!(
        "# Written by tests/it/common/sshd.rs\n\
         ListenAddress 127.0.0.1\n\
         Port {port}\n\
         HostKey {host_key}\n\
         PidFile {d}/sshd.pid\n\
         AuthorizedKeysFile {d}/authorized_keys/%u\n\
         AllowUsers ck_*\n\
         PermitRootLogin no\n\
         UsePAM no\n\
         StrictModes no\n\
         PermitUserEnvironment yes\n\
         MaxSessions 10\n\
         MaxStartups 100\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         X11Forwarding no\n\
         Subsystem sftp internal-sftp\n\
         LogLevel ERROR\n",
        host_key = host_key.display(),
    );
    if penalties_keyword {
        // OpenSSH 9.8+ blocks a source address for a while after "crashes" (such as the
        // connections `kill_connections_of` kills) and auth failures; every test comes from
        // 127.0.0.1.
        text.push_str("PerSourcePenalties no\n");
    }
    text
}

/// Starts sshd on a free port; retries if another process takes the port first.
fn spawn_sshd(dir: &Path, host_key: &Path) -> Result<(Child, u16), String> {
    let config = dir.join("sshd_config");
    let log_path = dir.join("sshd.log");
    let pid_file = dir.join("sshd.pid");
    // Older sshd (Debian 12 has 9.2) rejects the PerSourcePenalties keyword: probe with -t.
    let mut penalties = true;
    let mut last_error = String::new();
    for _attempt in 0..5 {
        let port = free_port()?;
        write_atomic(
            &config,
            sshd_config(dir, host_key, port, penalties).as_bytes(),
        )?;
        let check = Command::new(SSHD)
            .arg("-t")
            .arg("-f")
            .arg(&config)
            .output()
            .map_err(|e| format!("running {SSHD} -t: {e}"))?;
        if !check.status.success() {
            let stderr = String::from_utf8_lossy(&check.stderr);
            if penalties && stderr.contains("PerSourcePenalties") {
                penalties = false;
                write_atomic(&config, sshd_config(dir, host_key, port, false).as_bytes())?;
            } else {
                return Err(format!("{SSHD} -t rejected {}: {stderr}", config.display()));
            }
        }
        let log = File::create(&log_path).map_err(|e| io_err(&log_path, e))?;
        let _ = fs::remove_file(&pid_file);
        let mut child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawning {SSHD}: {e}"))?;
        // sshd writes its PidFile once it is listening.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                last_error = format!(
                    "{SSHD} exited ({status}) on port {port}: {}",
                    fs::read_to_string(&log_path).unwrap_or_default()
                );
                break;
            }
            let pid = fs::read_to_string(&pid_file).unwrap_or_default();
            if pid.trim() == child.id().to_string() {
                return Ok((child, port));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{SSHD} did not write {} within 10 s: {}",
                    pid_file.display(),
                    fs::read_to_string(&log_path).unwrap_or_default()
                ));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
    Err(last_error)
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("binding 127.0.0.1:0: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

/// A shell that waits for EOF on stdin — our process exiting, however it exits — then kills
/// sshd (if that pid is still our sshd) and removes the temp dir.
fn spawn_watcher(dir: &Path, sshd_pid: u32) -> Result<(Child, ChildStdin), String> {
    use std::os::unix::process::CommandExt;
    const SCRIPT: &str = r#"
trap '' INT HUP QUIT
cat >/dev/null
if tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2/sshd_config"; then
    kill -TERM "$1"
fi
rm -rf -- "$2"
"#;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg("ck-sshd-watcher")
        .arg(sshd_pid.to_string())
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C to the test run must not kill it before it cleans up.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("spawning the sshd watcher: {e}"))?;
    let pipe = child.stdin.take().expect("piped stdin");
    Ok((child, pipe))
}

fn setup_builtin_users() -> Result<Vec<&'static str>, String> {
    let mut ready = Vec::new();
    for user in TEST_USERS {
        if user.name == "ck_busybox" {
            let Some(busybox) = find_tool("busybox") else {
                missing_shell(user.name, "busybox")?;
                continue;
            };
            setup_busybox_user(user.name, &busybox)?;
            ready.push(user.name);
            continue;
        }
        let Some(shell) = find_shell(user.shell) else {
            missing_shell(user.name, user.shell)?;
            continue;
        };
        let account = ensure_user(user.name, &shell)?;
        for (rel, contents) in user.rc_files {
            write_owned(
                &account,
                &account.home.join(rel),
                contents.as_bytes(),
                0o644,
            )?;
        }
        ready.push(user.name);
    }
    Ok(ready)
}

fn missing_shell(user: &str, shell: &str) -> Result<(), String> {
    if in_ci() {
        return Err(format!(
            "{shell} is not installed, so {user} cannot be set up"
        ));
    }
    eprintln!("test sshd: {shell} is not installed; user {user} is left out");
    Ok(())
}

fn find_shell(name: &str) -> Option<PathBuf> {
    ["/bin", "/usr/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
}

/// ck_busybox: a directory of busybox applet links is both its login shell (`sh`) and,
/// through `~/.ssh/environment`, its whole PATH.
fn setup_busybox_user(name: &str, busybox: &Path) -> Result<(), String> {
    let busybox = fs::canonicalize(busybox).map_err(|e| io_err(busybox, e))?;
    let bin = home_of(name).join(BUSYBOX_BIN);
    let account = ensure_user(name, &bin.join("sh"))?;
    mkdirs_owned(&account, &bin)?;
    let list = Command::new(&busybox)
        .arg("--list")
        .output()
        .map_err(|e| format!("{} --list: {e}", busybox.display()))?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let link = bin.join(applet);
        if fs::read_link(&link).is_ok_and(|target| target == busybox) {
            continue;
        }
        let _ = fs::remove_file(&link);
        symlink(&busybox, &link).map_err(|e| io_err(&link, e))?;
        lchown(&link, Some(account.uid), Some(account.gid)).map_err(|e| io_err(&link, e))?;
    }
    let environment = format!("PATH={}\n", bin.display());
    write_owned(
        &account,
        &account.home.join(".ssh/environment"),
        environment.as_bytes(),
        0o600,
    )
}

/// Runs `f` holding the cross-process lock on user setup.
fn with_users_lock<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(USERS_LOCK)
        .map_err(|e| io_err(USERS_LOCK, e))?;
    lock.lock().map_err(|e| io_err(USERS_LOCK, e))?;
    let result = f();
    let _ = lock.unlock();
    result
}

#[derive(Clone, Debug)]
struct Account {
    uid: u32,
    gid: u32,
    home: PathBuf,
    shell: PathBuf,
}

fn home_of(user: &str) -> PathBuf {
    Path::new("/home").join(user)
}

fn lookup_user(name: &str) -> Result<Option<Account>, String> {
    let passwd = fs::read_to_string("/etc/passwd").map_err(|e| io_err("/etc/passwd", e))?;
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() == 7 && fields[0] == name {
            let number = |s: &str| {
                s.parse::<u32>()
                    .map_err(|_| format!("/etc/passwd: bad line {line:?}"))
            };
            return Ok(Some(Account {
                uid: number(fields[2])?,
                gid: number(fields[3])?,
                home: PathBuf::from(fields[5]),
                shell: PathBuf::from(fields[6]),
            }));
        }
    }
    Ok(None)
}

/// Makes `name` exist with home `/home/<name>` and login shell `shell`, and makes sshd willing
/// to log it in. Call with the users lock held.
fn ensure_user(name: &str, shell: &Path) -> Result<Account, String> {
    let home = home_of(name);
    if lookup_user(name)?.is_none() {
        run(Command::new("useradd")
            .arg("--create-home")
            .arg("--home-dir")
            .arg(&home)
            .arg("--shell")
            .arg(shell)
            .arg(name))?;
    }
    let mut account = lookup_user(name)?.ok_or_else(|| format!("useradd did not create {name}"))?;
    if account.shell != shell || account.home != home {
        run(Command::new("usermod")
            .arg("--shell")
            .arg(shell)
            .arg("--home")
            .arg(&home)
            .arg(name))?;
        account.shell = shell.to_owned();
        account.home = home.clone();
    }
    // With UsePAM no, sshd refuses accounts whose password field starts with "!" ("account is
    // locked"), which is how useradd leaves them. "*" means no password, without locking.
    let shadow = fs::read_to_string("/etc/shadow").map_err(|e| io_err("/etc/shadow", e))?;
    let locked = shadow
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .is_some_and(|rest| rest.starts_with('!'));
    if locked {
        run(Command::new("usermod").args(["--password", "*", name]))?;
    }
    if !home.is_dir() {
        mkdirs_owned(&account, &home)?;
    }
    Ok(account)
}

/// Creates `dir` and any missing parents inside the account's home, owned by the account.
fn mkdirs_owned(account: &Account, dir: &Path) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut cur = dir;
    while !cur.is_dir() {
        missing.push(cur.to_owned());
        cur = cur
            .parent()
            .ok_or_else(|| format!("{}: no existing parent", dir.display()))?;
    }
    for d in missing.iter().rev() {
        match fs::create_dir(d) {
            Ok(()) => {}
            // Another thread of this process may have made it meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err(d, e)),
        }
        if d.starts_with(&account.home) {
            chown(d, Some(account.uid), Some(account.gid)).map_err(|e| io_err(d, e))?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` (atomically, and only if it differs), owned by the account.
fn write_owned(account: &Account, path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let parent = path
        .parent()
        .ok_or_else(|| format!("{}: no parent", path.display()))?;
    mkdirs_owned(account, parent)?;
    let same = fs::read(path).is_ok_and(|old| old == bytes)
        && fs::metadata(path).is_ok_and(|m| {
            m.uid() == account.uid && m.gid() == account.gid && m.mode() & 0o7777 == mode
        });
    if same {
        return Ok(());
    }
    let tmp = temp_sibling(path);
    fs::write(&tmp, bytes).map_err(|e| io_err(&tmp, e))?;
    set_mode(&tmp, mode)?;
    chown(&tmp, Some(account.uid), Some(account.gid)).map_err(|e| io_err(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| io_err(path, e))
}

/// Replaces `path` with `bytes` so that a concurrent reader sees the old or the new contents.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = temp_sibling(path);
    fs::write(&tmp, bytes).map_err(|e| io_err(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| io_err(path, e))
}

fn temp_sibling(path: &Path) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".ck-tmp-{}-{n}", std::process::id()));
    path.with_file_name(name)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), String> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| io_err(path, e))
}

/// Runs a setup command; a failure is an error carrying its stderr.
fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn io_err(path: impl AsRef<Path>, e: std::io::Error) -> String {
    format!("{}: {e}", path.as_ref().display())
}

struct Proc {
    ppid: u32,
    uid: u32,
    comm: String,
}

/// A snapshot of /proc: pid → parent, real uid, command name.
fn processes() -> HashMap<u32, Proc> {
    let mut procs = HashMap::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return procs;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // Processes come and go while we look; skip the ones that went.
        let (Ok(stat), Ok(status)) = (
            read_small(&entry.path().join("stat")),
            read_small(&entry.path().join("status")),
        ) else {
            continue;
        };
        // stat is "pid (comm) state ppid …"; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_owned();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok());
        // The owner of /proc/<pid> is not reliable (non-dumpable processes show as root), so
        // take the real uid from status.
        let uid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|s| s.parse().ok());
        if let (Some(ppid), Some(uid)) = (ppid, uid) {
            procs.insert(pid, Proc { ppid, uid, comm });
        }
    }
    procs
}

fn read_small(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

fn collect_subtree(procs: &HashMap<u32, Proc>, root: u32, out: &mut Vec<u32>) {
    out.push(root);
    for (pid, p) in procs {
        if p.ppid == root {
            collect_subtree(procs, *pid, out);
        }
    }
}

/// Another sshd serving the same users as the shared one (their authorized keys, the same client
/// identity), offering exactly the host keys it was started with: for the host-key tests, which
/// need servers with keys of chosen types. Made by [`Sshd::start_with_host_keys`]; killed on
/// drop (and, should this process die first, by its watcher).
pub(crate) struct KeyedSshd {
    port: u16,
    child: Child,
    _watcher_pipe: ChildStdin,
    _watcher: Child,
}

impl KeyedSshd {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for KeyedSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    /// Starts an sshd on a free port of 127.0.0.1 offering the host keys at `host_keys`
    /// (private key files, mode 0600, e.g. from `ssh-keygen`), in that order, for the same
    /// users and with the same authorized keys as this one.
    pub(crate) fn start_with_host_keys(&self, host_keys: &[&Path]) -> KeyedSshd {
        self.start_with_host_certificates(host_keys, &[])
    }

    /// [`Sshd::start_with_host_keys`], also presenting the host certificates at `certificates`
    /// (`ssh-keygen -s CA -h` output, each for one of the keys).
    pub(crate) fn start_with_host_certificates(
        &self,
        host_keys: &[&Path],
        certificates: &[&Path],
    ) -> KeyedSshd {
        let dir = self.dir.join(format!(
            "keyed-{}",
            host_keys_dir_counter().fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}", io_err(&dir, e)));
        let config = dir.join("sshd_config");
        let pid_file = dir.join("sshd.pid");
        let log_path = dir.join("sshd.log");
        let mut penalties = true;
        let mut last_error = String::new();
        for _attempt in 0..5 {
            let port = free_port().unwrap_or_else(|e| panic!("{e}"));
            let mut text = format!(
                "# Written by tests/it/common/sshd.rs (start_with_host_keys)\n\
                 ListenAddress 127.0.0.1\nPort {port}\nPidFile {pid}\n\
                 AuthorizedKeysFile {main}/authorized_keys/%u\nAllowUsers ck_*\n\
                 PermitRootLogin no\nUsePAM no\nStrictModes no\nPermitUserEnvironment yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nPrintMotd no\n\
                 PrintLastLog no\nX11Forwarding no\nLogLevel ERROR\n",
                pid = pid_file.display(),
                main = self.dir.display(),
            );
            for key in host_keys {
                text.push_str(&format!("HostKey {}\n", key.display()));
            }
            for certificate in certificates {
                text.push_str(&format!("HostCertificate {}\n", certificate.display()));
            }
            if penalties {
                // See `sshd_config`: refused host keys are failed connections to sshd 9.8+.
                text.push_str("PerSourcePenalties no\n");
            }
            write_atomic(&config, text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            let check = Command::new(SSHD)
                .arg("-t")
                .arg("-f")
                .arg(&config)
                .output()
                .unwrap_or_else(|e| panic!("running {SSHD} -t: {e}"));
            if !check.status.success() {
                let stderr = String::from_utf8_lossy(&check.stderr);
                if penalties && stderr.contains("PerSourcePenalties") {
                    penalties = false;
                    continue;
                }
                panic!("{SSHD} -t rejected {}: {stderr}", config.display());
            }
            let log =
                File::create(&log_path).unwrap_or_else(|e| panic!("{}", io_err(&log_path, e)));
            let _ = fs::remove_file(&pid_file);
            let mut child = Command::new(SSHD)
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("spawning {SSHD}: {e}"));
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last_error = format!(
                        "{SSHD} exited ({status}) on port {port}: {}",
                        fs::read_to_string(&log_path).unwrap_or_default()
                    );
                    break;
                }
                let pid = fs::read_to_string(&pid_file).unwrap_or_default();
                if pid.trim() == child.id().to_string() {
                    let (watcher, pipe) =
                        spawn_watcher(&dir, child.id()).unwrap_or_else(|e| panic!("{e}"));
                    return KeyedSshd {
                        port,
                        child,
                        _watcher_pipe: pipe,
                        _watcher: watcher,
                    };
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{SSHD} did not write {} within 10 s: {}",
                        pid_file.display(),
                        fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
                thread::sleep(Duration::from_millis(10));
            }
        }
        panic!("{last_error}");
    }
}

fn host_keys_dir_counter() -> &'static std::sync::atomic::AtomicU64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    &COUNTER
}

/// Directory (relative to ck_toybox's home) holding only symlinks to toybox, one per applet,
/// and `sh`, a link to the login shell `/bin/sh`: toybox 0.8.9 (Debian 12) has no shell of its
/// own, and Android, whose userland toybox is, pairs it with mksh as `sh` the same way.
/// ck_toybox's `~/.ssh/environment` sets PATH to it.
pub(crate) const TOYBOX_BIN: &str = ".ck-toybox-bin";

/// The toybox-only user: a PATH of toybox applets and `/bin/sh` (see [`TOYBOX_BIN`]).
pub(crate) const TOYBOX_USER: &str = "ck_toybox";

impl Sshd {
    /// Makes (or refreshes) [`TOYBOX_USER`] and returns its alias; `None` (after saying why)
    /// when toybox is not installed, which under `CI=true` panics instead.
    pub(crate) fn toybox_user(&self) -> Option<String> {
        let Some(toybox) = find_tool("toybox") else {
            super::skip_or_panic("toybox is not installed (.ci/install-deps installs it)");
            return None;
        };
        let alias = self.add_user(TOYBOX_USER, Path::new("/bin/sh"));
        with_users_lock(|| setup_toybox_bin(&toybox)).unwrap_or_else(|e| panic!("{e}"));
        Some(alias)
    }
}

/// Fills ck_toybox's [`TOYBOX_BIN`] and points its PATH there. Call with the users lock held.
fn setup_toybox_bin(toybox: &Path) -> Result<(), String> {
    let toybox = fs::canonicalize(toybox).map_err(|e| io_err(toybox, e))?;
    let account = lookup_user(TOYBOX_USER)?.ok_or_else(|| format!("no user {TOYBOX_USER}"))?;
    let bin = account.home.join(TOYBOX_BIN);
    mkdirs_owned(&account, &bin)?;
    // `toybox` with no arguments lists its applets, space-separated.
    let list = Command::new(&toybox)
        .output()
        .map_err(|e| format!("{}: {e}", toybox.display()))?;
    let applets = String::from_utf8_lossy(&list.stdout).into_owned();
    let links = applets
        .split_whitespace()
        .map(|applet| (applet, toybox.as_path()))
        .chain([("sh", Path::new("/bin/sh"))]);
    for (name, target) in links {
        let link = bin.join(name);
        if fs::read_link(&link).is_ok_and(|t| t == target) {
            continue;
        }
        let _ = fs::remove_file(&link);
        symlink(target, &link).map_err(|e| io_err(&link, e))?;
        lchown(&link, Some(account.uid), Some(account.gid)).map_err(|e| io_err(&link, e))?;
    }
    let environment = format!("PATH={}\n", bin.display());
    write_owned(
        &account,
        &account.home.join(".ssh/environment"),
        environment.as_bytes(),
        0o600,
    )
}
