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
    /// While set, every connection is greeted with 421 (service not available, a
    /// transient refusal, RFC 5321 §4.2.3) and closed.
    down: Arc<std::sync::atomic::AtomicBool>,
    /// While set, every recipient is refused with 550 (a permanent refusal).
    refuse_recipients: Arc<std::sync::atomic::AtomicBool>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
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

    /// Refuses (`true`) or accepts (`false`) mail from now on.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many connections clients have opened so far (refused ones included).
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Refuses every recipient with 550 from now on.
    pub fn refuse_recipients(&self) {
        self.refuse_recipients.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The messages to `to` (an address, matched inside the envelope's `<…>`).
    pub fn to(&self, to: &str) -> Vec<Received> {
        self.messages()
            .into_iter()
            .filter(|m| {
                m.to.iter().any(|t| {
                    t.to_ascii_lowercase()
                        .contains(&format!("<{}>", to.to_ascii_lowercase()))
                })
            })
            .collect()
    }

    /// Waits (at most 20 s) until `n` messages to `to` have arrived, and returns them.
    pub async fn wait_for(&self, to: &str, n: usize) -> Vec<Received> {
        for _ in 0..200 {
            let got = self.to(to);
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!(
            "{n} messages to {to} did not arrive; the sink has {:?}",
            self.messages()
        );
    }

    /// The newest message to `to`, waiting for the `n`-th.
    pub async fn nth(&self, to: &str, n: usize) -> Received {
        self.wait_for(to, n).await[n - 1].clone()
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
        self.connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = write
                .write_all(b"421 4.3.2 sink.test is down for maintenance\r\n")
                .await;
            return;
        }
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
                "RCPT" if self.refuse_recipients.load(std::sync::atomic::Ordering::SeqCst) => {
                    b"550 5.1.1 no such mailbox here\r\n"
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

impl Received {
    /// A header's value (unfolded), if the message has it.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\n\n").next().unwrap_or_default();
        let mut value: Option<String> = None;
        for line in head.lines() {
            if let Some(v) = value.as_mut() {
                if line.starts_with([' ', '\t']) {
                    v.push(' ');
                    v.push_str(line.trim());
                    continue;
                }
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case(name) {
                    value = Some(v.trim().to_string());
                }
            }
        }
        value
    }

    /// The subject, decoded when it is an RFC 2047 encoded word.
    pub fn subject(&self) -> String {
        let raw = self.header("Subject").unwrap_or_default();
        decode_words(&raw)
    }

    /// The decoded body of the part of this MIME type (`text/plain`, `text/html`), or
    /// the whole body of a single-part message.
    pub fn part(&self, mime: &str) -> String {
        // Split on the message's own boundary: a quoted-printable line of a body may
        // itself start with "--" (a wrapped link token).
        let boundary = self.header("Content-Type").and_then(|ct| {
            ct.split(';').find_map(|p| {
                let (k, v) = p.split_once('=')?;
                k.trim()
                    .eq_ignore_ascii_case("boundary")
                    .then(|| v.trim().trim_matches('"').to_string())
            })
        });
        let delimiter = format!("\n--{}", boundary.unwrap_or_default());
        let parts: Vec<&str> = self.data.split(delimiter.as_str()).collect();
        for p in parts.iter().skip(1) {
            let (head, body) = p.split_once("\n\n").unwrap_or((p, ""));
            let head_lower = head.to_ascii_lowercase();
            if head_lower.contains(&format!("content-type: {mime}")) {
                return decode_body(&head_lower, body.trim_end_matches(['\n', '-']));
            }
        }
        let (head, body) = self.data.split_once("\n\n").unwrap_or(("", &self.data));
        decode_body(&head.to_ascii_lowercase(), body)
    }

    /// The plain-text body.
    pub fn text(&self) -> String {
        self.part("text/plain")
    }

    /// The first link in the plain-text body whose path starts with `path`.
    pub fn link(&self, path: &str) -> String {
        let text = self.text();
        text.split_whitespace()
            .find(|w| w.starts_with("http") && w.contains(path))
            .unwrap_or_else(|| panic!("no {path} link in: {text}"))
            .to_string()
    }

    /// The six-digit code after "Your code:".
    pub fn code(&self) -> String {
        let text = self.text();
        text.split("Your code:")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no code in: {text}"))
            .to_string()
    }
}

fn decode_body(head: &str, body: &str) -> String {
    if head.contains("content-transfer-encoding: base64") {
        use base64::Engine;
        let joined: String = body.split_whitespace().collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(joined)
            .unwrap_or_default();
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    if head.contains("content-transfer-encoding: quoted-printable") {
        return decode_qp(body);
    }
    body.to_string()
}

/// Quoted-printable (RFC 2045 §6.7): soft line breaks and `=XX` bytes.
fn decode_qp(body: &str) -> String {
    let joined = body.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&joined[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `=?utf-8?b?…?=` and `=?utf-8?q?…?=` words (RFC 2047), joined.
fn decode_words(raw: &str) -> String {
    use base64::Engine;
    let mut out = String::new();
    for word in raw.split_whitespace() {
        let lower = word.to_ascii_lowercase();
        if lower.starts_with("=?utf-8?b?") && word.ends_with("?=") {
            let inner = &word[10..word.len() - 2];
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .unwrap_or_default();
            out.push_str(&String::from_utf8_lossy(&bytes));
        } else if lower.starts_with("=?utf-8?q?") && word.ends_with("?=") {
            out.push_str(&decode_qp(&word[10..word.len() - 2].replace('_', " ")));
        } else {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}
