//! Public-key authentication, in OpenSSH's order: ssh-agent keys (those matching an
//! IdentityFile first; only those under `IdentitiesOnly`), then the IdentityFile list (missing
//! files skipped). Stops at the first success: sshd's MaxAuthTries (6) counts every key offered.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use russh::client::{self, Handle};
use russh::keys::{self, HashAlg, PrivateKeyWithHashAlg, PublicKey};

use super::config::{IdentityAgent, SshTarget};
use crate::HostError;

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

/// The RSA signature hash to use for `key` (`None` for other key types).
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

#[cfg(not(unix))]
type Agent = keys::agent::client::AgentClient<tokio::io::DuplexStream>;

// TODO(#ssh-windows-agent): the OpenSSH named pipe and Pageant.
#[cfg(not(unix))]
async fn connect_agent(_which: &IdentityAgent) -> Result<Agent, String> {
    Err("ssh-agent is not supported on this platform yet".into())
}

/// Authenticates `target.user`, or returns `HostError::Auth` naming what was tried. On success,
/// says with what (`agent key ED25519 SHA256:…`, `identity file ~/.ssh/id_ed25519`).
pub(crate) async fn authenticate<H: client::Handler>(
    handle: &mut Handle<H>,
    host: &str,
    target: &SshTarget,
) -> Result<String, HostError> {
    let user = target.user.as_str();
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
        Err(why) => Some(why),
        Ok(mut agent) => match agent.request_identities().await {
            Err(e) => Some(format!("ssh-agent: {e}")),
            Ok(identities) => {
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
                    match result {
                        Ok(r) if r.success() => return Ok(format!("agent key {}", describe(&key))),
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
            continue; // The agent already offered this key.
        }
        let key = match keys::load_secret_key(&file.path, None) {
            Ok(key) => key,
            Err(keys::Error::KeyIsEncrypted) => {
                encrypted.push(&file.path);
                continue;
            }
            Err(e) => {
                tried.push(format!("{} (unreadable: {e})", file.path.display()));
                continue;
            }
        };
        let hash = rsa_hash(handle, key.public_key())
            .await
            .map_err(|e| lost(e, &tried))?;
        let result = handle
            .authenticate_publickey(user, PrivateKeyWithHashAlg::new(Arc::new(key), hash))
            .await
            .map_err(|e| lost(e, &tried))?;
        if result.success() {
            return Ok(format!("identity file {}", file.path.display()));
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
        // TODO(#ssh-passphrase): prompt on a TTY; until then the agent is the way.
        return Err(auth_error(format!(
            "{} is passphrase-protected and no ssh-agent holds it{agent_note}; cannot ask for a passphrase here, run `ssh-add {}` first{refused}",
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
