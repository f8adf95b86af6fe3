//! The pieces behind the proxy tests: nginx and Caddy as child processes on loopback
//! ports, configured from tests/forward_auth/'s templates, and the app behind them,
//! which echoes the headers it received.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const NGINX: &str = "/usr/sbin/nginx";
pub const CADDY: &str = "/usr/bin/caddy";
/// The domain the apps and Tessera share, and the forward-auth cookie is set on.
pub const DOMAIN: &str = "example.test";
pub const AUTH_HOST: &str = "auth.example.test";
/// Registered with no group rule (anyone signed in), and never registered.
pub const OPEN_HOST: &str = "wiki.example.test";
pub const STRANGER_HOST: &str = "stranger.example.test";
const TEMPLATES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/forward_auth");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proxy {
    Nginx,
    Caddy,
}

impl Proxy {
    fn binary(self) -> &'static str {
        match self {
            Proxy::Nginx => NGINX,
            Proxy::Caddy => CADDY,
        }
    }

    /// The host its documented configuration protects.
    pub fn app_host(self) -> &'static str {
        match self {
            Proxy::Nginx => "app.example.test",
            Proxy::Caddy => "app2.example.test",
        }
    }

    /// Whether the proxy is installed; CI installs both (.ci/run), elsewhere a missing
    /// one skips its tests loudly.
    pub fn installed(self) -> bool {
        if Path::new(self.binary()).exists() {
            return true;
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing; .ci/run installs nginx and caddy",
            self.binary()
        );
        eprintln!(
            "SKIPPED: the {self:?} forward-auth tests need {} (apt-get install nginx caddy, or .ci/run)",
            self.binary()
        );
        false
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// `template` with each `@NAME@` replaced; a placeholder left over fails the test.
pub fn render(template: &str, values: &[(&str, String)]) -> String {
    let mut out = template.to_string();
    for (name, value) in values {
        out = out.replace(&format!("@{name}@"), value);
    }
    let left = out
        .split('@')
        .skip(1)
        .step_by(2)
        .find(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
    assert!(
        left.is_none(),
        "placeholder @{}@ not filled in",
        left.unwrap_or_default()
    );
    out
}

pub fn template(file: &str) -> String {
    std::fs::read_to_string(format!("{TEMPLATES}/{file}")).unwrap()
}

/// The lines between a template's `documented: begin` and `documented: end` markers.
pub fn documented(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.contains("# documented: begin"))
        .skip(1)
        .take_while(|l| !l.contains("# documented: end"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// A proxy's process, stopped however the test ends.
pub struct Running {
    child: std::process::Child,
    log: PathBuf,
}

impl Running {
    fn spawn(mut cmd: Command, log: PathBuf) -> Self {
        let out = std::fs::File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Self { child, log }
    }

    /// Waits until `port` accepts connections; a proxy that exits fails with its log.
    fn wait_for(mut self, port: u16) -> Self {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("the proxy exited ({status}):\n{log}");
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return self;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the proxy did not listen on {port}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One protected app behind a proxy: its registered id and host, and the port of the
/// backend the proxy sends its requests to.
#[derive(Debug, Clone, Copy)]
pub struct Site {
    pub id: &'static str,
    pub host: &'static str,
    pub backend: u16,
}

impl Site {
    fn origin(&self, port: u16) -> String {
        format!("http://{}:{port}", self.host)
    }
}

/// nginx on `port` from tests/forward_auth/nginx.conf.in, with one server block per
/// site from nginx-app.conf.in, its files in `dir`. Any other host meets the
/// configuration's default server.
pub fn start_nginx(dir: &Path, port: u16, tessera: u16, sites: &[Site]) -> Running {
    let prefix = dir.join("nginx");
    std::fs::create_dir_all(prefix.join("apps")).unwrap();
    let listen = format!("127.0.0.1:{port}");
    let conf = render(
        &template("nginx.conf.in"),
        &[("PREFIX", prefix.display().to_string()), ("LISTEN", listen.clone())],
    );
    for site in sites {
        let block = render(
            &template("nginx-app.conf.in"),
            &[
                ("LISTEN", listen.clone()),
                ("APP_ID", site.id.to_string()),
                ("APP_HOST", site.host.to_string()),
                ("APP_ORIGIN", site.origin(port)),
                ("BACKEND", format!("127.0.0.1:{}", site.backend)),
                ("TESSERA", format!("127.0.0.1:{tessera}")),
            ],
        );
        std::fs::write(prefix.join("apps").join(format!("{}.conf", site.id)), block).unwrap();
    }
    let path = prefix.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new(NGINX);
    cmd.arg("-p").arg(&prefix).arg("-c").arg(&path);
    // Before it reads the configuration nginx opens its built-in error log.
    cmd.arg("-e").arg(prefix.join("error.log"));
    Running::spawn(cmd, prefix.join("stdout.log")).wait_for(port)
}

/// Caddy on `port` from tests/forward_auth/Caddyfile.in: the template's site block for
/// the first site, and one like it for each further site.
pub fn start_caddy(dir: &Path, port: u16, tessera: u16, sites: &[Site]) -> Running {
    let home = dir.join("caddy");
    std::fs::create_dir_all(&home).unwrap();
    let (first, rest) = sites.split_first().expect("at least one site");
    let mut conf = render(
        &template("Caddyfile.in"),
        &[
            ("TESSERA", format!("127.0.0.1:{tessera}")),
            ("APP_ORIGIN", first.origin(port)),
            ("APP_ID", first.id.to_string()),
            ("BACKEND", format!("127.0.0.1:{}", first.backend)),
        ],
    );
    for site in rest {
        conf += &format!(
            "\n{} {{\n\timport tessera {}\n\treverse_proxy 127.0.0.1:{}\n}}\n",
            site.origin(port),
            site.id,
            site.backend
        );
    }
    let path = home.join("Caddyfile");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new(CADDY);
    cmd.args(["run", "--adapter", "caddyfile", "--config"]).arg(&path);
    // Caddy keeps state under these; none of it may land in the real home directory.
    for var in ["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
        cmd.env(var, &home);
    }
    Running::spawn(cmd, home.join("caddy.log")).wait_for(port)
}

/// One request as the app behind the proxy received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub target: String,
    /// Lower-case names, in the order received; a name sent twice appears twice.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// The protected app: answers every request with the request line and headers it got
/// as JSON, and keeps them for the test.
pub struct EchoApp {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl EchoApp {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, stop) = (Arc::<Mutex<Vec<Seen>>>::default(), Arc::new(AtomicBool::new(false)));
        let (log, stopped) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let log = log.clone();
                std::thread::spawn(move || echo(stream, &log));
            }
        });
        Self { port, seen, stop }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for EchoApp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn echo(stream: TcpStream, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim_end().is_empty() {
            break;
        }
        if let Some((n, v)) = h.trim_end().split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let length: u64 = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let _ = std::io::copy(&mut reader.by_ref().take(length), &mut std::io::sink());
    let body = serde_json::json!({"target": target, "headers": headers}).to_string();
    log.lock().unwrap().push(Seen { target, headers });
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Sends `request` exactly as written (an absolute URL in the request line, a Host
/// of the test's choosing) to the proxy on `port` and reads until the connection
/// closes: `None` when it closes unanswered, as nginx's `return 444` does. Async, so
/// the Tessera under test keeps running on the test's runtime meanwhile.
pub async fn raw_http(port: u16, request: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(15), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the proxy neither answered nor closed the connection");
    // A reset instead of a clean close is the same refusal.
    (!answer.is_empty()).then(|| String::from_utf8_lossy(&answer).into_owned())
}

/// The status code of a raw HTTP/1.1 answer.
pub fn status_of(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer}"))
}
