//! `grep --store`: a host's records as the store holds them, searched with the engine's
//! [`SessionSearch`] exactly as a host's are. The text index only narrows which records (or,
//! with context asked for, which sessions) are handed to the search; the regex decides every
//! match.

use clankie_engine::SourceCtx;
use clankie_engine::search::{Query, SessionSearch};
use clankie_model::{Harness, Record};

use super::{Store, StoreError, StoredSession};
use crate::driver::search::SessionFound;

/// Searches the sessions of `host` the store holds (of `harness` only, when given), in the
/// host's listing order; `on_session` gets each session with a match.
pub async fn search_host(
    store: &mut Store,
    host: &str,
    harness: Option<Harness>,
    query: &Query,
    mut on_session: impl FnMut(SessionFound),
) -> Result<(), StoreError> {
    let mut sessions = store.sessions(host).await?;
    if let Some(harness) = harness {
        sessions.retain(|s| s.session.harness() == harness);
    }
    // An unredacted store's records are redacted before matching, as a host's are; the
    // index holds the raw text then, which a literal of the redacted text need not be in.
    let redact = query.redact && !store.redacted();
    let context = query.before > 0 || query.after > 0;
    let search = |stored: &StoredSession, mut records: Vec<Record>| {
        if redact {
            clankie_engine::redact::redact_records(&mut records);
        }
        let ctx = SourceCtx {
            host: host.to_string(),
            harness: stored.session.harness(),
            session: stored.session.id.clone(),
            agent: stored.session.agent.clone(),
        };
        let mut search = SessionSearch::new(ctx, query);
        let mut found = Vec::new();
        search.records(records, &mut found);
        SessionFound {
            harness: stored.session.harness().name(),
            session: stored.session.id.clone(),
            matches: search.matches(),
            found,
        }
    };
    let candidates = if redact {
        None
    } else {
        store.candidates(host, &sessions, &query.matcher).await?
    };
    match candidates {
        // Only the records the index finds can match, and with no context asked for they
        // are all the search needs.
        Some(each) if !context => {
            for (k, records) in each {
                let found = search(&sessions[k], records);
                if found.matches > 0 {
                    on_session(found);
                }
            }
        }
        _ => {
            // With context, a session with a candidate is searched whole; without an index,
            // every session is.
            let mut wanted = vec![candidates.is_none(); sessions.len()];
            for (k, _) in candidates.iter().flatten() {
                wanted[*k] = true;
            }
            for (stored, wanted) in sessions.iter().zip(wanted) {
                if !wanted {
                    continue;
                }
                let records = store.records(host, stored).await?;
                let found = search(stored, records);
                if found.matches > 0 {
                    on_session(found);
                }
            }
        }
    }
    Ok(())
}
