//! A real S3-protocol server on loopback for the S3 replica target: `moto` in server
//! mode (pinned in tests/interop/requirements.txt), with signature checking on, so a
//! request that is not correctly SigV4-signed is refused as AWS would refuse it.
//!
//! The server runs in a `python3` child: it starts moto's threaded server on port 0,
//! creates an IAM user allowed `s3:*` with an access key, turns authentication on
//! (`/moto-api/reset-auth`), prints `ready ENDPOINT KEY_ID SECRET`, then serves
//! `create-bucket NAME` commands from its stdin and exits when stdin closes, so a
//! test that dies cannot leave it behind. One fix is applied to moto's signature
//! check (see the script): it canonicalises the query as AWS does.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Mutex;
use std::time::Duration;

const SERVER: &str = r#"
import json, sys
import boto3, requests
from moto.server import ThreadedMotoServer

# moto checks a signature against the URL as werkzeug rebuilds it, partly decoded:
# `prefix=p%2Fg1` arrives as `prefix=p/g1` and the key `a%20b` as `a b`, so a correctly
# signed ListObjectsV2 with a `/` in its prefix, or a key with a space, fails (boto3's
# as well as ours). AWS canonicalises the decoded path and parameters, encoded again
# (SigV4: "URI-encode each parameter name and value", the path once for S3); the check
# here does the same, and stays a real signature check.
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from moto.iam.access_control import IAMRequestBase

_moto_request = IAMRequestBase._create_aws_request
def _aws_canonical_request(self):
    request = _moto_request(self)
    parts = urlsplit(request.url)
    if parts.query:
        request.params = parse_qsl(parts.query, keep_blank_values=True)
    request.url = quote(unquote(parts.path), safe="/~")
    return request
IAMRequestBase._create_aws_request = _aws_canonical_request

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
endpoint = f"http://{host}:{port}"

def client(service, key, secret):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret)

# Before authentication is on, any key may create the user the tests sign as.
iam = client("iam", "bootstrap", "bootstrap")
iam.create_user(UserName="tessera")
iam.put_user_policy(UserName="tessera", PolicyName="replica", PolicyDocument=json.dumps(
    {"Version": "2012-10-17",
     "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
key = iam.create_access_key(UserName="tessera")["AccessKey"]
requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0").raise_for_status()
s3 = client("s3", key["AccessKeyId"], key["SecretAccessKey"])
print("ready", endpoint, key["AccessKeyId"], key["SecretAccessKey"], flush=True)
for line in sys.stdin:
    cmd, _, arg = line.strip().partition(" ")
    try:
        if cmd == "create-bucket":
            s3.create_bucket(Bucket=arg)
            print("ok", flush=True)
        else:
            print("error unknown command", cmd, flush=True)
    except Exception as e:
        print("error", str(e).replace("\n", " "), flush=True)
"#;

/// A running moto server; killed when dropped.
pub struct Moto {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub endpoint: String,
    pub region: String,
    /// The key pair of the one IAM user allowed to use S3 there.
    pub access_key_id: String,
    pub secret_access_key: String,
    child: Child,
    control: Mutex<(ChildStdin, Receiver<String>)>,
}

/// Whether python3 can import moto's server; in CI its absence fails.
fn available() -> bool {
    crate::helpers::available(
        Command::new("python3").args(["-c", "import boto3, moto.server"]),
        "moto",
    )
}

impl Moto {
    /// A fresh server with no buckets. `None` (and a SKIPPED line) when moto is not
    /// installed outside CI; panics in CI or when the server does not come up.
    pub fn start() -> Option<Moto> {
        if !available() {
            return None;
        }
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn python3 for moto");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Werkzeug logs each request on stderr; only tracebacks are worth showing.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !line.contains("\" 20") && !line.contains("\" 40") {
                    eprintln!("moto: {line}");
                }
            }
        });
        let ready = rx.recv_timeout(Duration::from_secs(60));
        let Some(fields) = ready.ok().and_then(|l| {
            let parts: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            (parts.len() == 4 && parts[0] == "ready").then_some(parts)
        }) else {
            let _ = child.kill();
            let status = child.wait();
            panic!("moto did not print `ready` ({status:?}); its stderr is above");
        };
        Some(Moto {
            endpoint: fields[1].clone(),
            region: "us-east-1".into(),
            access_key_id: fields[2].clone(),
            secret_access_key: fields[3].clone(),
            child,
            control: Mutex::new((stdin, rx)),
        })
    }

    /// Creates bucket `name` (signed by boto3, as the IAM user).
    pub fn create_bucket(&self, name: &str) {
        let mut control = self.control.lock().unwrap();
        writeln!(control.0, "create-bucket {name}").expect("write to moto");
        control.0.flush().unwrap();
        let answer = control.1.recv_timeout(Duration::from_secs(30)).expect("moto answers");
        assert_eq!(answer, "ok", "create-bucket {name}");
    }

    /// The settings an S3 target on this server takes.
    pub fn settings(&self) -> tessera::replica::S3Settings {
        tessera::replica::S3Settings {
            endpoint: Some(url::Url::parse(&self.endpoint).unwrap()),
            region: self.region.clone(),
            path_style: true,
        }
    }

    /// The environment a `tessera` process needs to reach this server's S3.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", self.access_key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_access_key.clone()),
            ("AWS_ENDPOINT_URL_S3", self.endpoint.clone()),
            ("AWS_REGION", self.region.clone()),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
