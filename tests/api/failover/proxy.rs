//! A loopback TCP proxy in front of the test cluster that a test can cut, to play
//! PostgreSQL going away and coming back.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A loopback TCP proxy in front of PostgreSQL that can be cut: every proxied
/// connection dropped and each new one closed as soon as it is accepted, as a
/// database that restarted or a network that reset looks to its clients.
pub struct Proxy {
    /// `url` with the proxy's address in place of the cluster's.
    pub url: String,
    cut: watch::Sender<bool>,
}

impl Proxy {
    pub async fn start(url: &str) -> Self {
        let mut parsed = url::Url::parse(url).unwrap();
        let upstream: SocketAddr = format!("{}:{}", parsed.host_str().unwrap(), parsed.port().unwrap_or(5432))
            .parse()
            .expect("the test cluster is addressed by IP");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        parsed.set_host(Some("127.0.0.1")).unwrap();
        parsed.set_port(Some(port)).unwrap();
        let (cut, _) = watch::channel(false);
        let gate = cut.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut down = gate.subscribe();
                if *down.borrow_and_update() {
                    drop(client);
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (mut client, mut server) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = down.wait_for(|d| *d) => {}
                    }
                });
            }
        });
        Self {
            url: parsed.to_string(),
            cut,
        }
    }

    pub fn set_cut(&self, down: bool) {
        self.cut.send_replace(down);
    }
}
