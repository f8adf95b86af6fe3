//! Packaging (packaging/, docs/INSTALL.md): `tessera --version` names the commit, the
//! Containerfile's command line starts a server its own health check passes, the
//! compose and Traefik files parse, the systemd unit passes `systemd-analyze verify`
//! and `security`, and the Caddy and nginx examples pass `caddy validate` and `nginx -t`.
//! No container is built here (no container engine); docs/INSTALL.md says so.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TESSERA: &str = env!("CARGO_BIN_EXE_tessera");
/// What build.rs counts as the sources of the binary (its `BUILT_FROM`).
const BUILT_FROM: &[&str] = &[
    "src",
    "templates",
    "static",
    "locales",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "link",
    "tessera-bcrypt",
];

fn packaging(name: &str) -> String {
    let path = Path::new(ROOT).join("packaging").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether `program` runs here (see `helpers::available`).
fn installed(program: &str, args: &[&str]) -> bool {
    crate::helpers::available(Command::new(program).args(args), program)
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(ROOT).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = run(Command::new(TESSERA).arg("--version"));
    assert!(out.status.success(), "{}", text(&out));
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let prefix = concat!("tessera ", env!("CARGO_PKG_VERSION"), " (");
    let commit = line
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("`{line}` is not `{prefix}COMMIT)`"));
    let expected = match (
        std::env::var("TESSERA_BUILD_COMMIT"),
        git(&["rev-parse", "--short=12", "HEAD"]),
    ) {
        (Ok(given), _) if !given.trim().is_empty() => given.trim().to_string(),
        (_, Some(head)) => {
            let mut status = vec!["status", "--porcelain", "--untracked-files=normal", "--"];
            status.extend_from_slice(BUILT_FROM);
            let dirty = git(&status).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        _ => {
            eprintln!("SKIPPED: no git (or no checkout) to compare `{line}` with");
            assert!(!commit.is_empty());
            return;
        }
    };
    assert_eq!(commit, expected, "--version says `{line}`");
}

/// The Containerfile as instructions: continuation lines joined, comments dropped.
fn instructions(file: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in file.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (word, rest) = current.split_once(' ').unwrap_or((&current, ""));
                out.push((word.to_uppercase(), rest.trim().to_string()));
                current.clear();
            }
        }
    }
    out
}

/// An exec-form (JSON array) argument list; the shell form would need a shell the
/// image might not have, and would not pass signals to tessera.
fn exec_form(what: &str, value: &str) -> Vec<String> {
    serde_json::from_str(value).unwrap_or_else(|e| panic!("{what} `{value}` is not a JSON array: {e}"))
}

struct Image {
    base: String,
    user: String,
    volumes: String,
    expose: String,
    health: Vec<String>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    copies: Vec<String>,
}

fn image() -> Image {
    let all = instructions(&packaging("Containerfile"));
    let last_from = all.iter().rposition(|(i, _)| i == "FROM").expect("a FROM");
    let (build, run) = all.split_at(last_from);
    let last = |word: &str| {
        run.iter()
            .rev()
            .find(|(i, _)| i == word)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the runtime stage has no {word}"))
    };
    let health = last("HEALTHCHECK");
    let (_, health) = health.split_once("CMD ").expect("HEALTHCHECK … CMD");
    let copies = build
        .iter()
        .filter(|(i, v)| i == "COPY" && !v.starts_with("--"))
        .flat_map(|(_, v)| {
            let words: Vec<&str> = v.split_whitespace().collect();
            words[..words.len() - 1]
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    Image {
        base: last("FROM"),
        user: last("USER"),
        volumes: last("VOLUME"),
        expose: last("EXPOSE"),
        health: exec_form("HEALTHCHECK CMD", health.trim()),
        entrypoint: exec_form("ENTRYPOINT", &last("ENTRYPOINT")),
        cmd: exec_form("CMD", &last("CMD")),
        copies,
    }
}

#[test]
fn containerfile_runs_tessera_unprivileged_on_the_data_volume() {
    let image = image();
    assert!(
        image.base.contains("slim") || image.base.contains("distroless"),
        "a small runtime image, not {}",
        image.base
    );
    let user = image.user.split(':').next().unwrap_or_default();
    assert!(!["root", "0", ""].contains(&user), "USER {} is root", image.user);
    assert!(image.volumes.split(['[', ']', '"', ',', ' ']).any(|v| v == "/data"));
    assert!(image.expose.split_whitespace().any(|p| p == "9000" || p == "9000/tcp"));
    assert_eq!(image.entrypoint, ["/usr/local/bin/tessera"]);
    assert!(packaging("Containerfile").contains("COPY --from=builder /out/tessera /usr/local/bin/tessera"));
    for source in &image.copies {
        assert!(
            Path::new(ROOT).join(source).exists(),
            "COPY {source}: not in the repository"
        );
    }

    // The command is `serve` with flags `tessera serve --help` lists, on the volume.
    assert_eq!(image.cmd.first().map(String::as_str), Some("serve"));
    let help = run(Command::new(TESSERA).args(["serve", "--help"]));
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    for flag in image.cmd.iter().filter(|a| a.starts_with("--")) {
        let listed = help
            .lines()
            .map(str::trim_start)
            .any(|l| l.starts_with(&format!("{flag} ")));
        assert!(listed, "`{flag}` is not a flag of `tessera serve`");
    }
    let value = |flag: &str| {
        let at = image.cmd.iter().position(|a| a == flag);
        at.and_then(|i| image.cmd.get(i + 1)).map(String::as_str)
    };
    assert_eq!(value("--listen"), Some("0.0.0.0:9000"));
    assert_eq!(value("--db"), Some("/data/tessera.db"));
    assert!(image.health.join(" ").contains("/healthz"));
}

/// The builder stage has what the binary is built from and every workspace member
/// (Cargo reads them all, even to build one package); a directory left out fails the
/// image's build, which no test here runs.
#[test]
fn containerfile_copies_everything_the_binary_is_built_from() {
    let copies = image().copies;
    let manifest: toml::Table = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let members = manifest["workspace"]["members"].as_array().unwrap();
    let members = members.iter().filter_map(|m| m.as_str()).filter(|m| *m != ".");
    for source in BUILT_FROM.iter().copied().chain(members) {
        assert!(
            copies.iter().any(|c| c.trim_end_matches('/') == source),
            "the Containerfile does not COPY {source}"
        );
    }
}

/// Kills the server it holds when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs a health-check command (exec form) with the container's port replaced.
fn probe(check: &[String], port: u16, path: &str) -> bool {
    let args: Vec<String> = check
        .iter()
        .map(|a| {
            a.replace("127.0.0.1/9000", &format!("127.0.0.1/{port}"))
                .replace("/healthz", path)
        })
        .collect();
    assert_ne!(args, check, "the probe asks 127.0.0.1/9000");
    let out = Command::new(&args[0]).args(&args[1..]).stdin(Stdio::null()).output();
    out.map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn the_containers_command_starts_a_server_its_health_check_passes() {
    if !installed("bash", &["-c", "true"]) {
        return;
    }
    let image = image();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let db = dir.path().join("tessera.db").display().to_string();
    // The image's command, on loopback and a temporary volume.
    let args: Vec<String> = image
        .cmd
        .iter()
        .map(|a| {
            a.replace("0.0.0.0:9000", &format!("127.0.0.1:{port}"))
                .replace("/data/tessera.db", &db)
        })
        .collect();
    let closed_before = probe(&image.health, port, "/healthz");
    assert!(!closed_before, "nothing listens yet: the probe must fail");
    let mut cmd = Command::new(TESSERA);
    // Only what the image sets: none of this environment's settings (a test run on
    // PostgreSQL, say) may reach the server.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("TESSERA_") {
            cmd.env_remove(name);
        }
    }
    let child = cmd
        .args(&args)
        .env("TESSERA_ISSUER", "https://id.example.org")
        .env("TESSERA_BCRYPT_COST", "4")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !probe(&image.health, port, "/healthz") {
        assert!(Instant::now() < deadline, "the health check never passed");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(Path::new(&db).exists(), "the database is on the volume");
    // It looks at the status: a 404 from the same server fails it.
    assert!(!probe(&image.health, port, "/no-such-page"));

    // compose.yaml's check is the image's.
    if let Some(compose) = yaml("compose.yaml") {
        let test = &compose["services"]["tessera"]["healthcheck"]["test"];
        let mut expected = vec![serde_json::json!("CMD")];
        expected.extend(image.health.iter().map(|a| serde_json::json!(a)));
        assert_eq!(test, &serde_json::Value::Array(expected));
    }
}

/// A YAML file of packaging/ as JSON, through PyYAML (tests/interop/requirements.txt):
/// `None`, loudly, without it.
fn yaml(name: &str) -> Option<serde_json::Value> {
    let load = "import sys, json, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)";
    if !installed("python3", &["-c", "import yaml"]) {
        return None;
    }
    let path = Path::new(ROOT).join("packaging").join(name);
    let out = run(Command::new("python3").args(["-c", load]).arg(&path));
    assert!(out.status.success(), "{name} is not YAML: {}", text(&out));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn compose_file_runs_the_image_with_a_volume_an_issuer_and_a_restart_policy() {
    let Some(compose) = yaml("compose.yaml") else { return };
    let service = &compose["services"]["tessera"];
    assert_eq!(service["build"]["dockerfile"], "packaging/Containerfile");
    assert_eq!(service["restart"], "unless-stopped");
    let issuer = service["environment"]["TESSERA_ISSUER"].as_str().unwrap_or_default();
    assert!(issuer.starts_with("https://"), "the issuer is the public https URL");
    let volumes: Vec<&str> = service["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(volumes, ["tessera-data:/data"]);
    assert!(compose["volumes"].as_object().unwrap().contains_key("tessera-data"));
    for key in ["interval", "timeout", "retries"] {
        assert!(!service["healthcheck"][key].is_null(), "healthcheck.{key}");
    }
}

#[test]
fn traefik_example_is_yaml_with_a_tls_router_to_tessera() {
    let Some(traefik) = yaml("proxies/traefik.yml") else {
        return;
    };
    let router = &traefik["http"]["routers"]["tessera"];
    assert_eq!(router["service"], "tessera");
    assert!(!router["tls"]["certResolver"].is_null());
    let servers = &traefik["http"]["services"]["tessera"]["loadBalancer"]["servers"];
    assert_eq!(servers[0]["url"], "http://127.0.0.1:9000");
}

#[test]
fn systemd_unit_passes_verify_and_security_review() {
    if !installed("systemd-analyze", &["--version"]) {
        return;
    }
    let unit = packaging("tessera.service");
    // Its own unprivileged user: a service user, or a dynamic one.
    let user = unit.lines().find_map(|l| l.trim().strip_prefix("User="));
    assert!(
        unit.lines().any(|l| l.trim() == "DynamicUser=yes") || user.is_some_and(|u| !["root", "0", ""].contains(&u)),
        "the unit names no unprivileged user"
    );
    for directive in [
        "StateDirectory=tessera",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "SystemCallFilter=@system-service",
        "CapabilityBoundingSet=",
        "LockPersonality=yes",
        "MemoryDenyWriteExecute=yes",
        "Restart=on-failure",
    ] {
        assert!(
            unit.lines().any(|l| l.trim() == directive),
            "the unit lacks {directive}"
        );
    }
    let installed_at = "ExecStart=/usr/local/bin/tessera serve ";
    assert!(unit.contains(installed_at) && unit.contains("--db /var/lib/tessera/tessera.db"));
    // verify checks that ExecStart's binary exists: the one just built stands in.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tessera.service");
    let here = format!("ExecStart={TESSERA} serve ");
    std::fs::write(&path, unit.replace(installed_at, &here)).unwrap();

    let out = run(Command::new("systemd-analyze").arg("verify").arg(&path));
    let output = text(&out);
    let ours: Vec<&str> = output.lines().filter(|l| l.contains("tessera.service")).collect();
    assert!(ours.is_empty(), "systemd-analyze verify:\n{}", ours.join("\n"));
    assert!(out.status.success(), "systemd-analyze verify:\n{output}");
    if !output.trim().is_empty() {
        eprintln!("systemd-analyze verify, about other units:\n{output}");
    }
    // Exposure 2.0 or less ("OK"; the threshold is in tenths).
    let out = run(Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--threshold=20", "--no-pager"])
        .arg(&path));
    assert!(out.status.success(), "systemd-analyze security:\n{}", text(&out));
}

#[test]
fn caddy_example_validates() {
    if !installed("caddy", &["version"]) {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let file = Path::new(ROOT).join("packaging/proxies/Caddyfile");
    let mut cmd = Command::new("caddy");
    cmd.args(["validate", "--adapter", "caddyfile", "--config"]).arg(&file);
    // Caddy keeps state under these; none of it may land in the real home directory.
    for var in ["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
        cmd.env(var, home.path());
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "caddy validate:\n{}", text(&out));
    let conf = packaging("proxies/Caddyfile");
    assert!(conf.contains("reverse_proxy 127.0.0.1:9000"));
}

#[test]
fn nginx_example_passes_nginx_t_with_a_certificate() {
    if !installed("/usr/sbin/nginx", &["-v"]) || !installed("openssl", &["version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let out = run(Command::new("openssl").args([
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=id.example.org",
        "-keyout",
        &format!("{d}/key.pem"),
        "-out",
        &format!("{d}/cert.pem"),
    ]));
    assert!(out.status.success(), "openssl:\n{}", text(&out));
    let live = "/etc/letsencrypt/live/id.example.org";
    let site = packaging("proxies/nginx.conf");
    assert!(site.contains(&format!("{live}/fullchain.pem")) && site.contains(&format!("{live}/privkey.pem")));
    let site = site
        .replace(&format!("{live}/fullchain.pem"), &format!("{d}/cert.pem"))
        .replace(&format!("{live}/privkey.pem"), &format!("{d}/key.pem"));
    std::fs::write(dir.path().join("site.conf"), site).unwrap();
    // The example is a conf.d file: the smallest main configuration around it, with
    // every path nginx writes inside the temporary directory.
    let main = format!(
        "pid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{}}\nhttp {{\n    access_log off;\n    \
         client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n    fastcgi_temp_path {d}/fastcgi;\n    \
         uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;\n    include {d}/site.conf;\n}}\n"
    );
    std::fs::write(dir.path().join("main.conf"), main).unwrap();
    let out = run(Command::new("/usr/sbin/nginx").args([
        "-t",
        "-p",
        &d,
        "-c",
        &format!("{d}/main.conf"),
        "-e",
        &format!("{d}/error.log"),
    ]));
    let output = text(&out);
    assert!(out.status.success(), "nginx -t:\n{output}");
    assert!(!output.contains("[warn]"), "nginx -t warns:\n{output}");
}
