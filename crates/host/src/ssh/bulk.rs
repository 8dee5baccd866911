//! How one connection's batched reads encode their payload ([`BulkChoice`]): compressed by the
//! host (`zstd -1` or `gzip -1`, then `base64`) or plain `base64`.
//!
//! Compression is worth its CPU only where the link is slower than the host's compressor and
//! our decompressor: on a link of 20 Mbit/s it moves a third of the bytes, on loopback or a
//! fast LAN the batches wait on `zstd` while the link stands idle. Neither speed is known
//! before the bytes move, so the first batches that each carry at least [`SAMPLE_BYTES`] are
//! sent both ways in turn, each timed from its exec to its decoded reply, and once each way
//! has [`SAMPLES`] of them the way that decoded more bytes per second is kept for the rest of
//! the connection. The batches in flight together share the link and the two ends' CPUs alike,
//! so their rates compare like for like. A host where no compressor answered has only the
//! plain way, and every batch keeps the checks of its encoding either way.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A batch that asks fewer bytes than this is neither timed nor sent plain before the choice:
/// its time is mostly the exec's round trip and the host's shell, not its bytes.
pub(super) const SAMPLE_BYTES: u64 = 1 << 20;

/// Timed batches of each way before the choice.
const SAMPLES: usize = 2;

/// How a batch's payload travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// Through the host's compressor (or its probe), as every batch without a choice.
    Compressed,
    /// `base64` alone.
    Plain,
}

/// The choice of one connection (see the module doc).
#[derive(Debug, Default)]
pub(super) struct BulkChoice {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    chosen: Option<Way>,
    /// Large batches started while trying: the odd ones go plain.
    started: u64,
    /// Bytes decoded and seconds taken by the timed batches of each way.
    compressed: Rate,
    plain: Rate,
}

#[derive(Debug, Default, Clone, Copy)]
struct Rate {
    batches: usize,
    bytes: u64,
    seconds: f64,
}

impl Rate {
    fn per_second(self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-6)
    }
}

impl BulkChoice {
    /// The way of a batch that asks `asked` bytes; `compressor`: a reply of this host named
    /// `zstd` or `gzip` (so `base64` answers there too).
    pub(super) fn way(&self, asked: u64, compressor: bool) -> Way {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(way) = state.chosen {
            return way;
        }
        if !compressor || asked < SAMPLE_BYTES {
            return Way::Compressed;
        }
        let (plain, compressed) = (state.plain.batches, state.compressed.batches);
        state.started += 1;
        if plain >= SAMPLES {
            Way::Compressed
        } else if compressed >= SAMPLES || state.started % 2 == 0 {
            Way::Plain
        } else {
            Way::Compressed
        }
    }

    /// Counts a batch sent `way` (`timed`: [`BulkChoice::way`] was asked while trying, and it
    /// asked at least [`SAMPLE_BYTES`]) that decoded to `bytes` in `elapsed`; returns the rates
    /// when this made the choice (compressed, plain, in bytes per second).
    pub(super) fn record(&self, way: Way, bytes: u64, elapsed: Duration) -> Option<(f64, f64)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.chosen.is_some() || bytes < SAMPLE_BYTES {
            return None;
        }
        let rate = match way {
            Way::Compressed => &mut state.compressed,
            Way::Plain => &mut state.plain,
        };
        rate.batches += 1;
        rate.bytes += bytes;
        rate.seconds += elapsed.as_secs_f64();
        if state.compressed.batches < SAMPLES || state.plain.batches < SAMPLES {
            return None;
        }
        let (compressed, plain) = (state.compressed.per_second(), state.plain.per_second());
        state.chosen = Some(if plain >= compressed {
            Way::Plain
        } else {
            Way::Compressed
        });
        Some((compressed, plain))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn small_batches_and_hosts_without_a_compressor_are_never_sent_plain_before_the_choice() {
        let choice = BulkChoice::default();
        for _ in 0..4 {
            assert_eq!(choice.way(MIB - 1, true), Way::Compressed);
            assert_eq!(choice.way(4 * MIB, false), Way::Compressed);
        }
    }

    #[test]
    fn large_batches_go_both_ways_in_turn_and_the_faster_is_kept() {
        let choice = BulkChoice::default();
        let ways: Vec<Way> = (0..4).map(|_| choice.way(4 * MIB, true)).collect();
        assert_eq!(
            ways,
            [Way::Compressed, Way::Plain, Way::Compressed, Way::Plain]
        );
        let second = Duration::from_secs(1);
        assert_eq!(choice.record(Way::Compressed, 4 * MIB, second), None);
        assert_eq!(choice.record(Way::Plain, 4 * MIB, second / 4), None);
        // A batch under the sample size counts for nothing.
        assert_eq!(choice.record(Way::Plain, MIB / 2, second), None);
        assert_eq!(choice.record(Way::Compressed, 4 * MIB, second), None);
        let rates = choice.record(Way::Plain, 4 * MIB, second / 4).unwrap();
        assert!(rates.1 > rates.0);
        // Chosen for every batch from then on, small or large.
        assert_eq!(choice.way(4 * MIB, true), Way::Plain);
        assert_eq!(choice.way(1, true), Way::Plain);
        assert_eq!(choice.record(Way::Compressed, 4 * MIB, second), None);
    }

    #[test]
    fn a_slow_link_keeps_compression() {
        let choice = BulkChoice::default();
        let second = Duration::from_secs(1);
        for _ in 0..2 {
            choice.record(Way::Plain, 4 * MIB, 3 * second);
        }
        // One way's samples are full: the other way's batches follow.
        assert_eq!(choice.way(4 * MIB, true), Way::Compressed);
        assert_eq!(choice.way(4 * MIB, true), Way::Compressed);
        choice.record(Way::Compressed, 4 * MIB, second);
        assert!(choice.record(Way::Compressed, 4 * MIB, second).is_some());
        assert_eq!(choice.way(4 * MIB, true), Way::Compressed);
    }
}
