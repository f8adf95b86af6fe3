//! A real SMTP server on a loopback port for the mail tests: it speaks the protocol
//! over TCP (greeting, EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT), keeps every
//! conversation's commands and every message it accepts, and offers no STARTTLS, so a
//! client that requires TLS must refuse it.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One accepted message: its envelope and its text as sent after DATA.
#[derive(Debug, Clone)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

#[derive(Clone, Default)]
pub struct SmtpSink {
    pub port: u16,
    messages: Arc<Mutex<Vec<Received>>>,
    commands: Arc<Mutex<Vec<String>>>,
}

impl SmtpSink {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sink = SmtpSink {
            port: listener.local_addr().unwrap().port(),
            ..Default::default()
        };
        let shared = sink.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let sink = shared.clone();
                tokio::spawn(async move { sink.converse(sock).await });
            }
        });
        sink
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub fn messages(&self) -> Vec<Received> {
        self.messages.lock().unwrap().clone()
    }

    /// Every command verb any client sent, in order.
    pub fn commands(&self) -> Vec<String> {
        self.commands.lock().unwrap().clone()
    }

    async fn converse(&self, sock: tokio::net::TcpStream) {
        let (read, mut write) = sock.into_split();
        let mut lines = BufReader::new(read).lines();
        let _ = write.write_all(b"220 sink.test ESMTP ready\r\n").await;
        let (mut from, mut to) = (String::new(), Vec::new());
        while let Ok(Some(line)) = lines.next_line().await {
            let verb = line.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
            self.commands.lock().unwrap().push(verb.clone());
            let reply: &[u8] = match verb.as_str() {
                "EHLO" => b"250-sink.test\r\n250-8BITMIME\r\n250 SIZE 1000000\r\n",
                "HELO" | "RSET" | "NOOP" => b"250 2.0.0 OK\r\n",
                "MAIL" => {
                    from = line[4..].trim().to_string();
                    b"250 2.1.0 OK\r\n"
                }
                "RCPT" => {
                    to.push(line[4..].trim().to_string());
                    b"250 2.1.5 OK\r\n"
                }
                "DATA" => {
                    let _ = write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await;
                    let mut data = String::new();
                    while let Ok(Some(l)) = lines.next_line().await {
                        if l == "." {
                            break;
                        }
                        data.push_str(l.strip_prefix('.').unwrap_or(&l));
                        data.push('\n');
                    }
                    let n = {
                        let mut messages = self.messages.lock().unwrap();
                        messages.push(Received {
                            from: std::mem::take(&mut from),
                            to: std::mem::take(&mut to),
                            data,
                        });
                        messages.len()
                    };
                    let _ = write
                        .write_all(format!("250 2.0.0 queued as sink-{n}\r\n").as_bytes())
                        .await;
                    continue;
                }
                "QUIT" => {
                    let _ = write.write_all(b"221 2.0.0 bye\r\n").await;
                    return;
                }
                _ => b"502 5.5.2 not implemented\r\n",
            };
            if write.write_all(reply).await.is_err() {
                return;
            }
        }
    }
}
