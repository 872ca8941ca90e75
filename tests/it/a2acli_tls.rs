//! a2a-cli Tier 3 (SPEC §10.1, §12.3, §12.4): the authenticated extended Agent Card, against
//! live `trident serve` agents started here, each driven through the real `trident` binary.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::process::{TempDir, Trident};

const TRANSPORTS: [&str; 3] = ["JSONRPC", "HTTP+JSON", "GRPC"];

/// The command for `trident ARGS…` with no inherited a2a-cli variables and its own
/// configuration directory (no token of `auth login` from elsewhere).
fn command(args: &[&str], config: &TempDir) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args)
        .env_remove("A2ACLI_OUTPUT")
        .env_remove("A2ACLI_AGENT_CARD")
        .env_remove("A2ACLI_BEARER")
        .env_remove("A2ACLI_API_KEY")
        .env_remove("TRIDENT_TOKEN")
        .env("XDG_CONFIG_HOME", &config.0)
        .env("HOME", &config.0)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `trident ARGS…` to completion (bounded in time).
async fn run(args: &[&str], config: &TempDir) -> Output {
    let mut c = command(args, config);
    let run = tokio::task::spawn_blocking(move || c.output().expect("run trident"));
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("trident finished in time")
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// The `error` of the Appendix B envelope of a run with `-o json` that exited `exit`.
#[track_caller]
fn error_object(o: &Output, exit: i32) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(exit),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("one JSON document: {e}\n{}", text(&o.stdout)));
    v["error"].clone()
}

/// The extended card `serve --extended-card` is given: a skill the public card lacks.
fn extended_card_json() -> serde_json::Value {
    serde_json::json!({
        "name": "Trident extended agent",
        "description": "What authenticated callers are shown",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:1/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "ledger",
            "name": "Ledger",
            "description": "Only for authenticated callers",
            "tags": ["private"]
        }]
    })
}

/// `card get --extended` (SPEC §10.1, §12.4): the public card declares the extended card and
/// the bearer scheme; with the token, each binding fetches the extended card through
/// GetExtendedAgentCard (text and JSON, `--validate` on it); without a credential the agent's
/// refusal is `A2ACLI_ERR_CREDENTIALS_MISSING`, with a wrong one `A2ACLI_ERR_AUTH_FAILED`
/// (exit 4); an agent whose card declares no extended card is `UnsupportedOperationError`
/// (exit 1) without being asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_card_get_003_extended_card_with_the_declared_credentials() {
    let dir = TempDir::new("a2acli-extended");
    let path = dir.0.join("extended.json");
    std::fs::write(&path, extended_card_json().to_string()).expect("write the extended card");
    let path = path.display().to_string();
    let server = Trident::serve(&[
        "--agent",
        "demo",
        "--store",
        "memory",
        "--bearer",
        "alice=tok-extended",
        "--extended-card",
        &path,
    ])
    .await;
    let origin = server.origin.as_str();

    let public = ok(&run(&["card", "get", "-a", origin], &dir).await);
    assert!(public.contains("Extended Card: true"), "{public}");
    assert!(public.contains("Security Scheme: bearer"), "{public}");
    assert!(!public.contains("Ledger"), "{public}");

    for t in TRANSPORTS {
        let args = [
            "card",
            "get",
            "-a",
            origin,
            "--extended",
            "--transport",
            t,
            "--bearer",
            "tok-extended",
        ];
        let out = ok(&run(&args, &dir).await);
        assert!(out.contains("Name: Trident extended agent"), "{t}: {out}");
        assert!(
            out.contains("Skill: Ledger — Only for authenticated callers"),
            "{t}: {out}"
        );

        let mut json_args = args.to_vec();
        json_args.extend(["-o", "json", "--validate"]);
        let json = ok(&run(&json_args, &dir).await);
        let card: serde_json::Value = serde_json::from_str(&json).expect("one JSON card");
        assert_eq!(card["name"], "Trident extended agent", "{t}: {json}");
        assert_eq!(card["skills"][0]["id"], "ledger", "{t}: {json}");

        let o = run(&args[..7], &dir).await;
        let missing = run(&[&args[..7], &["-o", "json"][..]].concat(), &dir).await;
        assert_eq!(o.status.code(), Some(4), "{t}: {}", text(&o.stderr));
        let e = error_object(&missing, 4);
        assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{t}: {e}");

        let wrong = run(
            &[&args[..7], &["--bearer", "nope", "-o", "json"][..]].concat(),
            &dir,
        )
        .await;
        let e = error_object(&wrong, 4);
        assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{t}: {e}");
    }

    // An agent without an extended card: refused before any call, as the agent would.
    let plain = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;
    let o = run(
        &[
            "card",
            "get",
            "-a",
            &plain.origin,
            "--extended",
            "-o",
            "json",
        ],
        &dir,
    )
    .await;
    let e = error_object(&o, 1);
    assert_eq!(e["code"], "UnsupportedOperationError", "{e}");
}

fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// Signature verification by default (SPEC §10.1): a signed card is verified (keys from its
/// `jku`) and shown so; an unsigned one is shown as `absent` and is no failure; a tampered
/// copy of the signed card is shown as `unverifiable`, with a warning, never as verified.
/// `--verify` makes the absent and unverifiable cases `A2ACLI_ERR_CARD_INVALID` (exit 1),
/// with nothing but the error on stdout. In JSON mode stdout is the card alone and the
/// outcome goes to stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_card_get_004_signatures_are_verified_by_default_and_reported() {
    let dir = TempDir::new("a2acli-signature");
    let key = dir.0.join("agent.pem").display().to_string();
    let signed =
        Trident::serve(&["--agent", "demo", "--store", "memory", "--sign-key", &key]).await;
    let unsigned = Trident::serve(&["--agent", "demo", "--store", "memory"]).await;

    let o = run(&["card", "get", "-a", &signed.origin], &dir).await;
    let out = ok(&o);
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("Signature: "))
        .unwrap_or_else(|| panic!("a Signature line: {out}"));
    assert!(
        line.starts_with("verified (key ")
            && line.contains(&format!("{}/.well-known/jwks.json", signed.origin)),
        "{line}"
    );
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    ok(&run(&["card", "get", "-a", &signed.origin, "--verify"], &dir).await);
    let o = run(&["card", "get", "-a", &signed.origin, "-o", "json"], &dir).await;
    let card: serde_json::Value = serde_json::from_str(&ok(&o)).expect("the card alone");
    assert!(card["signatures"].is_array(), "{card}");
    assert!(
        stderr(&o).contains("signature: verified (key "),
        "{}",
        stderr(&o)
    );

    let o = run(&["card", "get", "-a", &unsigned.origin], &dir).await;
    assert!(
        ok(&o).contains("Signature: absent (the card is not signed)"),
        "{}",
        text(&o.stdout)
    );
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let o = run(
        &[
            "card",
            "get",
            "-a",
            &unsigned.origin,
            "--verify",
            "-o",
            "json",
        ],
        &dir,
    )
    .await;
    let e = error_object(&o, 1);
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_INVALID", "{e}");

    // The signed card with its name changed: the signature no longer covers it.
    let mut tampered: serde_json::Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", signed.origin))
            .await
            .expect("card")
            .json()
            .await
            .expect("card json");
    tampered["name"] = "Someone else".into();
    let path = dir.0.join("tampered.json");
    std::fs::write(&path, tampered.to_string()).expect("write");
    let path = path.display().to_string();
    let o = run(&["card", "get", "-a", &path], &dir).await;
    let out = ok(&o);
    assert!(out.contains("Signature: unverifiable ("), "{out}");
    assert!(!out.contains("verified (key"), "{out}");
    assert!(
        stderr(&o).contains("warning: the card's signature does not verify"),
        "{}",
        stderr(&o)
    );
    let o = run(
        &["card", "get", "-a", &path, "--verify", "-o", "json"],
        &dir,
    )
    .await;
    let e = error_object(&o, 1);
    assert_eq!(e["code"], "A2ACLI_ERR_CARD_INVALID", "{e}");
}

/// A port free a moment ago on loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Runs `program ARGS…` in `dir`; `false` when it is not installed or fails.
fn tool(program: &str, args: &[&str], dir: &std::path::Path) -> bool {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes, in `dir` with `openssl`, the CA `NAME-ca.pem` (key `NAME-ca.key`), and signs with it
/// `NAME-server.pem` (for `localhost` and `127.0.0.1`) and `NAME-client.pem`, each with its
/// `.key`. `false` without openssl.
fn certificates(dir: &std::path::Path, name: &str) -> bool {
    let ca = format!("{name}-ca");
    let ok = tool(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &format!("{ca}.key"),
            "-out",
            &format!("{ca}.pem"),
            "-days",
            "1",
            "-subj",
            &format!("/CN={name} test CA"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
        dir,
    );
    if !ok {
        return false;
    }
    for (leaf, ext) in [
        (
            "server",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        ),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ] {
        let base = format!("{name}-{leaf}");
        std::fs::write(
            dir.join(format!("{base}.ext")),
            format!("basicConstraints=CA:FALSE\n{ext}"),
        )
        .expect("write the extensions");
        let made = tool(
            "openssl",
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{base}.key"),
                "-out",
                &format!("{base}.csr"),
                "-subj",
                &format!("/CN={name} {leaf}"),
            ],
            dir,
        ) && tool(
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                &format!("{base}.csr"),
                "-CA",
                &format!("{ca}.pem"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-days",
                "1",
                "-out",
                &format!("{base}.pem"),
                "-extfile",
                &format!("{base}.ext"),
            ],
            dir,
        );
        if !made {
            return false;
        }
    }
    true
}

/// Child processes killed when the test ends, however it ends.
struct Children(Vec<std::process::Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Mutual TLS (SPEC §12.3), on the HTTP bindings: a live `trident serve` behind a TLS front
/// (socat) that requires a client certificate of the test's CA. With `--ca`, `--cert` and
/// `--key` (or their variables) the card is fetched and a message sent over JSON-RPC and
/// HTTP+JSON; without a client certificate, or with one of another CA, the TLS handshake
/// fails: `A2ACLI_ERR_UNREACHABLE`, exit 3 (SPEC §11.6: TLS), at the card fetch and at a
/// binding's call alike; without `--ca` the agent's certificate is not trusted (the same).
/// The gRPC binding, whose client has no TLS, is a usage error (exit 2) rather than
/// certificates silently unused. (Returns early where openssl or socat is not installed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_009_mutual_tls_on_every_binding() {
    let dir = TempDir::new("a2acli-mtls");
    let d = dir.0.as_path();
    if !certificates(d, "good") || !certificates(d, "rogue") || !tool("socat", &["-V"], d) {
        assert!(
            std::env::var_os("CI").is_none(),
            "openssl or socat is not installed: CI must exercise mutual TLS"
        );
        eprintln!("openssl or socat is not installed: mutual TLS not exercised");
        return;
    }
    let p = |f: &str| d.join(f).display().to_string();
    let (agent_port, front_port) = (free_port(), free_port());
    let front = format!("https://localhost:{front_port}");
    let mut children = Children(Vec::new());
    children.0.push(
        Command::new(env!("CARGO_BIN_EXE_trident"))
            .args(["serve", "--listen", &format!("127.0.0.1:{agent_port}")])
            .args([
                "--public-url",
                &front,
                "--agent",
                "demo",
                "--store",
                "memory",
            ])
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start trident serve"),
    );
    children.0.push(
        Command::new("socat")
            .arg(format!(
                "OPENSSL-LISTEN:{front_port},bind=127.0.0.1,reuseaddr,fork,cert={},key={},\
                 cafile={},verify=1",
                p("good-server.pem"),
                p("good-server.key"),
                p("good-ca.pem")
            ))
            .arg(format!("TCP:127.0.0.1:{agent_port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start socat"),
    );
    for port in [agent_port, front_port] {
        crate::wait::until("the agent and its TLS front listen", || async move {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(drop)
        })
        .await;
    }
    let (ca, cert, key) = (p("good-ca.pem"), p("good-client.pem"), p("good-client.key"));
    let mtls = [
        "--ca",
        ca.as_str(),
        "--cert",
        cert.as_str(),
        "--key",
        key.as_str(),
    ];

    let o = run(
        &[&["card", "get", "-a", &front, "-o", "json"][..], &mtls[..]].concat(),
        &dir,
    )
    .await;
    let card = ok(&o);
    assert!(
        card.contains(&format!("{front}/")),
        "the card through the front: {card}"
    );
    let card_file = p("card.json");
    std::fs::write(&card_file, &card).expect("keep the card");

    // gRPC too: the card's gRPC interface is `localhost:PORT`, the front's, whose HTTP
    // interfaces are https://, so TLS (HTTP/2 through the front, which answers no ALPN).
    for t in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let send = [
            "send",
            "hello",
            "-a",
            &front,
            "--transport",
            t,
            "-o",
            "json",
        ];
        let out = ok(&run(&[&send[..], &mtls[..]].concat(), &dir).await);
        let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
        assert_eq!(
            v["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{t}: {out}"
        );

        // The same from the variables.
        let mut c = command(&send, &dir);
        c.env("A2ACLI_CA", &ca)
            .env("A2ACLI_CERT", &cert)
            .env("A2ACLI_KEY", &key);
        let o = tokio::task::spawn_blocking(move || c.output().expect("run trident"))
            .await
            .expect("join");
        ok(&o);

        // No client certificate: at the card fetch, and at the binding's call (card from a file).
        for agent in [front.as_str(), card_file.as_str()] {
            let o = run(
                &[
                    "send",
                    "hello",
                    "-a",
                    agent,
                    "--transport",
                    t,
                    "--ca",
                    &ca,
                    "-o",
                    "json",
                ],
                &dir,
            )
            .await;
            let e = error_object(&o, 3);
            assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE", "{t} {agent}: {e}");

            let rogue = [
                "--cert",
                &p("rogue-client.pem"),
                "--key",
                &p("rogue-client.key"),
            ]
            .map(str::to_owned);
            let args: Vec<String> = [
                "send",
                "hello",
                "-a",
                agent,
                "--transport",
                t,
                "--ca",
                &ca,
                "-o",
                "json",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(rogue)
            .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let e = error_object(&run(&args, &dir).await, 3);
            assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE", "{t} {agent}: {e}");
        }
    }

    // The agent's certificate is the test CA's: without --ca it is not trusted.
    let o = run(
        &[
            "card", "get", "-a", &front, "--cert", &cert, "--key", &key, "-o", "json",
        ],
        &dir,
    )
    .await;
    let e = error_object(&o, 3);
    assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE", "{e}");

    // The gRPC call went over TLS to the front (the card's bare host:port, taken as https).
    let debug = [
        "send",
        "hello",
        "-a",
        &front,
        "--transport",
        "GRPC",
        "--debug",
    ];
    let o = run(&[&debug[..], &mtls[..]].concat(), &dir).await;
    ok(&o);
    assert!(
        stderr(&o).contains(&format!("transport: GRPC https://localhost:{front_port} ")),
        "{}",
        stderr(&o)
    );

    // A key without its certificate: a usage error.
    let o = run(
        &[
            "card", "get", "-a", &front, "--ca", &ca, "--key", &key, "-o", "json",
        ],
        &dir,
    )
    .await;
    assert_eq!(error_object(&o, 2)["code"], "A2ACLI_ERR_USAGE");
    // gRPC's TLS verifies the agent's certificate as the HTTP bindings do: not trusted
    // without --ca (the card read from the file), exit 3.
    let grpc = [
        "send",
        "hello",
        "-a",
        &card_file,
        "--transport",
        "GRPC",
        "--cert",
        &cert,
        "--key",
        &key,
        "-o",
        "json",
    ];
    let e = error_object(&run(&grpc, &dir).await, 3);
    assert_eq!(e["code"], "A2ACLI_ERR_UNREACHABLE", "{e}");
    drop(children);
}

/// OpenID Connect (SPEC §12.3): a card whose only scheme is `openIdConnect`, naming the
/// discovery document of the test's authorization server. `auth login` reads the provider's
/// endpoints there and runs the OAuth 2 flows of §12.2 with them: client credentials with a
/// secret, the device flow without one. The tokens go with later calls on every binding (the
/// device token, short-lived, refreshed first at the discovered token endpoint). A discovery
/// document under another issuer is refused (`A2ACLI_ERR_AUTH_FAILED`, exit 4), and
/// nothing is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2acli_auth_010_openid_connect_discovery_then_the_oauth_flows() {
    use crate::a2acli_auth::{
        AuthServer, CLIENT_ID, CLIENT_SECRET, MACHINE_TOKEN, REFRESHED_TOKEN, finish, start_login,
    };
    let auth = AuthServer::start().await;
    let dir = TempDir::new("a2acli-oidc");
    let alice = format!("alice={REFRESHED_TOKEN}");
    let robot = format!("robot={MACHINE_TOKEN}");
    let server = Trident::serve(&[
        "--agent", "demo", "--store", "memory", "--bearer", &alice, "--bearer", &robot,
    ])
    .await;
    let mut card: serde_json::Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", server.origin))
            .await
            .expect("card")
            .json()
            .await
            .expect("card json");
    let with_discovery = |card: &mut serde_json::Value, url: String, file: &str| {
        card["securitySchemes"] = serde_json::json!({
            "corp": {"openIdConnectSecurityScheme": {"openIdConnectUrl": url}}
        });
        card["securityRequirements"] = serde_json::json!([{"schemes": {"corp": {"list": []}}}]);
        let path = dir.0.join(file);
        std::fs::write(&path, card.to_string()).expect("write card");
        path.display().to_string()
    };
    let discovery = format!("{}/.well-known/openid-configuration", auth.origin);
    let card_file = with_discovery(&mut card, discovery.clone(), "card.json");

    // Before any login, a refused call names the login command of the OpenID scheme.
    let config = TempDir::new("a2acli-oidc-cc");
    let e = error_object(
        &run(&["send", "-a", &card_file, "hi", "-o", "json"], &config).await,
        4,
    );
    assert_eq!(e["code"], "A2ACLI_ERR_CREDENTIALS_MISSING", "{e}");
    assert!(
        e["hint"]
            .as_str()
            .is_some_and(|h| h.contains("auth login") && h.contains("--scheme corp")),
        "{e}"
    );

    // Client credentials, at the discovered token endpoint.
    let login = [
        "auth",
        "login",
        "-a",
        &card_file,
        "--client-id",
        CLIENT_ID,
        "--client-secret",
        CLIENT_SECRET,
        "-o",
        "json",
    ];
    let o = run(&login, &config).await;
    let shown = ok(&o);
    let v: serde_json::Value = serde_json::from_str(&shown).expect("one JSON document");
    assert_eq!(v["scheme"], "corp", "{v}");
    assert_eq!(v["flow"], "client_credentials", "{v}");
    assert!(!shown.contains(MACHINE_TOKEN) && !text(&o.stderr).contains(MACHINE_TOKEN));
    for t in TRANSPORTS {
        let out = ok(&run(
            &[
                "send",
                "-a",
                &card_file,
                "--transport",
                t,
                "hi",
                "-o",
                "json",
            ],
            &config,
        )
        .await);
        let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
        assert_eq!(
            v["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{t}: {out}"
        );
    }

    // The device flow (no secret): the user approves the code; the short-lived token is
    // refreshed at the discovered endpoint before the calls.
    let device = TempDir::new("a2acli-oidc-device");
    let (child, code, reader) = start_login(
        &[
            "auth",
            "login",
            "-a",
            &card_file,
            "--client-id",
            CLIENT_ID,
            "-o",
            "json",
        ],
        &device,
    );
    auth.decide(&code, true).await;
    let (o, _stderr) = finish(child, reader).await;
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).expect("one JSON document");
    assert_eq!(v["scheme"], "corp", "{v}");
    assert_eq!(v["flow"], "device_code", "{v}");
    for t in TRANSPORTS {
        let out = ok(&run(
            &[
                "send",
                "-a",
                &card_file,
                "--transport",
                t,
                "hi",
                "-o",
                "json",
            ],
            &device,
        )
        .await);
        let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
        assert_eq!(
            v["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{t}: {out}"
        );
    }

    // A discovery document found under another issuer's URL is not trusted.
    let elsewhere = TempDir::new("a2acli-oidc-issuer");
    let mirror = format!("{}/mirror/.well-known/openid-configuration", auth.origin);
    let mirrored = with_discovery(&mut card, mirror, "mirrored.json");
    let o = run(
        &[
            "auth",
            "login",
            "-a",
            &mirrored,
            "--client-id",
            CLIENT_ID,
            "--client-secret",
            CLIENT_SECRET,
            "-o",
            "json",
        ],
        &elsewhere,
    )
    .await;
    let e = error_object(&o, 4);
    assert_eq!(e["code"], "A2ACLI_ERR_AUTH_FAILED", "{e}");
    assert!(
        e["message"].as_str().is_some_and(|m| m.contains("issuer")),
        "{e}"
    );
    assert!(
        !elsewhere.0.join("a2a-cli/tokens.json").exists(),
        "nothing kept"
    );
}
