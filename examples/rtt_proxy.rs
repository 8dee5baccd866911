//! A delaying TCP proxy for benchmarks over a realistic link: listens on 127.0.0.1, forwards
//! every connection to TARGET, and holds each chunk of bytes for RTT/2 in each direction (so
//! a round trip costs RTT). Counts the bytes each way and, with `--trace`, prints each chunk
//! as it is forwarded (`<conn> <ms since the connection> <up|down> <bytes>`), from which the
//! round trips of a protocol can be counted. With `--rate 20mbit` each direction is also a
//! link of that bandwidth: a chunk leaves once the link has sent the chunks before it, taking
//! its size over the rate (`kbit`, `mbit`, `gbit`, or bits per second). Used by
//! `scripts/bench --rtt MS [--rate RATE]`.
//!
//! Usage: rtt_proxy RTT_MS TARGET_HOST:PORT [--trace] [--rate RATE]
//! Prints `port <N>` on stdout once listening, and per connection when it ends
//! `conn <id> up <bytes> down <bytes>` (up: client to target).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: rtt_proxy RTT_MS TARGET_HOST:PORT [--trace] [--rate RATE]");
        std::process::exit(2);
    };
    let (rtt_ms, target) = match args.get(1..3) {
        Some([rtt, target]) => (rtt.clone(), target.clone()),
        _ => usage(),
    };
    let (mut trace, mut rate) = (false, None);
    let mut rest = args[3..].iter();
    while let Some(flag) = rest.next() {
        match flag.as_str() {
            "--trace" => trace = true,
            "--rate" => {
                let value = rest.next().unwrap_or_else(|| usage());
                rate = Some(bits_per_second(value).unwrap_or_else(|| usage()));
            }
            _ => usage(),
        }
    }
    let rtt: u64 = rtt_ms.parse().expect("RTT_MS is a number of milliseconds");
    let one_way = Duration::from_micros(rtt * 500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        println!("port {}", listener.local_addr().unwrap().port());
        let next_id = AtomicU64::new(0);
        loop {
            let Ok((client, _)) = listener.accept().await else {
                continue;
            };
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let target = target.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(&target).await else {
                    eprintln!("rtt_proxy: cannot connect to {target}");
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let start = Instant::now();
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let up = Arc::new(AtomicU64::new(0));
                let down = Arc::new(AtomicU64::new(0));
                let tracer = trace.then_some((id, start));
                let a = tokio::spawn(delayed(
                    client_read,
                    server_write,
                    Link {
                        delay: one_way,
                        rate,
                    },
                    up.clone(),
                    tracer.map(|t| (t, "up")),
                ));
                let b = tokio::spawn(delayed(
                    server_read,
                    client_write,
                    Link {
                        delay: one_way,
                        rate,
                    },
                    down.clone(),
                    tracer.map(|t| (t, "down")),
                ));
                let _ = tokio::join!(a, b);
                println!(
                    "conn {id} up {} down {}",
                    up.load(Ordering::Relaxed),
                    down.load(Ordering::Relaxed)
                );
            });
        }
    });
}

/// `20mbit`, `512kbit`, `1gbit` or plain bits per second.
fn bits_per_second(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (number, unit) = match lower.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => lower.split_at(at),
        None => (lower.as_str(), ""),
    };
    let scale = match unit {
        "" | "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => return None,
    };
    let bits = number.parse::<f64>().ok()? * scale;
    (bits >= 1.0).then_some(bits as u64)
}

/// One direction of the link: its one-way delay and, when limited, its bandwidth.
#[derive(Clone, Copy)]
struct Link {
    delay: Duration,
    rate: Option<u64>,
}

/// Copies `from` to `to`, each chunk written `delay` after it was read (and, with a rate,
/// once the link has sent the chunks before it and this one), in order; shuts `to` down once
/// `from` ends and everything read has been written.
async fn delayed(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: Link,
    count: Arc<AtomicU64>,
    trace: Option<((u64, Instant), &'static str)>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + link.delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
        // Dropping `tx` ends the writer after the last chunk.
    };
    let writer = async move {
        // When the link is free again: the chunks before have been sent.
        let mut free = Instant::now();
        while let Some((due, chunk)) = rx.recv().await {
            let due = match link.rate {
                Some(bits) => {
                    let sending = Duration::from_secs_f64(chunk.len() as f64 * 8.0 / bits as f64);
                    free = due.max(free) + sending;
                    free
                }
                None => due,
            };
            tokio::time::sleep_until(due).await;
            if let Some(((id, start), dir)) = trace {
                println!(
                    "{id} {:.1} {dir} {}",
                    start.elapsed().as_secs_f64() * 1000.0,
                    chunk.len()
                );
            }
            count.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
