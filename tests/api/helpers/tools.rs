//! Outside tools: the PostgreSQL cluster, programs a test needs, the `tessera` binary.

/// The run's PostgreSQL cluster for tests that exist only on it (`what` names them in
/// the messages): required in CI, a loud SKIPPED line elsewhere.
pub fn required_cluster(what: &str) -> Option<String> {
    match std::env::var("TESSERA_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs the {what} tests: set TESSERA_TEST_DATABASE_URL"
            );
            eprintln!("SKIPPED: the {what} tests need PostgreSQL (make test starts a cluster)");
            None
        }
    }
}

/// Whether a tool a test needs runs here (`check` succeeds): without it the test skips
/// loudly, but under CI, where .ci/run installs it, its absence is a failure.
pub fn available(check: &mut std::process::Command, what: &str) -> bool {
    use std::process::Stdio;
    let ok = check
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is not installed; .ci/run installs it"
        );
        eprintln!("SKIPPED: {what} is not installed (.ci/run installs it)");
    }
    ok
}

/// Runs the `tessera` binary with `args` and `env`, `stdin` written to it; its
/// standard output, the command's failure failing the test.
pub fn tessera_ok(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .envs(env.iter().copied())
        .env("TESSERA_BCRYPT_COST", "4")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `command` (a `tessera` invocation) with `stdin` written to it and its output
/// collected. A command that fails before reading its input closes the pipe: that is
/// the outcome under test, not a failure of the harness.
pub fn run_with_stdin(command: &mut std::process::Command, stdin: Option<&str>) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        if let Err(e) = input.write_all(text.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    drop(input);
    child.wait_with_output().unwrap()
}
