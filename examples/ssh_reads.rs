//! Measures the cost of further reads on one open SSH connection: connects to DEST (an alias
//! from the SSH config), lists once, then reads a small range of FILE (relative to ROOT) N
//! times and prints the median milliseconds per read. Used by scripts/bench.
//!
//! Usage: cargo run --profile dist --example ssh_reads -- SSH_CONFIG DEST ROOT REL N

use std::time::Instant;

use clankie_host::ssh::SshHost;
use clankie_host::{FileRef, Host};
use clankie_model::{ByteRange, RootSpec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, config, dest, root, rel, n] = args.as_slice() else {
        eprintln!("usage: ssh_reads SSH_CONFIG DEST ROOT REL N");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N is a number");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let target = clankie_host::ssh::resolve(dest, Some(config.as_ref())).expect("resolve");
        let host = SshHost::new(dest.clone(), target);
        let spec = RootSpec {
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            dir: Some(root.as_bytes().to_vec()),
        };
        let listing = host.list(&[spec]).await.expect("list");
        let file = FileRef {
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            root: listing.roots[0].dir.clone(),
            rel: rel.as_bytes().to_vec(),
        };
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let start = Instant::now();
            let got = host
                .read(&file, &[ByteRange::new(i as u64 * 4096, 4096)])
                .await
                .expect("read");
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(got.chunks[0].len(), 4096);
        }
        times.sort_by(f64::total_cmp);
        println!("{:.2}", times[n / 2]);
    });
}
