//! What `resume` prints for a session: the harness's own command, run from the session's
//! directory as its records (or a sidecar file) name it.

use clankie_engine::harness::{self, Source};
use clankie_engine::session::SessionFile;
use clankie_host::{FileRef, Host};
use clankie_model::ByteRange;

use super::{DriverError, Reader};

impl<'h, H: Host> Reader<'h, H> {
    /// What `resume` prints for a session: the harness's own command, from the session's directory
    /// as its records (or sidecar file) name it. A sidecar that cannot be read leaves the `cd` out.
    /// `explicit_root`: the session's root was given (`--root`, the hosts file), so the harness
    /// is pointed at it with its own variable; `remote`: how `ssh` reaches the host, when it is
    /// not this machine.
    pub async fn resume_command(
        &self,
        session: &SessionFile,
        explicit_root: bool,
        remote: Option<clankie_engine::resume::Remote>,
    ) -> Result<String, DriverError> {
        use clankie_engine::harness as resume;
        use clankie_engine::resume::{Place, root_variable};
        let harness = session.harness();
        let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
        let root = String::from_utf8_lossy(&session.entry.root).into_owned();
        let is_database = harness::source(session) == Source::Database;
        let env = explicit_root
            .then(|| root_variable(harness, &root, is_database.then_some(path.as_str())))
            .flatten();
        if is_database {
            let snapshot = self.databases.load(self.host, &session.entry).await?;
            let cwd = snapshot.session_cwd(&session.id).await?;
            let place = Place { cwd, env, remote };
            return Ok(resume::resume_line(harness, &session.id, &path, &place));
        }
        let file = FileRef {
            harness,
            root: session.entry.root.to_vec(),
            rel: session.entry.rel.clone(),
        };
        let head_range = [ByteRange::new(0, clankie_model::limits::RESUME_HEAD_BYTES)];
        let head = self.host.read(&file, &head_range).await?.chunks.concat();
        let cwd = match resume::cwd_source(harness) {
            None => resume::session_cwd(harness, &head),
            Some(sidecar) => {
                let rel = sidecar_rel(&session.entry.rel, sidecar);
                let sidecar = FileRef {
                    rel,
                    ..file.clone()
                };
                match self.host.read(&sidecar, &head_range).await {
                    Ok(result) => resume::session_cwd(harness, &result.chunks.concat()),
                    Err(_) => None,
                }
            }
        }
        .or_else(|| resume::cwd_from_location(session));
        let id = resume::native_id(harness, &head).unwrap_or_else(|| session.id.clone());
        let place = Place { cwd, env, remote };
        Ok(resume::resume_line(harness, &id, &path, &place))
    }
}

/// The note `resume` gives beside its command when the session's root was given
/// (`explicit_root`) but no variable of its harness can name it, so the command leaves it out
/// ([`clankie_engine::resume::unnamed_root_note`]); `None` otherwise.
pub fn unnamed_root_note(session: &SessionFile, explicit_root: bool) -> Option<String> {
    use clankie_engine::resume::{root_variable, unnamed_root_note};
    if !explicit_root {
        return None;
    }
    let harness = session.harness();
    let path = String::from_utf8_lossy(&session.entry.full_path()).into_owned();
    let root = String::from_utf8_lossy(&session.entry.root).into_owned();
    let is_database = harness::source(session) == Source::Database;
    match root_variable(harness, &root, is_database.then_some(path.as_str())) {
        Some(_) => None,
        None => Some(unnamed_root_note(harness, &root)),
    }
}

/// The path of a sidecar file (`summary.json`, `../x`) relative to the directory of the
/// transcript at `rel`.
pub(super) fn sidecar_rel(rel: &[u8], sidecar: &str) -> Vec<u8> {
    let dir = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => &rel[..i],
        None => &b""[..],
    };
    let mut out = dir.to_vec();
    for part in sidecar.split('/') {
        if part == ".." {
            let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
            out.truncate(cut);
        } else {
            out.push(b'/');
            out.extend_from_slice(part.as_bytes());
        }
    }
    out
}
