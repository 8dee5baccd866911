//! Bytes on the wire of one SSH connection, each way, for `-v`: a stream wrapper that counts
//! what passes through it (encrypted packets, padding and MACs included), read by the
//! connection's log lines.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The counts of one connection, shared by its stream and whoever reports them.
#[derive(Debug, Default)]
pub(crate) struct WireBytes {
    up: AtomicU64,
    down: AtomicU64,
}

impl WireBytes {
    /// Bytes sent to the host so far.
    pub(crate) fn up(&self) -> u64 {
        self.up.load(Ordering::Relaxed)
    }

    /// Bytes received from the host so far.
    pub(crate) fn down(&self) -> u64 {
        self.down.load(Ordering::Relaxed)
    }

    /// `up U, down D bytes on the wire`, as `-v` says it.
    pub(crate) fn said(&self) -> String {
        format!("up {}, down {} bytes on the wire", self.up(), self.down())
    }
}

/// `inner`, counting into `bytes`.
pub(crate) struct Counted<S> {
    inner: S,
    bytes: Arc<WireBytes>,
}

impl<S> Counted<S> {
    pub(crate) fn new(inner: S, bytes: Arc<WireBytes>) -> Counted<S> {
        Counted { inner, bytes }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.bytes.down.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            self.bytes.up.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn counts_each_way() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (ours, mut theirs) = tokio::io::duplex(64);
            let bytes = Arc::new(WireBytes::default());
            let mut counted = Counted::new(ours, bytes.clone());
            counted.write_all(b"hello").await.unwrap();
            theirs.write_all(b"abc").await.unwrap();
            let mut got = [0u8; 3];
            counted.read_exact(&mut got).await.unwrap();
            assert_eq!((bytes.up(), bytes.down()), (5, 3));
            assert_eq!(bytes.said(), "up 5, down 3 bytes on the wire");
        });
    }
}
