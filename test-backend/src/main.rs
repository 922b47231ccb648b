//! `test-backend NAME=ADDR [NAME=ADDR ...]`: the tests' reporting backend as one process serving several
//! "pods", for `cargo xtask run` (the demo) and the benchmarks. Runs until interrupted.

use std::net::SocketAddr;

use test_backend::TestBackend;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let pods: Vec<(String, SocketAddr)> = std::env::args()
        .skip(1)
        .map(|arg| {
            let parsed = arg.split_once('=').and_then(|(name, addr)| Some((name.to_string(), addr.parse().ok()?)));
            parsed.unwrap_or_else(|| {
                eprintln!("test-backend: expected NAME=ADDR, got {arg:?}");
                std::process::exit(2)
            })
        })
        .collect();
    if pods.is_empty() {
        eprintln!("usage: test-backend NAME=ADDR [NAME=ADDR ...]");
        std::process::exit(2)
    }
    let mut backends = Vec::new();
    for (name, addr) in pods {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap_or_else(|error| {
            eprintln!("test-backend: cannot listen on {addr}: {error}");
            std::process::exit(1)
        });
        eprintln!("test-backend: {name} listening on {addr}");
        backends.push(TestBackend::serve(&name, listener));
    }
    let _ = tokio::signal::ctrl_c().await;
}
