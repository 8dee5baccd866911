//! How one connection's batched reads encode their payload ([`BulkChoice`]): compressed by the
//! host (`zstd -1` or `gzip -1`, then `base64`) or plain `base64`.
//!
//! Compression is worth its CPU only where the link is slower than the host's compressor and
//! our decompressor: on a link of 20 Mbit/s it moves a third of the bytes, on loopback or a
//! fast LAN the batches wait on `zstd` and our decoder while the link stands idle. Neither speed
//! is known before the bytes move, so a connection's batches that each ask at least
//! [`SAMPLE_BYTES`] go compressed until [`SAMPLES`] of them have ended, then plain until as
//! many plain ones have ended; each way's rate is the bytes its batches decoded over the time
//! from its first batch's exec to its last one's decoded reply, and the way of the higher
//! rate is kept for the rest of the connection. A link that moved the compressed batches'
//! bytes at under [`SLOW_WIRE`] is kept compressed without trying plain bytes on it: plain
//! would move about three times the bytes on a link already that slow. The ways are timed
//! one after the other, each with the batches in flight that the reads keep, not side by
//! side: what they share (one client thread, the two ends' CPUs, the link) would hide their
//! difference. A host where no
//! compressor answered has only the plain way, and every batch keeps the checks of its
//! encoding either way.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// A batch that asks fewer bytes than this is neither timed nor sent plain before the choice:
/// its time is mostly the exec's round trip and the host's shell, not its bytes.
pub(super) const SAMPLE_BYTES: u64 = 1 << 20;

/// Bytes per second on the wire (the replies' text) under which the compressed batches'
/// link is taken for a slow one (32 Mbit/s).
const SLOW_WIRE: f64 = 4e6;

/// Timed batches of each way before the choice: as many as the reads keep in flight.
const SAMPLES: usize = 4;

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
    compressed: Span,
    plain: Span,
}

/// The timed batches of one way: how many ended, the bytes they decoded, and the time from
/// the first one's start to the last one's end.
#[derive(Debug, Default, Clone, Copy)]
struct Span {
    ended: usize,
    bytes: u64,
    /// The replies' bytes as they came (the encoded text).
    wire: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Span {
    fn seconds(self) -> f64 {
        let seconds = match (self.first, self.last) {
            (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
            _ => 0.0,
        };
        seconds.max(1e-6)
    }

    fn per_second(self) -> f64 {
        self.bytes as f64 / self.seconds()
    }
}

impl BulkChoice {
    /// The way of a batch that asks `asked` bytes, starting `now`; `compressor`: a reply of
    /// this host named `zstd` or `gzip` (so `base64` answers there too).
    pub(super) fn way(&self, asked: u64, compressor: bool, now: Instant) -> Way {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(way) = state.chosen {
            return way;
        }
        if !compressor || asked < SAMPLE_BYTES {
            return Way::Compressed;
        }
        let (way, span) = if state.compressed.ended < SAMPLES {
            (Way::Compressed, &mut state.compressed)
        } else {
            (Way::Plain, &mut state.plain)
        };
        span.first.get_or_insert(now);
        way
    }

    /// Whether the way is chosen (its batches are not timed past that).
    pub(super) fn chosen(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .chosen
            .is_some()
    }

    /// Counts a batch sent `way` that asked at least [`SAMPLE_BYTES`], came as `wire` bytes
    /// and decoded to `bytes`, ending `now`; returns the rates when this made the choice
    /// (compressed, plain, in decoded bytes per second; plain `None` when it was not tried).
    pub(super) fn record(
        &self,
        way: Way,
        bytes: u64,
        wire: u64,
        now: Instant,
    ) -> Option<(f64, Option<f64>)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.chosen.is_some() {
            return None;
        }
        let span = match way {
            Way::Compressed => &mut state.compressed,
            Way::Plain => &mut state.plain,
        };
        // A batch started before its way was timed (the host's compressor not known yet)
        // counts for nothing.
        span.first?;
        span.ended += 1;
        span.bytes += bytes;
        span.wire += wire;
        span.last = Some(now);
        let compressed = state.compressed;
        if way == Way::Compressed
            && compressed.ended == SAMPLES
            && state.plain.first.is_none()
            && (compressed.wire as f64 / compressed.seconds()) < SLOW_WIRE
        {
            state.chosen = Some(Way::Compressed);
            return Some((compressed.per_second(), None));
        }
        if state.plain.ended < SAMPLES {
            return None;
        }
        let (compressed, plain) = (compressed.per_second(), state.plain.per_second());
        state.chosen = Some(if plain > compressed {
            Way::Plain
        } else {
            Way::Compressed
        });
        Some((compressed, Some(plain)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MIB: u64 = 1 << 20;

    #[test]
    fn small_batches_and_hosts_without_a_compressor_are_never_sent_plain_before_the_choice() {
        let choice = BulkChoice::default();
        let now = Instant::now();
        for _ in 0..8 {
            assert_eq!(choice.way(MIB - 1, true, now), Way::Compressed);
            assert_eq!(choice.way(4 * MIB, false, now), Way::Compressed);
        }
        // A batch of a way not timed yet counts for nothing.
        assert_eq!(choice.record(Way::Plain, 4 * MIB, 4 * MIB, now), None);
    }

    /// Batches go compressed until `SAMPLES` of them ended, then plain until as many plain
    /// ones ended; the way of more bytes per second of its span is kept.
    fn choose(compressed: Duration, plain: Duration) -> (BulkChoice, (f64, Option<f64>)) {
        let choice = BulkChoice::default();
        assert!(!choice.chosen());
        let t0 = Instant::now();
        for _ in 0..SAMPLES + 2 {
            assert_eq!(choice.way(4 * MIB, true, t0), Way::Compressed);
        }
        for _ in 0..SAMPLES {
            assert_eq!(
                choice.record(Way::Compressed, 4 * MIB, 4 * MIB, t0 + compressed),
                None
            );
        }
        let t1 = t0 + compressed;
        assert_eq!(choice.way(4 * MIB, true, t1), Way::Plain);
        // The compressed batches still in flight end within the plain ones' span.
        for _ in 0..2 {
            assert_eq!(choice.record(Way::Compressed, 4 * MIB, 4 * MIB, t1), None);
        }
        for _ in 1..SAMPLES {
            assert_eq!(choice.way(4 * MIB, true, t1), Way::Plain);
            assert_eq!(
                choice.record(Way::Plain, 4 * MIB, 4 * MIB, t1 + plain),
                None
            );
        }
        let rates = choice
            .record(Way::Plain, 4 * MIB, 4 * MIB, t1 + plain)
            .unwrap();
        (choice, rates)
    }

    #[test]
    fn a_fast_link_goes_plain_from_the_choice_on() {
        let (choice, (compressed, plain)) =
            choose(Duration::from_secs(2), Duration::from_millis(500));
        let plain = plain.unwrap();
        assert!(plain > compressed, "{plain} {compressed}");
        assert!(choice.chosen());
        let now = Instant::now();
        assert_eq!(choice.way(4 * MIB, true, now), Way::Plain);
        assert_eq!(choice.way(1, true, now), Way::Plain);
        assert_eq!(choice.record(Way::Compressed, 4 * MIB, 4 * MIB, now), None);
    }

    #[test]
    fn compression_that_decodes_faster_is_kept() {
        let (choice, (compressed, plain)) = choose(Duration::from_secs(2), Duration::from_secs(5));
        let plain = plain.unwrap();
        assert!(compressed > plain, "{plain} {compressed}");
        assert_eq!(choice.way(4 * MIB, true, Instant::now()), Way::Compressed);
    }

    #[test]
    fn a_link_that_moved_the_compressed_batches_slowly_is_not_tried_plain() {
        let choice = BulkChoice::default();
        let t0 = Instant::now();
        for _ in 0..SAMPLES {
            assert_eq!(choice.way(4 * MIB, true, t0), Way::Compressed);
        }
        // 4 × 1.5 MiB of text in 2 s: 3 MB/s on the wire.
        let end = t0 + Duration::from_secs(2);
        for _ in 1..SAMPLES {
            assert_eq!(
                choice.record(Way::Compressed, 4 * MIB, 3 * MIB / 2, end),
                None
            );
        }
        let (_, plain) = choice
            .record(Way::Compressed, 4 * MIB, 3 * MIB / 2, end)
            .unwrap();
        assert_eq!(plain, None);
        assert_eq!(choice.way(4 * MIB, true, end), Way::Compressed);
    }
}
