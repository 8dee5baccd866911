//! The SSH transport against a real OpenSSH `sshd` on 127.0.0.1: exec, host-key verdicts,
//! accept-new, auth failures, agent, ProxyJump, concurrency. Each test starts its own small
//! sshd (private to this file; the shared multi-user fixture lives in `common/`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clankie_host::HostError;
use clankie_host::ssh::config::IdentityAgent;
use clankie_host::ssh::{SshSession, SshTarget, StrictHostKeyChecking, resolve};

const SSHD: &str = "/usr/sbin/sshd";

/// A root-run sshd with its own host key, two authorized client keys (ed25519, RSA), and an
/// unauthorized one. Killed on drop.
struct TestSshd {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
    host_key_line: String,
}

impl Drop for TestSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path, kind: &str, passphrase: &str) {
    let _ = std::fs::remove_file(path);
    let bits = if kind == "rsa" { "2048" } else { "256" };
    let status = Command::new("ssh-keygen")
        .args([
            "-q", "-t", kind, "-b", bits, "-N", passphrase, "-C", "", "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(status.success(), "ssh-keygen -t {kind}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl TestSshd {
    /// Starts one, or returns `None` (skip) when sshd is missing or we are not root — which
    /// fails the test instead under `CI=true`.
    fn start() -> Option<TestSshd> {
        let usable = Path::new(SSHD).exists() && is_root();
        if !usable {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!(
                    "CI=true but {SSHD} is missing or we are not root: the SSH tests cannot run"
                );
            }
            eprintln!("skipping: {SSHD} missing or not root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_ed25519"), "ed25519", "");
        keygen(&d.join("id_ed25519"), "ed25519", "");
        keygen(&d.join("id_wrong"), "ed25519", "");
        keygen(&d.join("id_locked"), "ed25519", "sekrit");
        let mut authorized = String::new();
        for k in ["id_ed25519", "id_locked"] {
            authorized.push_str(&std::fs::read_to_string(d.join(format!("{k}.pub"))).unwrap());
        }
        std::fs::write(d.join("authorized_keys"), authorized).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let host_pub = std::fs::read_to_string(d.join("host_ed25519.pub")).unwrap();
        let host_pub = host_pub.trim().to_string();
        for _attempt in 0..5 {
            let port = free_port();
            let config = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_ed25519\n\
                 AuthorizedKeysFile {d}/authorized_keys\nUsePAM no\nStrictModes no\n\
                 PidFile {d}/sshd.pid\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 MaxSessions 10\nMaxStartups 50\nAllowTcpForwarding yes\nLogLevel VERBOSE\n",
                d = d.display()
            );
            std::fs::write(d.join("sshd_config"), config).unwrap();
            let log = std::fs::File::create(d.join("sshd.log")).unwrap();
            let mut child = Command::new(SSHD)
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(d.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("spawn sshd");
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut up = false;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // Port taken in the meantime, or a config error: retry / report.
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    up = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if up {
                let host_key_line = format!("[127.0.0.1]:{port} {host_pub}\n");
                let sshd = TestSshd {
                    dir,
                    port,
                    child,
                    host_key_line,
                };
                sshd.write_client_config();
                return Some(sshd);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "sshd did not start: {}",
            std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
        );
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_client_config(&self) {
        let config = format!(
            "Host testbox\n  HostName 127.0.0.1\n  Port {port}\n  User root\n\
             \x20 IdentityFile {d}/id_ed25519\n  IdentitiesOnly yes\n  IdentityAgent none\n\
             \x20 UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n\
             \x20 StrictHostKeyChecking yes\n  ConnectTimeout 10\n",
            port = self.port,
            d = self.dir.path().display()
        );
        std::fs::write(self.path("ssh_config"), config).unwrap();
    }

    /// `testbox` from our ssh config, its host key known.
    fn target(&self) -> SshTarget {
        std::fs::write(self.path("known_hosts"), &self.host_key_line).unwrap();
        let target = resolve("testbox", Some(&self.path("ssh_config"))).unwrap();
        assert_eq!(target.host_name, "127.0.0.1");
        assert_eq!(target.port, self.port);
        assert_eq!(
            target.user_known_hosts_files,
            vec![self.path("known_hosts")]
        );
        target
    }

    /// Makes `id_rsa` (slow, so only for the test that needs it) and authorizes it.
    fn authorize_rsa(&self) {
        keygen(&self.path("id_rsa"), "rsa", "");
        let public = std::fs::read_to_string(self.path("id_rsa.pub")).unwrap();
        let mut authorized = std::fs::read_to_string(self.path("authorized_keys")).unwrap();
        authorized.push_str(&public);
        std::fs::write(self.path("authorized_keys"), authorized).unwrap();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
    }
}

async fn connect(sshd: &TestSshd, target: &SshTarget) -> Result<SshSession, HostError> {
    SshSession::connect("testbox", target).await.map_err(|e| {
        eprintln!("connect failed: {e}\nsshd log:\n{}", sshd.log());
        e
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_script_on_stdin_then_reuse_and_parallel() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let session = connect(&sshd, &sshd.target()).await.unwrap();

    let script = b"echo hello\necho oops >&2\nprintf '%s\\n' \"$((6 * 7))\"\nexit 3\n";
    let out = session.exec("sh -s", script, 1 << 20).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n42\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("oops"));
    assert_eq!(out.exit_status, Some(3));

    // A second exec on the same connection; stdin bigger than one SSH packet/window chunk.
    let big = "x".repeat(300_000);
    let out = session
        .exec(
            "sh -s",
            format!("wc -c <<'EOF'\n{big}\nEOF\n").as_bytes(),
            1 << 20,
        )
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "300001");
    assert_eq!(out.exit_status, Some(0));

    // Four at once: each waits until all four have started, so they must run concurrently.
    let barrier = sshd.path("barrier");
    std::fs::create_dir(&barrier).unwrap();
    let script = |i: usize| {
        format!(
            "touch {b}/{i}\nn=0\nwhile [ \"$(ls {b} | wc -l)\" -lt 4 ]; do\n  n=$((n+1)); [ $n -gt 200 ] && {{ echo timeout; exit 1; }}\n  sleep 0.05\ndone\necho done {i}\n",
            b = barrier.display()
        )
    };
    let (s0, s1, s2, s3) = (script(0), script(1), script(2), script(3));
    let (a, b, c, d) = tokio::join!(
        session.exec("sh -s", s0.as_bytes(), 1024),
        session.exec("sh -s", s1.as_bytes(), 1024),
        session.exec("sh -s", s2.as_bytes(), 1024),
        session.exec("sh -s", s3.as_bytes(), 1024),
    );
    for (i, r) in [a, b, c, d].into_iter().enumerate() {
        let r = r.unwrap();
        assert_eq!(String::from_utf8_lossy(&r.stdout), format!("done {i}\n"));
    }

    // More than MAX_CHANNELS at once wait for a slot instead of failing.
    let many: Vec<_> = (0..12).map(|i| format!("echo {i}")).collect();
    let futures: Vec<_> = many.iter().map(|c| session.exec(c, b"", 64)).collect();
    let results = join_all(futures).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap().stdout, format!("{i}\n").into_bytes());
    }

    // Output over the cap is a reply too large (exit 6), and the connection stays usable.
    let err = session
        .exec("head -c 100000 /dev/zero", b"", 1000)
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::ReplyTooLarge { .. }), "{err}");
    let out = session.exec("echo still", b"", 64).await.unwrap();
    assert_eq!(out.stdout, b"still\n");

    // A command that ignores its stdin still completes.
    let out = session
        .exec("echo early", &vec![b'y'; 1 << 20], 64)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"early\n");
    session.close().await;
}

/// Polls a set of futures concurrently on this task (no `futures` crate needed).
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut results: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in set.iter_mut().zip(results.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results.into_iter().map(|r| r.unwrap()).collect()
}

#[tokio::test]
async fn rsa_key_logs_in() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    sshd.authorize_rsa();
    let mut target = sshd.target();
    target.identity_files = vec![sshd.path("id_missing"), sshd.path("id_rsa")];
    let session = connect(&sshd, &target).await.unwrap();
    let out = session.exec("echo rsa", b"", 64).await.unwrap();
    assert_eq!(out.stdout, b"rsa\n");
}

/// `SHA256:…` of the public key beside `key` (as sshd's log names it).
fn fingerprint(key: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(key)
        .output()
        .expect("ssh-keygen -l");
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().nth(1).unwrap().to_string()
}

/// A key file is offered signed at once (our russh's `sign_publickey_at_once`): sshd never
/// answers a query with USERAUTH_PK_OK (it logs such a key "Postponed"), and a key it refuses
/// still falls through to the next file, RSA and ed25519 alike.
#[tokio::test]
async fn refused_key_files_fall_through_to_the_next_signed_at_once() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    sshd.authorize_rsa();
    keygen(&sshd.path("id_rsa_wrong"), "rsa", "");
    let mut target = sshd.target();

    // ed25519 refused, RSA refused, RSA accepted.
    target.identity_files = vec![
        sshd.path("id_wrong"),
        sshd.path("id_rsa_wrong"),
        sshd.path("id_rsa"),
    ];
    let session = connect(&sshd, &target).await.unwrap();
    assert_eq!(
        session.authenticated_with(),
        format!("identity file {}", sshd.path("id_rsa").display())
    );
    assert_eq!(
        session.exec("echo rsa", b"", 64).await.unwrap().stdout,
        b"rsa\n"
    );
    session.close().await;

    // RSA refused, ed25519 accepted.
    target.identity_files = vec![sshd.path("id_rsa_wrong"), sshd.path("id_ed25519")];
    let session = connect(&sshd, &target).await.unwrap();
    assert_eq!(
        session.authenticated_with(),
        format!("identity file {}", sshd.path("id_ed25519").display())
    );
    assert_eq!(
        session.exec("echo ed25519", b"", 64).await.unwrap().stdout,
        b"ed25519\n"
    );
    session.close().await;

    let log = sshd.log();
    let lines = |verdict: &str, key: &str| {
        let fingerprint = fingerprint(&sshd.path(&format!("{key}.pub")));
        log.lines()
            .filter(|l| l.contains(&format!("{verdict} publickey for root")))
            .filter(|l| l.contains(&fingerprint))
            .count()
    };
    assert_eq!(lines("Failed", "id_wrong"), 1, "{log}");
    assert_eq!(lines("Failed", "id_rsa_wrong"), 2, "{log}");
    assert_eq!(lines("Accepted", "id_rsa"), 1, "{log}");
    assert_eq!(lines("Accepted", "id_ed25519"), 1, "{log}");
    // A query sshd would accept is answered USERAUTH_PK_OK and logged "Postponed": none was
    // sent, the accepted keys came signed in their first request.
    assert!(!log.contains("Postponed publickey"), "{log}");
}

#[tokio::test]
async fn unknown_host_key_is_refused() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let target = sshd.target();
    std::fs::write(sshd.path("known_hosts"), "").unwrap();
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    match &err {
        HostError::HostKeyUnknown { key_host, .. } => {
            assert_eq!(key_host, &format!("[127.0.0.1]:{}", sshd.port))
        }
        other => panic!("expected HostKeyUnknown, got {other}"),
    }
    // Nothing was written.
    assert_eq!(
        std::fs::read_to_string(sshd.path("known_hosts")).unwrap(),
        ""
    );
}

#[tokio::test]
async fn changed_host_key_is_refused() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let target = sshd.target();
    keygen(&sshd.path("other_host"), "ed25519", "");
    let other = std::fs::read_to_string(sshd.path("other_host.pub")).unwrap();
    std::fs::write(
        sshd.path("known_hosts"),
        format!("[127.0.0.1]:{} {}", sshd.port, other),
    )
    .unwrap();
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    match &err {
        HostError::HostKeyChanged {
            known_hosts_line, ..
        } => assert!(known_hosts_line.ends_with("known_hosts:1"), "{err}"),
        other => panic!("expected HostKeyChanged, got {other}"),
    }
    // Even with StrictHostKeyChecking no, a changed key is never accepted.
    let mut lax = target.clone();
    lax.strict_host_key_checking = StrictHostKeyChecking::No;
    let err = SshSession::connect("testbox", &lax).await.unwrap_err();
    assert!(matches!(err, HostError::HostKeyChanged { .. }), "{err}");
}

#[tokio::test]
async fn revoked_host_key_is_refused() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let target = sshd.target();
    let known = sshd.host_key_line.clone();
    let host_pub = known.split_once(' ').unwrap().1;
    std::fs::write(
        sshd.path("known_hosts"),
        format!("{known}@revoked * {host_pub}"),
    )
    .unwrap();
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    match &err {
        HostError::HostKeyRevoked {
            known_hosts_line, ..
        } => assert!(known_hosts_line.ends_with("known_hosts:2"), "{err}"),
        other => panic!("expected HostKeyRevoked, got {other}"),
    }
}

#[tokio::test]
async fn accept_new_adds_the_key() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    let known_hosts = sshd.path("fresh/known_hosts");
    target.user_known_hosts_files = vec![known_hosts.clone()];
    target.strict_host_key_checking = StrictHostKeyChecking::AcceptNew;
    let session = connect(&sshd, &target).await.unwrap();
    assert_eq!(
        session.exec("echo ok", b"", 64).await.unwrap().stdout,
        b"ok\n"
    );
    session.close().await;
    let written = std::fs::read_to_string(&known_hosts).unwrap();
    assert_eq!(written, sshd.host_key_line);
    // Now known under `yes` too.
    target.strict_host_key_checking = StrictHostKeyChecking::Yes;
    let session = connect(&sshd, &target).await.unwrap();
    session.close().await;
    assert_eq!(std::fs::read_to_string(&known_hosts).unwrap(), written);
    // `no` adds unknown keys the same way (and, unlike OpenSSH, still refuses changed ones).
    let other = sshd.path("other/known_hosts");
    target.user_known_hosts_files = vec![other.clone()];
    target.strict_host_key_checking = StrictHostKeyChecking::No;
    connect(&sshd, &target).await.unwrap().close().await;
    assert_eq!(std::fs::read_to_string(&other).unwrap(), sshd.host_key_line);
}

/// The host is known, but only with a key of another type (ECDSA; it offers Ed25519). OpenSSH
/// treats that as a changed key, even under `accept-new`; so do we, and nothing is appended.
#[tokio::test]
async fn a_key_of_a_new_type_for_a_known_host_is_refused_as_ssh_refuses_it() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    keygen(&sshd.path("other_host_key"), "ecdsa", "");
    let ecdsa = std::fs::read_to_string(sshd.path("other_host_key.pub")).unwrap();
    let name = sshd.host_key_line.split_once(' ').unwrap().0;
    let known = format!("{name} {}", ecdsa.trim());
    let known_hosts = sshd.path("known_hosts");
    for strict in ["accept-new", "yes", "no"] {
        std::fs::write(&known_hosts, format!("{known}\n")).unwrap();
        target.strict_host_key_checking = match strict {
            "accept-new" => StrictHostKeyChecking::AcceptNew,
            "yes" => StrictHostKeyChecking::Yes,
            _ => StrictHostKeyChecking::No,
        };
        match SshSession::connect("testbox", &target).await {
            Err(HostError::HostKeyChanged { .. }) => {}
            other => panic!("{strict}: expected HostKeyChanged, got {:?}", other.err()),
        }
        // Refused without writing anything.
        assert_eq!(
            std::fs::read_to_string(&known_hosts).unwrap(),
            format!("{known}\n"),
            "{strict}"
        );
        // OpenSSH's own verdict, on the same known_hosts.
        let ssh = Command::new("ssh")
            .arg("-F")
            .arg(sshd.path("ssh_config"))
            .args(["-o", &format!("StrictHostKeyChecking={strict}")])
            .args(["-o", "BatchMode=yes", "testbox", "true"])
            .stdin(Stdio::null())
            .output()
            .expect("run ssh");
        let ssh_stderr = String::from_utf8_lossy(&ssh.stderr);
        if strict == "no" {
            // The one deliberate difference (SPEC): OpenSSH connects with a warning under
            // `no`; a changed key is always refused here.
            assert!(ssh.status.success(), "ssh under no: {ssh_stderr}");
        } else {
            assert!(!ssh.status.success(), "ssh accepted under {strict}");
        }
    }
}

#[tokio::test]
async fn host_key_alias_is_the_lookup_name() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    let host_pub = sshd.host_key_line.split_once(' ').unwrap().1;
    std::fs::write(sshd.path("known_hosts"), format!("MyAlias {host_pub}")).unwrap();
    target.host_key_alias = Some("myalias".into());
    connect(&sshd, &target).await.unwrap().close().await;
}

#[tokio::test]
async fn wrong_key_is_an_auth_error() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    target.identity_files = vec![sshd.path("id_wrong")];
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    match &err {
        HostError::Auth { reason, .. } => assert!(reason.contains("id_wrong"), "{err}"),
        other => panic!("expected Auth, got {other}"),
    }
    // No key at all.
    target.identity_files = vec![sshd.path("id_missing")];
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    assert!(matches!(err, HostError::Auth { .. }), "{err}");
    assert!(err.to_string().contains("no key to offer"), "{err}");
}

#[tokio::test]
async fn encrypted_key_without_agent_is_a_clear_error() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    target.identity_files = vec![sshd.path("id_locked")];
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    assert!(matches!(err, HostError::Auth { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("passphrase-protected") && msg.contains("id_locked"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

/// Starts `ssh-agent -D -a SOCK` and adds `keys`; killed on drop.
struct TestAgent {
    child: Child,
    socket: PathBuf,
}

impl Drop for TestAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_agent(sshd: &TestSshd, keys: &[(&str, &str)]) -> TestAgent {
    let socket = sshd.path("agent.sock");
    let child = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("ssh-agent");
    let agent = TestAgent { child, socket };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !agent.socket.exists() {
        assert!(Instant::now() < deadline, "ssh-agent did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    for (key, passphrase) in keys {
        // ssh-add reads the passphrase through SSH_ASKPASS when it has no TTY.
        let askpass = sshd.path("askpass.sh");
        std::fs::write(&askpass, format!("#!/bin/sh\necho '{passphrase}'\n")).unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(&askpass)
            .status()
            .unwrap();
        let status = Command::new("ssh-add")
            .arg(sshd.path(key))
            .env("SSH_AUTH_SOCK", &agent.socket)
            .env("SSH_ASKPASS", &askpass)
            .env("SSH_ASKPASS_REQUIRE", "force")
            .env("DISPLAY", ":0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "ssh-add {key}");
    }
    agent
}

#[tokio::test]
async fn agent_keys_and_identities_only() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let agent = start_agent(&sshd, &[("id_wrong", ""), ("id_locked", "sekrit")]);
    let mut target = sshd.target();
    target.identity_agent = IdentityAgent::Path(agent.socket.clone());

    // The passphrase-protected key is usable through the agent.
    target.identity_files = vec![sshd.path("id_locked")];
    let session = connect(&sshd, &target).await.unwrap();
    assert_eq!(
        session.exec("echo agent", b"", 64).await.unwrap().stdout,
        b"agent\n"
    );
    session.close().await;

    // Without IdentitiesOnly every agent key is offered (no identity file needed).
    target.identities_only = false;
    target.identity_files = vec![];
    connect(&sshd, &target).await.unwrap().close().await;

    // IdentitiesOnly with only the wrong key's file: the agent's good key is not offered.
    target.identities_only = true;
    target.identity_files = vec![sshd.path("id_wrong")];
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    match &err {
        HostError::Auth { reason, .. } => {
            assert!(reason.contains("agent key"), "{err}");
            assert_eq!(reason.matches("agent key").count(), 1, "{err}");
        }
        other => panic!("expected Auth, got {other}"),
    }
}

#[tokio::test]
async fn proxy_jump_through_the_same_sshd() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    target.proxy_jump = vec!["testbox".into()];
    let session = connect(&sshd, &target).await.unwrap();
    let out = session
        .exec("echo \"$SSH_CLIENT\"", b"", 256)
        .await
        .unwrap();
    // The inner connection arrives from sshd itself (127.0.0.1), through the tunnel.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("127.0.0.1 "));
    session.close().await;
    // Two hops.
    target.proxy_jump = vec!["testbox".into(), "testbox".into()];
    connect(&sshd, &target).await.unwrap().close().await;
    // A jump host that cannot be reached is reported as unreachable.
    target.proxy_jump = vec![format!("root@127.0.0.1:{}", free_port())];
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    assert!(matches!(err, HostError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("jump host"), "{err}");
}

#[tokio::test]
async fn proxy_command_carries_the_connection() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    // busybox nc, when present (Debian's busybox has the applet).
    if Command::new("busybox").arg("nc").output().is_err() {
        eprintln!("skipping: no busybox nc");
        return;
    }
    target.proxy_command = Some(format!("exec busybox nc 127.0.0.1 {}", sshd.port));
    let session = connect(&sshd, &target).await.unwrap();
    assert_eq!(
        session.exec("echo proxied", b"", 64).await.unwrap().stdout,
        b"proxied\n"
    );
    session.close().await;
    // A ProxyCommand that exits at once is a failed handshake, not a hang.
    target.proxy_command = Some("exit 1".into());
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    assert!(matches!(err, HostError::Unreachable { .. }), "{err}");
}

#[tokio::test]
async fn closed_port_and_silent_server_are_unreachable() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let mut target = sshd.target();
    target.port = free_port();
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    assert!(matches!(err, HostError::Unreachable { .. }), "{err}");
    assert!(!err.to_string().contains('\n'));

    // A server that accepts but never speaks: ConnectTimeout applies to the handshake.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    target.port = listener.local_addr().unwrap().port();
    target.connect_timeout = Some(Duration::from_secs(1));
    let started = Instant::now();
    let err = SshSession::connect("testbox", &target).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.to_string().contains("timed out"), "{err}");
    drop(listener);
}

/// A TCP relay on 127.0.0.1 in front of `port` for one connection, holding each chunk
/// `one_way` in each direction (as `examples/rtt_proxy` does), so that what one side sends
/// before the other's answer travels as one flight. Records each chunk in order: when it came
/// (ms), its direction (`true`: client to server) and size.
struct Relay {
    port: u16,
    chunks: std::sync::Arc<std::sync::Mutex<Vec<(u128, bool, usize)>>>,
}

impl Relay {
    async fn start(port: u16, one_way: Duration) -> Relay {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = Relay {
            port: listener.local_addr().unwrap().port(),
            chunks: Default::default(),
        };
        let chunks = std::sync::Arc::clone(&relay.chunks);
        tokio::spawn(async move {
            let (client, _) = listener.accept().await.unwrap();
            let server = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            client.set_nodelay(true).unwrap();
            server.set_nodelay(true).unwrap();
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            for (up, mut from, mut to) in [
                (true, client_read, server_write),
                (false, server_read, client_write),
            ] {
                let chunks = std::sync::Arc::clone(&chunks);
                let start = std::time::Instant::now();
                // Read at once, forward each chunk once `one_way` has passed since it came.
                let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n @ 1..) = from.read(&mut buf).await {
                        chunks
                            .lock()
                            .unwrap()
                            .push((start.elapsed().as_millis(), up, n));
                        let due = tokio::time::Instant::now() + one_way;
                        if sender.send((due, buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                });
                tokio::spawn(async move {
                    while let Some((due, bytes)) = receiver.recv().await {
                        tokio::time::sleep_until(due).await;
                        if to.write_all(&bytes).await.is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown().await;
                });
            }
        });
        relay
    }

    /// The flights so far: runs of chunks in one direction (`true`: client to server), with
    /// their bytes.
    fn flights(&self) -> Vec<(bool, usize)> {
        let mut flights: Vec<(bool, usize)> = Vec::new();
        for &(_, up, n) in self.chunks.lock().unwrap().iter() {
            match flights.last_mut() {
                Some((way, bytes)) if *way == up => *bytes += n,
                _ => flights.push((up, n)),
            }
        }
        flights
    }

    /// How many flights came after the last one up of at least 250 bytes: the one that carried
    /// the accepted signed request (a short command's exec, with its EOF, is smaller). Counted
    /// from there because how the versions and KEXINITs before it fall into flights depends on
    /// the machine's load (one flight each way, or two).
    fn flights_after_authentication(&self) -> usize {
        let flights = self.flights();
        let auth = flights
            .iter()
            .rposition(|&(up, bytes)| up && bytes >= 250)
            .expect("a signed request went up");
        flights.len() - auth - 1
    }
}

/// `testbox` through `relay`, its host key looked up under the sshd's own address.
fn through(sshd: &TestSshd, relay: &Relay, identity_files: &[&str]) -> SshTarget {
    let mut target = sshd.target();
    target.port = relay.port;
    target.host_key_alias = Some(format!("[127.0.0.1]:{}", sshd.port));
    target.identity_files = identity_files.iter().map(|f| sshd.path(f)).collect();
    target
}

/// Connects to `target` with `-v`'s lines collected.
async fn connect_logged(
    target: &SshTarget,
) -> (SshSession, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&lines);
    let options = clankie_host::ssh::ConnectOptions {
        log: clankie_host::ssh::ConnectionLog::to(move |line| {
            sink.lock().unwrap().push(line.to_string())
        }),
        ..Default::default()
    };
    let session = SshSession::connect_with("testbox", target, &options)
        .await
        .unwrap();
    (session, lines)
}

/// The first channel is asked for in the same flight as the signed request of a key file
/// (our russh's `pipeline_channel_open`), so it is open when authentication succeeds: a fresh
/// connection and one command cost one flight each way fewer than with the channel asked for
/// after the success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_channel_is_asked_for_with_the_signed_request() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let relay = Relay::start(sshd.port, Duration::from_millis(10)).await;
    let target = through(&sshd, &relay, &["id_ed25519"]);
    let run = async {
        let (session, log) = connect_logged(&target).await;
        let out = session.exec("echo one", b"", 64).await.unwrap();
        (out, log)
    };
    let (out, log) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("no hang");
    assert_eq!(out.stdout, b"one\n");
    let log = log.lock().unwrap().join("\n");
    assert!(
        log.contains("; a channel asked for in the same round trip;"),
        "{log}"
    );
    // After the signed request with the channel's open: the success with the confirmation
    // behind it, the exec, its reply (and at most a close): 4 flights. With the channel asked
    // for after the success, 2 more (the open, its confirmation).
    assert!(
        relay.flights_after_authentication() <= 4,
        "{:?}\n{log}",
        relay.chunks.lock().unwrap()
    );
    // sshd had nothing to refuse: the open went to the connection service.
    assert!(
        !sshd.log().contains("dispatch_protocol_error"),
        "{}",
        sshd.log()
    );
}

/// A refused key's early channel is not opened by sshd (it answers UNIMPLEMENTED, which is
/// ignored) and is forgotten; the next key asks for its own, which the first command takes,
/// and the next command's channel is opened with it as usual (the spare).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_keys_channel_is_forgotten_and_the_next_keys_opens() {
    let Some(sshd) = TestSshd::start() else {
        return;
    };
    let relay = Relay::start(sshd.port, Duration::from_millis(10)).await;
    let target = through(&sshd, &relay, &["id_wrong", "id_ed25519"]);
    let run = async {
        let (session, log) = connect_logged(&target).await;
        let first = session.exec("echo one", b"", 64).await.unwrap();
        let second = session.exec("echo two", b"", 64).await.unwrap();
        (first, second, session.authenticated_with().to_string(), log)
    };
    let (first, second, with, log) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("no hang");
    assert_eq!(first.stdout, b"one\n");
    assert_eq!(second.stdout, b"two\n");
    assert_eq!(
        with,
        format!("identity file {}", sshd.path("id_ed25519").display())
    );
    let log = log.lock().unwrap().join("\n");
    assert!(
        log.contains("; a channel asked for in the same round trip;"),
        "{log}"
    );
    // The refused key's channel open reached sshd during authentication, which answered it
    // UNIMPLEMENTED (CHANNEL_OPEN is message 90) and went on; the accepted key's did not.
    let sshd_log = sshd.log();
    assert_eq!(
        sshd_log
            .lines()
            .filter(|l| l.contains("dispatch_protocol_error: type 90"))
            .count(),
        1,
        "{sshd_log}"
    );
    assert!(
        sshd_log.contains("Accepted publickey for root"),
        "{sshd_log}"
    );
    // After the accepted key's signed request: as with one key (see above), and 2 more for the
    // second command, whose channel came with the first's (the spare).
    assert!(
        relay.flights_after_authentication() <= 6,
        "{:?}\n{log}\n{sshd_log}",
        relay.chunks.lock().unwrap()
    );
}
