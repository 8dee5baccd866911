//! Public-key authentication, in OpenSSH's order: ssh-agent keys (those matching an
//! IdentityFile first; only those under `IdentitiesOnly`), then the IdentityFile list (missing
//! files skipped). Stops at the first success: sshd's MaxAuthTries (6) counts every key offered.
//! An encrypted identity file is unlocked by asking for its passphrase when the caller gave a
//! [`PassphrasePrompt`] (a terminal is there), and is otherwise a clear error naming `ssh-add`.
//!
//! An identity file's key is offered signed, without asking first whether the server would take
//! it (one round trip less per key; `sign_publickey_at_once` in session.rs, our russh patch): a
//! refused key is answered as a refused query is, and the next one is tried. An agent key is
//! asked about first, as `ssh` does: the agent may make its user confirm or touch for each
//! signature, which a key the server refuses must not cost.
//!
//! An identity file's signed request also asks for the first session channel in the same flight
//! (`pipeline_channel_open`, our russh patch; RFC 4252 §5.1 hands whatever follows the request
//! that succeeds to the connection service): its confirmation comes with the success, and the
//! first exec takes it as its spare. A refused key's channel is never opened (the server
//! answers UNIMPLEMENTED) and is forgotten; the next key asks again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use russh::client::{self, Handle};
use russh::keys::{self, HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};

use super::config::{IdentityAgent, SshTarget};
use super::{ConnectOptions, PassphrasePrompt};
use crate::HostError;

/// Wrong passphrases allowed per key before it is skipped (OpenSSH asks three times too).
const PASSPHRASE_ATTEMPTS: usize = 3;

impl PassphrasePrompt {
    /// The key at `path` unlocked with a passphrase asked for (one prompt at a time; a key
    /// unlocked before is not asked for again). `None` when the user gave none (an empty line
    /// or end of input skips the key, as with `ssh`) or [`PASSPHRASE_ATTEMPTS`] wrong ones.
    async fn unlock(&self, path: &Path) -> Option<Arc<PrivateKey>> {
        let mut unlocked = self.unlocked.lock().await;
        if let Some(key) = unlocked.get(path) {
            return Some(key.clone());
        }
        for attempt in 0..PASSPHRASE_ATTEMPTS {
            let prompt = if attempt == 0 {
                format!("Enter passphrase for key '{}': ", path.display())
            } else {
                format!("Bad passphrase, try again for '{}': ", path.display())
            };
            let ask = self.ask.clone();
            let passphrase = tokio::task::spawn_blocking(move || ask(&prompt))
                .await
                .ok()
                .flatten()
                .filter(|p| !p.is_empty())?;
            if let Ok(key) = keys::load_secret_key(path, Some(&passphrase)) {
                let key = Arc::new(key);
                unlocked.insert(path.to_path_buf(), key.clone());
                return Some(key);
            }
        }
        None
    }
}

/// An IdentityFile that exists, with its public key when `FILE.pub` (or the unencrypted private
/// key) tells it.
struct IdentityFile {
    path: PathBuf,
    public: Option<PublicKey>,
}

fn describe(key: &PublicKey) -> String {
    format!(
        "{} {}",
        key.algorithm().as_str(),
        key.fingerprint(HashAlg::Sha256)
    )
}

fn same_key(a: &PublicKey, b: &PublicKey) -> bool {
    a.key_data() == b.key_data()
}

fn identity_files(target: &SshTarget) -> Vec<IdentityFile> {
    target
        .identity_files
        .iter()
        .filter(|p| p.is_file())
        .map(|path| {
            let mut pub_path = path.clone().into_os_string();
            pub_path.push(".pub");
            let public = keys::load_public_key(Path::new(&pub_path))
                .ok()
                .or_else(|| {
                    keys::load_secret_key(path, None)
                        .ok()
                        .map(|k| k.public_key().clone())
                });
            IdentityFile {
                path: path.clone(),
                public,
            }
        })
        .collect()
}

/// The RSA signature hash to use for `key` (`None` for other key types): the best one the
/// server's `server-sig-algs` (RFC 8308) names. A key file's request goes out signed at once, so
/// no query could correct a wrong choice; none is guessed either: OpenSSH (7.2 and later) sends
/// its ext-info right behind its NEWKEYS, in the flight that ends the key exchange, so it is in
/// when this asks (russh waits up to 1 s for it otherwise). A server that sends none gets
/// `ssh-rsa` (SHA-1), which the query would have named as well.
async fn rsa_hash<H: client::Handler>(
    handle: &Handle<H>,
    key: &PublicKey,
) -> Result<Option<HashAlg>, russh::Error> {
    if key.algorithm().is_rsa() {
        Ok(handle.best_supported_rsa_hash().await?.flatten())
    } else {
        Ok(None)
    }
}

#[cfg(unix)]
type Agent = keys::agent::client::AgentClient<tokio::net::UnixStream>;

/// Connects to the agent, or says why there is none.
#[cfg(unix)]
async fn connect_agent(which: &IdentityAgent) -> Result<Agent, String> {
    let path = match which {
        IdentityAgent::None => return Err("IdentityAgent none".into()),
        IdentityAgent::Path(p) => p.clone(),
        IdentityAgent::Env => match std::env::var_os("SSH_AUTH_SOCK") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => return Err("SSH_AUTH_SOCK not set".into()),
        },
    };
    keys::agent::client::AgentClient::connect_uds(&path)
        .await
        .map_err(|e| format!("ssh-agent at {}: {e}", path.display()))
}

#[cfg(windows)]
type Agent = keys::agent::client::AgentClient<tokio::net::windows::named_pipe::NamedPipeClient>;

/// Windows: the agent is a named pipe. OpenSSH for Windows' own, `\\.\pipe\openssh-ssh-agent`,
/// is asked when neither `IdentityAgent` nor `SSH_AUTH_SOCK` names another. Pageant is not
/// asked (its own protocol; `docs/platforms.md`).
#[cfg(windows)]
async fn connect_agent(which: &IdentityAgent) -> Result<Agent, String> {
    let pipe = match which {
        IdentityAgent::None => return Err("IdentityAgent none".into()),
        IdentityAgent::Path(p) => p.clone(),
        IdentityAgent::Env => std::env::var_os("SSH_AUTH_SOCK")
            .filter(|p| !p.is_empty())
            .map_or_else(
                || PathBuf::from(r"\\.\pipe\openssh-ssh-agent"),
                PathBuf::from,
            ),
    };
    keys::agent::client::AgentClient::connect_named_pipe(&pipe)
        .await
        .map_err(|e| format!("ssh-agent at {}: {e}", pipe.display()))
}

#[cfg(not(any(unix, windows)))]
type Agent = keys::agent::client::AgentClient<tokio::io::DuplexStream>;

#[cfg(not(any(unix, windows)))]
async fn connect_agent(_which: &IdentityAgent) -> Result<Agent, String> {
    Err("ssh-agent is not supported on this platform".into())
}

/// Who authenticated, and the channel asked for with it.
pub(crate) struct Authenticated {
    /// With what (`agent key ED25519 SHA256:…`, `identity file ~/.ssh/id_ed25519`).
    pub(crate) with: String,
    /// A session channel asked for in the same flight as the request that succeeded (an
    /// identity file's); `None` after an agent key, which opens its first channel once
    /// authenticated.
    pub(crate) channel: Option<client::ChannelOpening>,
}

/// Authenticates `target.user`, or returns `HostError::Auth` naming what was tried. With
/// `open_session`, a key file's request asks for a session channel in the same flight.
pub(crate) async fn authenticate<H: client::Handler>(
    handle: &mut Handle<H>,
    host: &str,
    target: &SshTarget,
    open_session: bool,
    options: &ConnectOptions,
) -> Result<Authenticated, HostError> {
    let log = &options.log;
    let user = target.user.as_str();
    log.say(host, || format!("authenticating as {user} (public key)"));
    for missing in target.identity_files.iter().filter(|p| !p.is_file()) {
        log.say(host, || {
            format!("identity file {}: not there, skipped", missing.display())
        });
    }
    let files = identity_files(target);
    let mut tried: Vec<String> = Vec::new();
    let mut agent_keys: Vec<PublicKey> = Vec::new();
    let auth_error = |reason: String| HostError::Auth {
        host: host.to_string(),
        reason,
    };
    let lost = |e: russh::Error, tried: &[String]| HostError::Auth {
        host: host.to_string(),
        reason: format!(
            "connection lost during authentication ({e}) after trying: {}",
            if tried.is_empty() {
                "nothing".to_string()
            } else {
                tried.join(", ")
            }
        ),
    };

    let agent_note = match connect_agent(&target.identity_agent).await {
        Err(why) => {
            log.say(host, || format!("no ssh-agent: {why}"));
            Some(why)
        }
        Ok(mut agent) => match agent.request_identities().await {
            Err(e) => {
                log.say(host, || format!("ssh-agent: {e}"));
                Some(format!("ssh-agent: {e}"))
            }
            Ok(identities) => {
                log.say(host, || {
                    format!("ssh-agent holds {} keys", identities.len())
                });
                let matches_file = |k: &PublicKey| {
                    files
                        .iter()
                        .any(|f| f.public.as_ref().is_some_and(|p| same_key(p, k)))
                };
                let keys: Vec<PublicKey> = identities
                    .iter()
                    .map(|id| id.public_key().into_owned())
                    .collect();
                let mut ordered: Vec<PublicKey> =
                    keys.iter().filter(|k| matches_file(k)).cloned().collect();
                if !target.identities_only {
                    ordered.extend(keys.iter().filter(|k| !matches_file(k)).cloned());
                }
                for key in ordered {
                    let hash = rsa_hash(handle, &key).await.map_err(|e| lost(e, &tried))?;
                    let result = handle
                        .authenticate_publickey_with(user, key.clone(), hash, &mut agent)
                        .await;
                    let answer = match &result {
                        Ok(r) if r.success() => "accepted".to_string(),
                        Ok(_) => "refused".to_string(),
                        Err(e) => format!("failed ({e})"),
                    };
                    log.say(host, || format!("agent key {}: {answer}", describe(&key)));
                    match result {
                        Ok(r) if r.success() => {
                            return Ok(Authenticated {
                                with: format!("agent key {}", describe(&key)),
                                channel: None,
                            });
                        }
                        Ok(_) => tried.push(format!("agent key {}", describe(&key))),
                        Err(e) => tried.push(format!("agent key {} ({e})", describe(&key))),
                    }
                    agent_keys.push(key);
                    if handle.is_closed() {
                        return Err(lost(russh::Error::Disconnect, &tried));
                    }
                }
                None
            }
        },
    };

    let mut encrypted: Vec<&Path> = Vec::new();
    for file in &files {
        if let Some(public) = &file.public
            && agent_keys.iter().any(|k| same_key(k, public))
        {
            log.say(host, || {
                format!(
                    "identity file {}: offered by the agent already",
                    file.path.display()
                )
            });
            continue;
        }
        let key = match keys::load_secret_key(&file.path, None) {
            Ok(key) => Arc::new(key),
            Err(keys::Error::KeyIsEncrypted) => {
                let unlocked = match &options.passphrase {
                    Some(prompt) => prompt.unlock(&file.path).await,
                    None => None,
                };
                match unlocked {
                    Some(key) => key,
                    None => {
                        log.say(host, || {
                            format!(
                                "identity file {}: passphrase-protected, not unlocked; skipped",
                                file.path.display()
                            )
                        });
                        encrypted.push(&file.path);
                        continue;
                    }
                }
            }
            Err(e) => {
                log.say(host, || {
                    format!("identity file {}: unreadable ({e})", file.path.display())
                });
                tried.push(format!("{} (unreadable: {e})", file.path.display()));
                continue;
            }
        };
        let hash = rsa_hash(handle, key.public_key())
            .await
            .map_err(|e| lost(e, &tried))?;
        let described = describe(key.public_key());
        let key = PrivateKeyWithHashAlg::new(key, hash);
        let (result, channel) = if open_session {
            handle
                .authenticate_publickey_opening_session(user, key)
                .await
        } else {
            handle
                .authenticate_publickey(user, key)
                .await
                .map(|result| (result, None))
        }
        .map_err(|e| lost(e, &tried))?;
        log.say(host, || {
            let answer = if result.success() {
                "accepted"
            } else {
                "refused"
            };
            format!(
                "identity file {} ({described}): {answer}",
                file.path.display()
            )
        });
        if result.success() {
            return Ok(Authenticated {
                with: format!("identity file {}", file.path.display()),
                channel,
            });
        }
        tried.push(file.path.display().to_string());
    }

    let agent_note = agent_note
        .map(|n| format!(" (no agent: {n})"))
        .unwrap_or_default();
    if !encrypted.is_empty() {
        let list: Vec<String> = encrypted.iter().map(|p| p.display().to_string()).collect();
        let refused = if tried.is_empty() {
            String::new()
        } else {
            format!("; refused: {}", tried.join(", "))
        };
        let why = if options.passphrase.is_some() {
            "no passphrase that unlocks it was given"
        } else {
            "cannot ask for a passphrase here (stdin and stderr are not a terminal)"
        };
        return Err(auth_error(format!(
            "{} is passphrase-protected and no ssh-agent holds it{agent_note}; {why}, run `ssh-add {}` first{refused}",
            list.join(", "),
            list[0],
        )));
    }
    if tried.is_empty() {
        return Err(auth_error(format!(
            "no key to offer for {user}: no agent key{agent_note} and no IdentityFile exists ({})",
            target
                .identity_files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Err(auth_error(format!(
        "server refused every key for {user}: {}",
        tried.join(", ")
    )))
}

// Every test here drives the passphrase prompt with keys the machine's ssh-keygen makes: a
// Windows build under wine cannot run the Linux one.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// A prompt that answers from `answers` in order and records each prompt it was shown.
    fn scripted(answers: &[&str]) -> (PassphrasePrompt, Arc<Mutex<Vec<String>>>) {
        let answers: Mutex<Vec<String>> =
            Mutex::new(answers.iter().rev().map(|a| a.to_string()).collect());
        let shown = Arc::new(Mutex::new(Vec::new()));
        let seen = shown.clone();
        let prompt = PassphrasePrompt::new(move |text| {
            seen.lock().unwrap().push(text.to_string());
            answers.lock().unwrap().pop()
        });
        (prompt, shown)
    }

    #[test]
    fn passphrases_are_asked_three_times_at_most_and_an_unlocked_key_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("id_locked");
        // ssh-keygen writes the encrypted key as users have them.
        let made = std::process::Command::new("ssh-keygen")
            // One KDF round: each wrong passphrase costs a full bcrypt run otherwise.
            .args([
                "-q", "-t", "ed25519", "-a", "1", "-N", "right", "-C", "", "-f",
            ])
            .arg(&path)
            .stdin(std::process::Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but ssh-keygen is missing (run .ci/install-deps)"
            );
            eprintln!("skipping: no ssh-keygen");
            return;
        }
        let key = keys::load_public_key(path.with_extension("pub")).unwrap();
        assert!(matches!(
            keys::load_secret_key(&path, None),
            Err(keys::Error::KeyIsEncrypted)
        ));

        let (prompt, shown) = scripted(&["wrong", "right", "never asked"]);
        let unlocked = block_on(prompt.unlock(&path)).expect("unlocked");
        assert_eq!(unlocked.public_key().key_data(), key.key_data());
        let expected = [
            format!("Enter passphrase for key '{}': ", path.display()),
            format!("Bad passphrase, try again for '{}': ", path.display()),
        ];
        assert_eq!(*shown.lock().unwrap(), expected);
        // Kept for the other hosts of the run: not asked again.
        assert!(block_on(prompt.unlock(&path)).is_some());
        assert_eq!(shown.lock().unwrap().len(), 2);

        let (prompt, shown) = scripted(&["a", "b", "c", "right"]);
        assert!(block_on(prompt.unlock(&path)).is_none());
        assert_eq!(shown.lock().unwrap().len(), PASSPHRASE_ATTEMPTS);

        // An empty answer, or none (end of input), skips the key at once.
        for answers in [&[""][..], &[]] {
            let (prompt, shown) = scripted(answers);
            assert!(block_on(prompt.unlock(&path)).is_none());
            assert_eq!(shown.lock().unwrap().len(), 1);
        }
    }
}
