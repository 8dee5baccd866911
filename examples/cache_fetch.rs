//! Fetches every Claude session under ROOT on DEST (an alias from the SSH config) through the
//! grep cache in CACHE_DIR, as `grep` will, and prints one JSON line: the files, their bytes,
//! the bytes moved through the host and the seconds it took. Used by `scripts/bench
//! --only-cache` (run it three times: a first fetch, nothing changed, after an append).
//!
//! Usage: cargo run --release --example cache_fetch -- SSH_CONFIG DEST ROOT CACHE_DIR

use std::time::Instant;

use clankie_host::{Host, HostConfig};
use clankie_model::RootSpec;
use clankie_read::cache::{Cache, CacheOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, config, dest, root, cache_dir] = args.as_slice() else {
        eprintln!("usage: cache_fetch SSH_CONFIG DEST ROOT CACHE_DIR");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let start = Instant::now();
        let host = clankie_host::open(&HostConfig::ssh(dest), Some(config.as_ref())).expect("open");
        let spec = RootSpec {
            harness: clankie_engine::harness::by_name("claude").unwrap(),
            dir: Some(root.as_bytes().to_vec()),
        };
        let files = host.list(&[spec]).await.expect("list").files;
        let cache = Cache::open(CacheOptions {
            dir: Some(cache_dir.into()),
            ..CacheOptions::default()
        })
        .expect("open the cache");
        let fetched = cache.fetch_many(&host, &files).await.expect("fetch");
        let (mut bytes, mut moved) = (0u64, 0u64);
        for f in fetched {
            let f = f.expect("fetch a file");
            bytes += f.bytes.len() as u64;
            moved += f.moved;
        }
        println!(
            "{{\"files\":{},\"bytes\":{bytes},\"moved\":{moved},\"seconds\":{:.3}}}",
            files.len(),
            start.elapsed().as_secs_f64()
        );
    });
}
