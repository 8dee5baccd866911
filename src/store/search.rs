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
    // Each candidate the index gives is decided as it is read and dropped unless it
    // matches; with context asked for, a session with a candidate is searched whole. An
    // unredacted store's index holds the raw text, so redacting searches are not looked up.
    let mut matched: Vec<Vec<(i64, Record)>> = vec![Vec::new(); sessions.len()];
    let mut counted = vec![0usize; sessions.len()];
    let mut has_candidate = vec![false; sessions.len()];
    let looked_up = !redact
        && store
            .candidates(host, &sessions, &query.matcher, |k, seq, record| {
                has_candidate[k] = true;
                if context || !query.matches_record(&record) {
                    return;
                }
                if query.count_only {
                    counted[k] += 1;
                } else {
                    matched[k].push((seq, record));
                }
            })
            .await?;
    for (k, stored) in sessions.iter().enumerate() {
        if !looked_up || context {
            // Without an index every session is searched; with context, each with a
            // candidate.
            if looked_up && !has_candidate[k] {
                continue;
            }
            let records = store.records(host, stored).await?;
            let found = search(stored, records);
            if found.matches > 0 {
                on_session(found);
            }
        } else if query.count_only {
            // A count needs no order: `-m` caps it, as the session search stops counting.
            let matches = query
                .max_count
                .map_or(counted[k], |max| counted[k].min(max));
            if matches > 0 {
                on_session(SessionFound {
                    harness: stored.session.harness().name(),
                    session: stored.session.id.clone(),
                    matches,
                    found: Vec::new(),
                });
            }
        } else if !matched[k].is_empty() {
            // The session search gives the matches in the session's order, up to `-m`.
            let mut records = std::mem::take(&mut matched[k]);
            records.sort_by_key(|(seq, _)| *seq);
            let found = search(stored, records.into_iter().map(|(_, r)| r).collect());
            if found.matches > 0 {
                on_session(found);
            }
        }
    }
    Ok(())
}
