//! Warm hosts: the server's opened hosts, kept by name between tool calls so that an agent that
//! polls a session reuses one SSH connection (as `--follow` keeps its host across polls). A
//! host that failed is forgotten (its connection dropped), so the next call connects afresh;
//! one nobody used for the idle time is closed by [`Pool::close_idle`]. What a host keeps of
//! the sessions read on it ([`super::kept`]) goes with it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clankie_host::AnyHost;
use clankie_model::RootSpec;

use super::HostSource;
use super::kept::KeptSessions;
use crate::error::Error;

/// A host opened for the server, with its roots and when a call last used it.
#[derive(Debug)]
pub(crate) struct WarmHost {
    pub host: AnyHost,
    pub roots: Vec<RootSpec>,
    /// The sessions read on this host, kept between calls while the host is.
    pub sessions: KeptSessions,
    last_used: Mutex<Instant>,
}

impl WarmHost {
    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(*self.last_used.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The opened hosts, by the name the calls gave.
pub(crate) struct Pool {
    source: Arc<dyn HostSource>,
    hosts: tokio::sync::Mutex<HashMap<String, Arc<WarmHost>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

impl Pool {
    pub(crate) fn new(source: Arc<dyn HostSource>) -> Pool {
        Pool {
            source,
            hosts: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Where hosts come from.
    pub(crate) fn source(&self) -> &dyn HostSource {
        &*self.source
    }

    /// The host named `name`: the one opened by an earlier call (`true`), or a new one (not
    /// yet connected: the first read connects).
    pub(crate) async fn get(&self, name: &str) -> Result<(Arc<WarmHost>, bool), Error> {
        let mut hosts = self.hosts.lock().await;
        if let Some(warm) = hosts.get(name) {
            warm.touch();
            return Ok((warm.clone(), true));
        }
        let (mut host, roots) = self.source.open(name)?;
        // Polled by the calls: each call's script runs on a shell kept on the connection.
        host.keep_shell();
        let warm = Arc::new(WarmHost {
            host,
            roots,
            sessions: KeptSessions::default(),
            last_used: Mutex::new(Instant::now()),
        });
        hosts.insert(name.to_string(), warm.clone());
        Ok((warm, false))
    }

    /// Drops the host's connection and forgets it: after an error that failed the host, the
    /// next call starts from a new connection (and one bad host never poisons the others).
    pub(crate) async fn forget(&self, name: &str) {
        let removed = self.hosts.lock().await.remove(name);
        if let Some(warm) = removed {
            warm.host.disconnect().await;
        }
    }

    /// Closes the hosts no call has used for `idle` and that no call holds now. Returns their
    /// names.
    pub(crate) async fn close_idle(&self, idle: Duration) -> Vec<String> {
        let now = Instant::now();
        let closed: Vec<(String, Arc<WarmHost>)> = {
            let mut hosts = self.hosts.lock().await;
            let names: Vec<String> = hosts
                .iter()
                // Held by a call (the map holds one reference): not idle, whatever the clock.
                .filter(|(_, warm)| Arc::strong_count(warm) == 1 && warm.idle_for(now) >= idle)
                .map(|(name, _)| name.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|name| hosts.remove(&name).map(|warm| (name, warm)))
                .collect()
        };
        for (_, warm) in &closed {
            warm.host.disconnect().await;
        }
        closed.into_iter().map(|(name, _)| name).collect()
    }

    /// The notes the hosts gathered for `-v` since last asked.
    pub(crate) async fn take_notes(&self) -> Vec<String> {
        let hosts = self.hosts.lock().await;
        hosts
            .values()
            .flat_map(|warm| warm.host.take_notes())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens local hosts, counting how often.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    impl HostSource for Counting {
        fn open(&self, name: &str) -> Result<(AnyHost, Vec<RootSpec>), Error> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let config = clankie_host::HostConfig {
                name: name.to_string(),
                transport: clankie_host::Transport::Local,
                shell: None,
            };
            Ok((clankie_host::open(&config, None)?, Vec::new()))
        }
    }

    #[tokio::test]
    async fn a_host_is_opened_once_until_forgotten_or_idle() {
        let source = Arc::new(Counting::default());
        let pool = Pool::new(source.clone());
        let opened = || source.0.load(std::sync::atomic::Ordering::SeqCst);
        let (first, reused) = pool.get("a").await.unwrap();
        assert!(!reused);
        assert!(pool.get("a").await.unwrap().1);
        assert_eq!(opened(), 1);
        // Held by a call: never closed as idle.
        assert!(pool.close_idle(Duration::ZERO).await.is_empty());
        drop(first);
        assert_eq!(pool.close_idle(Duration::from_secs(3600)).await.len(), 0);
        assert_eq!(pool.close_idle(Duration::ZERO).await, ["a"]);
        pool.get("a").await.unwrap();
        assert_eq!(opened(), 2);
        pool.forget("a").await;
        pool.get("a").await.unwrap();
        assert_eq!(opened(), 3);
    }
}
