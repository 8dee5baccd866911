//! The SSH configuration's unit tests: destinations, the ssh2-config fallback's `Host` and
//! `Match` evaluation, tokens, control options, `ssh -G` dumps, and OpenSSH itself when on PATH.

use super::*;

#[test]
fn only_plain_host_aliases_are_names() {
    let config = "Host devbox build\n  HostName 10.0.0.5\nhost=\"pc\"\nHost *.lan !x ok # c\nMatch host y\nHostName z\n";
    assert_eq!(plain_host_aliases(config), ["devbox", "build", "pc", "ok"]);
}

#[test]
fn plain_host_aliases_leave_out_patterns_and_comments() {
    let config = "\
Host devbox gpu-1 *.internal !bastion
  HostName 10.0.0.2
host=build
Host \"quoted\" # a comment
Match host foo
Host *
HostName notahost
";
    assert_eq!(
        plain_host_aliases(config),
        ["devbox", "gpu-1", "build", "quoted"]
    );
}

const CONFIG: &str = "\
Host dev
  HostName dev.example.com
  User alice
  Port 2200
  IdentityFile ~/.ssh/id_%h_%r
  IdentityFile /keys/second
  IdentitiesOnly yes
  IdentityAgent ~/agent.sock
  ProxyJump bastion,bob@jump2:2222
  ConnectTimeout 7
  UserKnownHostsFile ~/kh1 /etc/kh2
  HostKeyAlias devalias
  StrictHostKeyChecking accept-new
Host *.corp
  User corpuser
Match host matched.example
  User fromMatch
Host plain
  StrictHostKeyChecking ask
  IdentityAgent none
  ProxyCommand nc %h %p
";

fn fallback(dest: &str) -> SshTarget {
    resolve_with_ssh2_config(dest, CONFIG, Some(Path::new("/home/me")), "me", None).unwrap()
}

fn check_dev(t: &SshTarget, home: &str) {
    assert_eq!(t.host_name, "dev.example.com");
    assert_eq!(t.user, "alice");
    assert_eq!(t.port, 2200);
    assert_eq!(
        t.identity_files,
        vec![
            PathBuf::from(format!("{home}/.ssh/id_dev.example.com_alice")),
            PathBuf::from("/keys/second")
        ]
    );
    assert!(t.identities_only);
    assert_eq!(
        t.identity_agent,
        IdentityAgent::Path(PathBuf::from(format!("{home}/agent.sock")))
    );
    assert_eq!(t.proxy_jump, vec!["bastion", "bob@jump2:2222"]);
    assert_eq!(t.connect_timeout, Some(Duration::from_secs(7)));
    assert_eq!(
        t.user_known_hosts_files,
        vec![
            PathBuf::from(format!("{home}/kh1")),
            PathBuf::from("/etc/kh2")
        ]
    );
    assert_eq!(t.host_key_alias.as_deref(), Some("devalias"));
    assert_eq!(t.strict_host_key_checking, StrictHostKeyChecking::AcceptNew);
    assert_eq!(t.known_hosts_names(), vec!["devalias"]);
}

#[test]
fn destinations() {
    let d = parse_destination("alias", "x").unwrap();
    assert_eq!((d.user, d.host.as_str(), d.port), (None, "alias", None));
    let d = parse_destination("bob@host:2222", "x").unwrap();
    assert_eq!(
        (d.user.as_deref(), d.host.as_str(), d.port),
        (Some("bob"), "host", Some(2222))
    );
    let d = parse_destination("a@b@host", "x").unwrap();
    assert_eq!(d.user.as_deref(), Some("a@b"));
    let d = parse_destination("[::1]:22", "x").unwrap();
    assert_eq!((d.host.as_str(), d.port), ("::1", Some(22)));
    let d = parse_destination("fe80::1", "x").unwrap();
    assert_eq!((d.host.as_str(), d.port), ("fe80::1", None));
    let d = parse_destination("ssh://u@h:10/", "x").unwrap();
    assert_eq!(
        (d.user.as_deref(), d.host.as_str(), d.port),
        (Some("u"), "h", Some(10))
    );
    for bad in [
        "",
        "@h",
        "u@",
        "h:0",
        "h:x",
        "-oProxyCommand=x",
        "a b",
        "[h",
    ] {
        assert!(parse_destination(bad, "x").is_err(), "{bad}");
    }
}

#[test]
fn fallback_resolves_host_block() {
    check_dev(&fallback("dev"), "/home/me");
}

#[test]
fn fallback_evaluates_simple_match_and_does_not_leak_into_previous_host() {
    assert_eq!(fallback("a.corp").user, "corpuser");
    assert_eq!(fallback("matched.example").user, "fromMatch");
    assert_eq!(fallback("other.example").user, "me");
    let all = "Host x\n User hx\nMatch all\n User fromall\n";
    let t = resolve_with_ssh2_config("y", all, None, "me", None).unwrap();
    assert_eq!(t.user, "fromall");
    let t = resolve_with_ssh2_config("x", all, None, "me", None).unwrap();
    assert_eq!(t.user, "hx");
}

/// `Match host` sees the HostName set so far, `originalhost` what was typed, `user` the
/// User so far (the command line's first), `localuser` us; `!` negates; first value wins.
#[test]
fn fallback_match_criteria_as_openssh_evaluates_them() {
    let config = "\
Host short
  HostName long.example.com
Match host long.example.com user alice
  Port 2001
Match host long.example.com
  Port 2002
  User bob
Match originalhost short !localuser root
  IdentityFile /keys/nonroot
Match user bob,carol
  ProxyJump jump
Match !host *.example.com
  Port 2003
";
    let resolve = |dest: &str, local: &str| {
        resolve_with_ssh2_config(dest, config, None, local, None).unwrap()
    };
    let t = resolve("short", "me");
    assert_eq!((t.port, t.user.as_str()), (2002, "bob"));
    assert_eq!(t.identity_files, vec![PathBuf::from("/keys/nonroot")]);
    // The User Match set applies to a later Match user.
    assert_eq!(t.proxy_jump, vec!["jump"]);
    let t = resolve("alice@short", "root");
    assert_eq!((t.port, t.user.as_str()), (2001, "alice"));
    assert!(t.identity_files[0].ends_with(".ssh/id_rsa"));
    assert!(t.proxy_jump.is_empty());
    let t = resolve("carol@elsewhere", "me");
    assert_eq!((t.port, t.user.as_str()), (2003, "carol"));
    assert_eq!(t.proxy_jump, vec!["jump"]);
    // Host lines: a matching negation wins.
    let text = "Host *.corp !secret.corp\n  User corp\n";
    let t = resolve_with_ssh2_config("secret.corp", text, None, "me", None).unwrap();
    assert_eq!(t.user, "me");
    let t = resolve_with_ssh2_config("open.CORP", text, None, "me", None).unwrap();
    assert_eq!(t.user, "corp");
}

#[test]
fn fallback_refuses_match_it_cannot_evaluate() {
    for (line, said) in [
        ("Match exec \"true\"", "`Match exec` needs OpenSSH"),
        ("Match host x exec \"true\"", "`Match exec` needs OpenSSH"),
        ("Match canonical all", "`Match canonical` needs OpenSSH"),
        ("Match final", "`Match final` needs OpenSSH"),
        (
            "Match localnetwork 10.0.0.0/8",
            "`Match localnetwork` needs",
        ),
        ("Match tagged t", "`Match tagged` needs"),
        ("Match bogus x", "`Match bogus` is not a criterion"),
        ("Match host", "`Match host` without its patterns"),
    ] {
        // Anywhere in the file, even in a block that does not apply.
        let text = format!("Host other\n  User o\n{line}\n  User fromexec\n");
        let err = resolve_with_ssh2_config("h", &text, None, "me", None).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, HostError::SshConfig { .. }), "{message}");
        assert!(message.contains(said), "{line}: {message}");
    }
}

#[test]
fn fallback_inlines_includes_with_match_scoping() {
    let home = tempfile::tempdir().unwrap();
    let conf_d = home.path().join(".ssh/conf.d");
    std::fs::create_dir_all(&conf_d).unwrap();
    std::fs::write(
        conf_d.join("b.conf"),
        "Host inc\n  User fromb\nMatch host inc\n  Port 9\n",
    )
    .unwrap();
    std::fs::write(conf_d.join("a.conf"), "Host inc\n  User froma\n").unwrap();
    let text = "Host outer\n  Include conf.d/*.conf ~/.ssh/missing\n  User outeruser\n\
                Host *\n  Port 2200\n";
    // What `ssh -G` says for each (OpenSSH 9.2): an Include inside a block that does not
    // apply brings in nothing that applies.
    let t = resolve_with_ssh2_config("inc", text, Some(home.path()), "me", None).unwrap();
    assert_eq!((t.user.as_str(), t.port), ("me", 2200));
    // The line after the Include still belongs to `Host outer`.
    let t = resolve_with_ssh2_config("outer", text, Some(home.path()), "me", None).unwrap();
    assert_eq!((t.user.as_str(), t.port), ("outeruser", 2200));
    // At the top: a.conf before b.conf, the first value wins, b.conf's Match applies.
    let text = "Include conf.d/*.conf\nHost outer\n  User outeruser\nHost *\n  Port 2200\n";
    let t = resolve_with_ssh2_config("inc", text, Some(home.path()), "me", None).unwrap();
    assert_eq!((t.user.as_str(), t.port), ("froma", 9));
}

#[test]
fn fallback_defaults_and_overrides() {
    let t = fallback("carol@unknown.example:2022");
    assert_eq!(t.host_name, "unknown.example");
    assert_eq!(t.user, "carol");
    assert_eq!(t.port, 2022);
    assert_eq!(t.identity_agent, IdentityAgent::Env);
    assert!(!t.identities_only);
    assert!(t.proxy_jump.is_empty());
    assert_eq!(t.connect_timeout, None);
    assert_eq!(t.strict_host_key_checking, StrictHostKeyChecking::Yes);
    assert_eq!(
        t.user_known_hosts_files,
        vec![
            PathBuf::from("/home/me/.ssh/known_hosts"),
            PathBuf::from("/home/me/.ssh/known_hosts2")
        ]
    );
    assert_eq!(
        t.global_known_hosts_files[0],
        PathBuf::from("/etc/ssh/ssh_known_hosts")
    );
    assert_eq!(t.identity_files[0], PathBuf::from("/home/me/.ssh/id_rsa"));
    assert_eq!(t.known_hosts_names(), vec!["[unknown.example]:2022"]);
    let t = fallback("dev:2300");
    assert_eq!(t.port, 2300);
    let t = fallback("plain");
    assert_eq!(t.proxy_command.as_deref(), Some("nc plain 22"));
    assert_eq!(t.strict_host_key_checking, StrictHostKeyChecking::Yes);
    assert_eq!(t.identity_agent, IdentityAgent::None);
    assert_eq!(t.known_hosts_names(), vec!["plain"]);
}

#[test]
fn tokens_expand() {
    let t = Tokens {
        host_name: "h.example",
        original_host: "h",
        port: 22,
        remote_user: "r",
        local_user: "l",
        home: Some(Path::new("/home/l")),
        jump_host: "",
    };
    assert_eq!(
        t.expand("~/x/%h-%p-%r-%u-%n-%%-%%C-%Z"),
        "/home/l/x/h.example-22-r-l-h-%-%C-%Z"
    );
    // `%C` is OpenSSH's connection hash: SHA-1 of `%l%h%p%r%j`.
    use sha1::Digest as _;
    let hex = |text: String| -> String {
        sha1::Sha1::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let local = local_host_name();
    assert_eq!(t.expand("%C"), hex(format!("{local}h.example22r")));
    assert_eq!(t.expand("%l"), local);
    let jumping = Tokens {
        jump_host: "gw",
        ..t
    };
    // The last hop's host, without its user and port.
    let text = "Host x\n  HostName h.example\n  User r\n  ProxyJump a@first,gw:2222\n  \
                ControlPath /c/%C\n";
    let target = resolve_with_ssh2_config("x", text, None, "l", None).unwrap();
    assert_eq!(
        target.control_path,
        Some(PathBuf::from(format!("/c/{}", jumping.expand("%C"))))
    );
    assert_eq!(jumping.expand("%C"), hex(format!("{local}h.example22rgw")));
    assert_eq!(t.expand("%d/y"), "/home/l/y");
    assert_eq!(t.expand("/a/~b"), "/a/~b");
}

/// ControlPath, ControlMaster and ControlPersist from `ssh -G` (expanded there, kept as
/// printed) and from the built-in parser (expanded here).
#[test]
fn control_options() {
    let dump = "controlpath /run/cm-%%-x\ncontrolmaster auto\ncontrolpersist 600\n";
    let t = target_from_dump("x", dump, None, "me", None).unwrap();
    assert_eq!(t.control_path, Some(PathBuf::from("/run/cm-%%-x")));
    assert_eq!(t.control_master, ControlMaster::Auto);
    assert!(t.control_master.starts_a_master());
    assert_eq!(
        t.control_persist,
        Some(ControlPersist::For(Duration::from_secs(600)))
    );
    let t = target_from_dump(
        "x",
        "controlmaster false\ncontrolpersist no\n",
        None,
        "me",
        None,
    )
    .unwrap();
    assert_eq!(
        (t.control_path, t.control_master, t.control_persist),
        (None, ControlMaster::No, None)
    );
    let t = target_from_dump(
        "x",
        "controlmaster autoask\ncontrolpersist yes\n",
        None,
        "me",
        None,
    )
    .unwrap();
    assert_eq!(
        (t.control_master, t.control_persist),
        (ControlMaster::AutoAsk, Some(ControlPersist::Forever))
    );
    assert!(target_from_dump("x", "controlmaster maybe\n", None, "me", None).is_err());
    assert!(target_from_dump("x", "controlpersist 5x\n", None, "me", None).is_err());

    let text = "Host m\n  HostName m.example\n  User u\n  Port 2200\n  \
                ControlPath ~/.ssh/cm-%h-%p-%r-%C\n  ControlMaster yes\n  ControlPersist 1h30m\n\
                Host n\n  ControlPath none\n  ControlMaster ask\n  ControlPersist 0\n";
    let t = resolve_with_ssh2_config("m", text, Some(Path::new("/home/me")), "me", None).unwrap();
    let path = t.control_path.unwrap().to_string_lossy().into_owned();
    let prefix = "/home/me/.ssh/cm-m.example-2200-u-";
    assert!(path.starts_with(prefix), "{path}");
    assert_eq!(path.len(), prefix.len() + 40, "{path}");
    assert_eq!(t.control_master, ControlMaster::Yes);
    assert_eq!(
        t.control_persist,
        Some(ControlPersist::For(Duration::from_secs(5400)))
    );
    let t = resolve_with_ssh2_config("n", text, None, "me", None).unwrap();
    assert_eq!(
        (t.control_path, t.control_master, t.control_persist),
        (None, ControlMaster::Ask, Some(ControlPersist::Forever))
    );
    assert_eq!(parse_time("2w1d"), Some(Duration::from_secs(1_296_000)));
    assert_eq!(parse_time("90"), Some(Duration::from_secs(90)));
    assert_eq!(parse_time("1q"), None);
}

/// `ssh -G` expands ControlPath's tokens exactly as the built-in parser does.
#[test]
fn control_path_tokens_agree_with_openssh() {
    if Command::new("ssh").arg("-V").output().is_err() {
        eprintln!("no OpenSSH client; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    let text = "Host m\n  HostName m.example\n  User u\n  Port 2200\n  \
                ControlPath /tmp/cm-%C-%h-%p-%r-%n-%l-%u\n";
    std::fs::write(&file, text).unwrap();
    let by_openssh = resolve("m", Some(&file)).unwrap();
    let account = LocalAccount::current();
    let built_in = resolve_with_ssh2_config(
        "m",
        text,
        account.home.as_deref(),
        &account.user,
        Some(&file),
    )
    .unwrap();
    assert!(by_openssh.control_path.is_some());
    assert_eq!(by_openssh.control_path, built_in.control_path);
}

#[test]
fn dump_parsing() {
    let dump = "User alice\nhostname dev.example.com\nport 2200\nidentitiesonly yes\n\
        stricthostkeychecking accept-new\nhostkeyalias devalias\nidentityagent /root/agent.sock\n\
        identityfile ~/.ssh/id_%h_%r\nidentityfile /keys/second\n\
        globalknownhostsfile /etc/ssh/ssh_known_hosts\nuserknownhostsfile /root/kh1 /etc/kh2\n\
        connecttimeout 7\nproxyjump bastion,bob@jump2:2222\n";
    let t = target_from_dump("dev", dump, Some(Path::new("/root")), "me", None).unwrap();
    check_dev(&t, "/root");
    let t = target_from_dump(
        "x",
        "stricthostkeychecking false\nconnecttimeout none\nidentityagent none\n",
        None,
        "me",
        None,
    )
    .unwrap();
    assert_eq!(t.strict_host_key_checking, StrictHostKeyChecking::No);
    assert_eq!(t.connect_timeout, None);
    assert_eq!(t.identity_agent, IdentityAgent::None);
    let t = target_from_dump("x", "stricthostkeychecking true\n", None, "me", None).unwrap();
    assert_eq!(t.strict_host_key_checking, StrictHostKeyChecking::Yes);
    assert!(target_from_dump("x", "port nope\n", None, "me", None).is_err());
}

/// The real `ssh -G` path, when an OpenSSH client is installed.
#[test]
fn openssh_path_when_available() {
    if Command::new("ssh").arg("-V").output().is_err() {
        eprintln!("no OpenSSH client; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    std::fs::write(&file, CONFIG).unwrap();
    let t = resolve("dev", Some(&file)).unwrap();
    assert_eq!(t.host_name, "dev.example.com");
    assert_eq!(t.user, "alice");
    assert_eq!(t.port, 2200);
    assert_eq!(t.proxy_jump, vec!["bastion", "bob@jump2:2222"]);
    assert!(t.identities_only);
    assert_eq!(t.strict_host_key_checking, StrictHostKeyChecking::AcceptNew);
    assert_eq!(t.host_key_alias.as_deref(), Some("devalias"));
    assert_eq!(t.connect_timeout, Some(Duration::from_secs(7)));
    assert!(
        t.identity_files[0]
            .to_string_lossy()
            .ends_with("/.ssh/id_dev.example.com_alice")
    );
    // Match is evaluated exactly, and does not leak.
    assert_eq!(
        resolve("matched.example", Some(&file)).unwrap().user,
        "fromMatch"
    );
    assert_eq!(resolve("a.corp", Some(&file)).unwrap().user, "corpuser");
    let t = resolve("zed@a.corp:99", Some(&file)).unwrap();
    assert_eq!((t.user.as_str(), t.port), ("zed", 99));
    assert_eq!(
        resolve("plain", Some(&file))
            .unwrap()
            .strict_host_key_checking,
        StrictHostKeyChecking::Yes
    );
    // A broken config is an error, not a silent default.
    std::fs::write(&file, "Host x\n  Bogus\n").unwrap();
    assert!(resolve("x", Some(&file)).is_err());
}
