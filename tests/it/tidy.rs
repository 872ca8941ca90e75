//! Architecture invariants, checked on the source tree (see ARCHITECTURE.md).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `cargo metadata` of the workspace (with the resolved dependency graph), read once.
fn metadata() -> &'static serde_json::Value {
    static METADATA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    METADATA.get_or_init(|| {
        let out = std::process::Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--locked"])
            .current_dir(root())
            .output()
            .expect("run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
    })
}

/// The workspace package named `name`.
fn package(name: &str) -> &'static serde_json::Value {
    metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == name && p["source"].is_null())
        .unwrap_or_else(|| panic!("no workspace package {name}"))
}

/// Names of the dependencies of package `name` that are neither dev- nor build-dependencies
/// (optional ones included: a feature may switch them on).
fn dependencies(name: &str) -> Vec<String> {
    package(name)["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect()
}

/// Every package `name` needs to build, through normal dependencies that are not optional
/// (an optional one is on only when a feature asks for it, and the resolved graph unifies the
/// features the whole workspace asks for), by package name.
fn non_optional_closure(name: &str) -> std::collections::BTreeSet<String> {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let by_id = |id: &str| packages.iter().find(|p| p["id"] == id);
    let nodes = meta["resolve"]["nodes"].as_array().expect("resolve nodes");
    let start = package(name)["id"].as_str().expect("id").to_owned();
    let mut seen = std::collections::BTreeSet::new();
    let mut names = std::collections::BTreeSet::new();
    let mut todo = vec![start];
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(pkg) = by_id(&id) else { continue };
        let declared = pkg["dependencies"].as_array().expect("dependencies");
        let Some(node) = nodes.iter().find(|n| n["id"] == id.as_str()) else {
            continue;
        };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let normal = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null());
            let Some(dep_id) = dep["pkg"].as_str() else {
                continue;
            };
            let Some(dep_pkg) = by_id(dep_id) else {
                continue;
            };
            let dep_name = dep_pkg["name"].as_str().unwrap_or_default();
            // A renamed dependency is declared under its package name too.
            let optional = declared
                .iter()
                .filter(|d| d["name"] == dep_name && d["kind"].is_null())
                .all(|d| d["optional"] == true);
            if normal && !optional {
                names.insert(dep_name.to_owned());
                todo.push(dep_id.to_owned());
            }
        }
    }
    names
}

/// Transport and database crates: what the vocabulary and engine crate must not build on.
const TRANSPORT_OR_DATABASE: [&str; 12] = [
    "tonic",
    "axum",
    "hyper",
    "hyper-util",
    "reqwest",
    "jsonrpsee",
    "jsonrpsee-types",
    "sqlx",
    "rusqlite",
    "tower",
    "http",
    "h2",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n != "target" && n != "node_modules")
            {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn core_depends_on_no_transport_or_database() {
    let deps = dependencies("trident-core");
    for banned in TRANSPORT_OR_DATABASE {
        assert!(
            !deps.iter().any(|d| d == banned),
            "trident-core must not depend on {banned}"
        );
    }
}

/// The same, for everything trident-core builds on: no chain of (non-optional) dependencies
/// reaches a transport or database crate.
#[test]
fn core_builds_on_no_transport_or_database_crate() {
    let closure = non_optional_closure("trident-core");
    assert!(
        closure.contains("trident-proto") && closure.contains("prost"),
        "the dependency walk found trident-core's own dependencies: {closure:?}"
    );
    for banned in TRANSPORT_OR_DATABASE {
        assert!(
            !closure.contains(banned),
            "trident-core reaches {banned} through its dependencies: {closure:?}"
        );
    }
}

#[test]
fn bindings_depend_on_neither_each_other_nor_the_store() {
    let bindings = ["trident-grpc", "trident-jsonrpc", "trident-rest"];
    for b in bindings {
        let deps = dependencies(b);
        for other in bindings.iter().copied().chain(["trident-store"]) {
            assert!(
                other == b || !deps.iter().any(|d| d == other),
                "{b} must not depend on {other}"
            );
        }
    }
}

#[test]
fn the_store_and_security_crates_depend_on_no_binding() {
    let deps: Vec<String> = ["trident-store", "trident-security"]
        .iter()
        .flat_map(|c| dependencies(c))
        .collect();
    for banned in [
        "trident-grpc",
        "trident-jsonrpc",
        "trident-rest",
        "trident-server",
        "trident-a2a-client",
        "tonic",
        "axum",
    ] {
        assert!(
            !deps.iter().any(|d| d == banned),
            "trident-store and trident-security must not depend on {banned}"
        );
    }
}

/// Normal dependencies of `name` that are workspace crates (`trident-*`), with whether each
/// is optional.
fn trident_dependencies(name: &str) -> Vec<(String, bool)> {
    package(name)["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .filter_map(|d| {
            let n = d["name"].as_str()?;
            n.starts_with("trident")
                .then(|| (n.to_owned(), d["optional"] == true))
        })
        .collect()
}

/// The crate map (ARCHITECTURE.md): which workspace crates each library crate may build on.
/// A crate missing here, or a dependency not listed for it, fails: a new edge is a decision
/// to write down first.
const CRATE_MAP: [(&str, &[&str]); 17] = [
    ("trident-proto", &[]),
    ("trident-core", &["trident-proto"]),
    ("trident-engine", &["trident-core", "trident-proto"]),
    ("trident-testkit", &["trident-core", "trident-proto"]),
    // The v0.3 translation: the two models and the vocabulary, nothing else.
    ("trident-v03", &["trident-core", "trident-proto"]),
    // `trident-engine` only behind the `webhooks` feature (checked below).
    (
        "trident-http",
        &["trident-core", "trident-proto", "trident-engine"],
    ),
    // `trident-http` for the request edge (`call_context`), which all three adapters share.
    (
        "trident-grpc",
        &[
            "trident-core",
            "trident-proto",
            "trident-http",
            "trident-v03",
        ],
    ),
    (
        "trident-jsonrpc",
        &[
            "trident-core",
            "trident-proto",
            "trident-http",
            "trident-v03",
        ],
    ),
    (
        "trident-rest",
        &[
            "trident-core",
            "trident-proto",
            "trident-http",
            "trident-v03",
        ],
    ),
    // The durable stores: no engine (the in-memory store is the engine's; the facade's
    // `store::open` takes `memory` itself).
    ("trident-store", &["trident-core", "trident-proto"]),
    ("trident-security", &["trident-core", "trident-proto"]),
    // The cluster's live-event bus (NATS JetStream): an `EventBus` of the vocabulary, no
    // engine, no store.
    ("trident-nats", &["trident-core", "trident-proto"]),
    (
        "trident-a2a-client",
        &[
            "trident-core",
            "trident-proto",
            "trident-http",
            // Reading v0.3 cards (the v0.3 clients themselves are in the bindings).
            "trident-v03",
            "trident-grpc",
            "trident-jsonrpc",
            "trident-rest",
        ],
    ),
    (
        "trident-server",
        &[
            "trident-core",
            "trident-proto",
            "trident-v03",
            "trident-grpc",
            "trident-jsonrpc",
            "trident-rest",
        ],
    ),
    ("trident-exec", &["trident-core", "trident-proto"]),
    (
        // The behaviour suite speaks to agents as a client: no engine.
        "trident-conformance",
        &[
            "trident-core",
            "trident-proto",
            "trident-testkit",
            "trident-a2a-client",
        ],
    ),
    (
        "trident-a2a",
        &[
            "trident-core",
            "trident-proto",
            "trident-engine",
            "trident-http",
            "trident-rest",
            "trident-server",
            "trident-store",
            "trident-a2a-client",
            "trident-security",
        ],
    ),
];

#[test]
fn library_crates_depend_only_as_the_crate_map_says() {
    for (name, allowed) in CRATE_MAP {
        for (dep, _) in trident_dependencies(name) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{name} depends on {dep}, which the crate map (ARCHITECTURE.md and tidy.rs) \
                 does not allow"
            );
        }
    }
    // Every library crate of the workspace is on the map (the binary and the benchmark are
    // programs on top of everything).
    for entry in std::fs::read_dir(root().join("crates"))
        .expect("crates")
        .flatten()
    {
        let dir = entry.file_name().to_string_lossy().into_owned();
        let manifest = entry.path().join("Cargo.toml");
        if dir == "trident-bench" || !manifest.exists() {
            continue;
        }
        // The package's name, which is not always the directory's (`crates/trident` is
        // published as `trident-a2a`).
        let manifest = read(&manifest);
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or_else(|| panic!("crates/{dir}/Cargo.toml names no package"));
        assert!(
            CRATE_MAP.iter().any(|(n, _)| *n == name),
            "crates/{dir} ({name}) is not on the crate map in tidy.rs"
        );
    }
}

/// trident-core is the vocabulary: it builds on no engine, no store, no transport and no
/// database, and nothing but trident-proto of the workspace.
#[test]
fn core_depends_on_no_engine_store_or_http_crate() {
    let closure = non_optional_closure("trident-core");
    for banned in [
        "trident-engine",
        "trident-store",
        "trident-http",
        "trident-testkit",
        "trident-grpc",
        "trident-jsonrpc",
        "trident-rest",
        "url",
    ] {
        assert!(
            !closure.contains(banned),
            "trident-core reaches {banned}: {closure:?}"
        );
    }
}

/// The engine knows no transport and no database either, and no binding.
#[test]
fn the_engine_builds_on_no_transport_database_or_binding() {
    let closure = non_optional_closure("trident-engine");
    assert!(closure.contains("trident-core"), "{closure:?}");
    for banned in TRANSPORT_OR_DATABASE.iter().copied().chain([
        "trident-http",
        "trident-store",
        "trident-grpc",
        "trident-jsonrpc",
        "trident-rest",
        "trident-testkit",
    ]) {
        assert!(
            !closure.contains(banned),
            "trident-engine reaches {banned}: {closure:?}"
        );
    }
}

/// The shared HTTP helpers need no server framework, reach reqwest only through a feature
/// (`client` for the bindings' clients, `webhooks`) and the engine only through `webhooks`,
/// which no binding switches on: a binding never reaches the engine, the stores or the test
/// kit.
#[test]
fn bindings_reach_no_engine_store_or_testkit() {
    let http = non_optional_closure("trident-http");
    for banned in [
        "trident-engine",
        "reqwest",
        "axum",
        "tonic",
        "hyper",
        "sqlx",
    ] {
        assert!(
            !http.contains(banned),
            "trident-http reaches {banned}: {http:?}"
        );
    }
    for b in ["trident-grpc", "trident-jsonrpc", "trident-rest"] {
        let closure = non_optional_closure(b);
        for banned in [
            "trident-engine",
            "trident-store",
            "trident-testkit",
            "sqlx",
            "rusqlite",
        ] {
            assert!(
                !closure.contains(banned),
                "{b} reaches {banned}: {closure:?}"
            );
        }
        for d in package(b)["dependencies"].as_array().expect("dependencies") {
            if d["name"] == "trident-http" && d["kind"].is_null() {
                let features = d["features"].as_array().expect("features");
                assert!(
                    !features.iter().any(|f| f == "webhooks"),
                    "{b} switches on trident-http/webhooks (the engine's transport)"
                );
            }
        }
    }
}

/// The SQL stores read through one path (`read.rs`): the helpers both used to repeat exist
/// once, and so does each read query.
#[test]
fn the_sql_stores_read_through_one_path() {
    let mut files = Vec::new();
    rust_files(&root().join("crates/trident-store/src"), &mut files);
    files.retain(|f| f.file_name().is_some_and(|n| n != "tests.rs"));
    assert!(files.len() > 4, "the store's sources were found: {files:?}");
    for needle in [
        "fn bind_all",
        "fn scoped_id",
        "fn backend",
        "FROM events WHERE",
        "FROM event_blocks",
        "SELECT body FROM push_configs",
        "FROM deliveries d",
        "lease_until < $1",
    ] {
        let holders: Vec<&PathBuf> = files
            .iter()
            .filter(|f| code_of(&read(f)).contains(needle))
            .collect();
        assert!(
            holders.len() == 1 && holders[0].ends_with("read.rs"),
            "`{needle}` is written in {holders:?}: the SQL stores' reads belong in read.rs"
        );
    }
}

#[test]
fn only_trident_proto_runs_protobuf_codegen() {
    let mut builds = Vec::new();
    for dir in [root(), root().join("crates")] {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = if entry.path().is_dir() {
                entry.path().join("build.rs")
            } else {
                continue;
            };
            if p.exists() {
                builds.push(p);
            }
        }
    }
    if root().join("build.rs").exists() {
        builds.push(root().join("build.rs"));
    }
    for b in builds {
        let text = read(&b);
        let codegen = text.contains("protox")
            || text.contains("prost_build")
            || text.contains("tonic_prost_build");
        let owner = b.ends_with("crates/trident-proto/build.rs");
        assert_eq!(
            codegen,
            owner,
            "{}: only trident-proto compiles protobuf",
            b.display()
        );
    }
}

/// What a source file writes outside its comments: the text of each line before any `//`
/// that starts it (doc comments may name codes: they explain, they do not encode).
fn code_of(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` holds the number `n` as a token of its own (`-32001`, not `-320011`).
fn has_number(code: &str, n: i32) -> bool {
    let needle = n.to_string();
    code.match_indices(&needle).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || (n >= 0 && c == '-'))
            && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// Wire codes exist in exactly one match: `ErrorKind::wire` in trident-core's error.rs. Every
/// JSON-RPC code, status name and ErrorInfo reason of that table is looked for in the rest of
/// the code (comments aside); test files restating the spec table are exempt. HTTP statuses
/// and numeric gRPC codes are too common as numbers to search for: they are read through
/// `http::StatusCode` and `tonic::Code`, built from the table.
#[test]
fn wire_codes_are_written_only_in_the_error_table() {
    use trident_core::ErrorKind;
    let table = root().join("crates/trident-core/src/error.rs");
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("src"), &mut files);
    let mut codes = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for kind in ErrorKind::ALL {
        let wire = kind.wire();
        codes.push(wire.jsonrpc);
        names.insert(format!("\"{}\"", wire.status));
        names.insert(format!("\"{}\"", wire.reason));
    }
    assert!(
        codes.contains(&-32001) && names.contains("\"TASK_NOT_FOUND\""),
        "the needles come from the table"
    );
    let mut scanned = 0;
    for f in files {
        let is_test = f.components().any(|c| c.as_os_str() == "tests")
            || f.file_name().is_some_and(|n| n == "tests.rs");
        if f == table || is_test {
            continue;
        }
        scanned += 1;
        let code = code_of(&read(&f));
        for n in &codes {
            assert!(
                !has_number(&code, *n),
                "{} writes the JSON-RPC code {n}; read it from ErrorKind::wire()",
                f.display()
            );
        }
        for n in &names {
            assert!(
                !code.contains(n.as_str()),
                "{} writes the wire name {n}; read it from ErrorKind::wire()",
                f.display()
            );
        }
    }
    assert!(scanned > 50, "the source files were found ({scanned})");
}

#[test]
fn no_hand_written_twin_of_a_proto_message() {
    let proto = read(&root().join("proto/lf/a2a/v1/a2a.proto"));
    let messages: Vec<&str> = proto
        .lines()
        .filter_map(|l| l.strip_prefix("message "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(messages.len(), 44);
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("src"), &mut files);
    for f in files {
        let text = read(&f);
        for m in &messages {
            for decl in [
                format!("pub struct {m} "),
                format!("pub struct {m}{{"),
                format!("struct {m} {{"),
            ] {
                assert!(
                    !text.contains(&decl),
                    "{} declares {m}; use trident_proto::{m}",
                    f.display()
                );
            }
        }
    }
}

#[test]
fn the_binary_serves_only_through_the_facade_builder() {
    let serve = read(&root().join("src/serve.rs"));
    assert!(serve.contains("Server::builder") && serve.contains("Server::service"));
    for bypass in [
        "Engine::builder",
        "trident_server::app(",
        "serve_with",
        "TcpListener",
        "HttpWebhooks",
        "observed_stores",
        "Observed::new",
        "Limited::new",
        "trident_store::open(",
        "card_with_interfaces",
        "sign_card",
    ] {
        assert!(
            !serve.contains(bypass),
            "src/serve.rs uses {bypass}: serve through trident::Server::builder"
        );
    }
}

/// Every package in the workspace, by name, with its manifest path.
fn workspace_packages() -> Vec<(&'static str, &'static str)> {
    metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["source"].is_null())
        .filter_map(|p| Some((p["name"].as_str()?, p["manifest_path"].as_str()?)))
        .collect()
}

#[test]
fn the_agent_crate_depends_on_the_facade_alone() {
    // The example agent crate is what a user writes: `trident` (package `trident-a2a`) is the
    // one Trident crate it may name, in any kind of dependency.
    let all: Vec<String> = package("scribe-agent")["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    assert!(all.iter().any(|d| d == "trident-a2a"), "{all:?}");
    let trident: Vec<&String> = all.iter().filter(|d| d.starts_with("trident")).collect();
    assert_eq!(trident, ["trident-a2a"], "scribe-agent names {trident:?}");
}

/// The examples (and the agent crate) reach `serde_json`, `futures` and every Trident crate
/// through the facade (`trident::serde_json`, `trident::futures`), so a user's crate needs no
/// dependency of its own for what the API hands out.
#[test]
fn the_examples_name_json_streams_and_trident_through_the_facade() {
    let mut files = Vec::new();
    rust_files(&root().join("examples"), &mut files);
    assert!(files.len() > 5, "{files:?}");
    for file in files {
        let code = code_of(&read(&file));
        for name in ["futures::", "serde_json::", "trident_"] {
            for (at, _) in code.match_indices(name) {
                let before = &code[..at];
                let word_start = !before
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
                assert!(
                    !word_start,
                    "{} names `{name}` directly: reach it through `trident::`",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn published_packages_carry_their_metadata_and_unpublished_ones_say_so() {
    // `cargo package` (run by .ci/run) needs these to publish; what is not meant for
    // crates.io must say `publish = false`.
    let unpublished = ["trident-bench", "scribe-agent"];
    for (name, _) in workspace_packages() {
        let p = package(name);
        let publishable = p["publish"].as_array().is_none_or(|r| !r.is_empty());
        assert_eq!(
            publishable,
            !unpublished.contains(&name),
            "{name}: publish = {}",
            p["publish"]
        );
        if !publishable {
            continue;
        }
        for field in ["description", "license", "readme"] {
            assert!(
                p[field].as_str().is_some_and(|v| !v.is_empty()),
                "{name} has no {field}"
            );
        }
        assert!(
            p["keywords"].as_array().is_some_and(|k| !k.is_empty()),
            "{name} has no keywords"
        );
    }
}

#[test]
fn public_errors_are_typed_not_strings() {
    // The library crates (the benchmark's runner is a program, not an API).
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root().join("crates"))
        .expect("crates")
        .flatten()
    {
        if entry.file_name() != "trident-bench" {
            rust_files(&entry.path().join("src"), &mut files);
        }
    }
    for f in files {
        for line in read(&f).lines().map(str::trim_start) {
            let public_fn = line.starts_with("pub fn ") || line.starts_with("pub async fn ");
            let string_error = line
                .split_once("-> ")
                .is_some_and(|(_, ret)| ret.starts_with("Result<") && ret.contains(", String>"));
            assert!(
                !(public_fn && string_error),
                "{}: a public function returns a String error: {line}",
                f.display()
            );
            assert!(
                !(line.starts_with("pub struct ") && line.contains("Error(pub String)")),
                "{}: a String error type: {line}",
                f.display()
            );
        }
    }
}

/// The engine's source files (wherever the engine crate keeps them).
fn engine_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "crates/trident-core/src/engine",
        "crates/trident-engine/src/engine",
        "crates/trident-engine/src",
    ] {
        let dir = root().join(dir);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    files.sort();
    files.dedup();
    assert!(!files.is_empty(), "no engine sources found");
    files
}

/// Issue 15: a turn on an existing task begins in one place (`Live::begin_turn`), and a turn
/// runs with one cancel token: the one its `RequestContext` carries, never a second one made
/// for the run alone.
#[test]
fn a_turn_begins_in_one_place_with_one_cancel_token() {
    let mut begins = Vec::new();
    for file in engine_files() {
        let code = code_of(&read(&file));
        if code.contains("record.turn += 1") {
            begins.push(file.display().to_string());
        }
        assert!(
            !code.contains("cancel: tokio_util::sync::CancellationToken::new()"),
            "{}: a run makes its own cancel token, which its executor does not hear",
            file.display()
        );
    }
    assert_eq!(
        begins.len(),
        1,
        "a turn on an existing task begins in more than one place: {begins:?}"
    );
    assert!(begins[0].ends_with("live.rs"), "{begins:?}");
}

/// `unsafe` is denied workspace-wide; the one function allowed it is glibc's `malloc_trim` in
/// `trident-server`'s `trim.rs` (memory back to the system after connections close).
#[test]
fn unsafe_code_is_allowed_in_one_place_only() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("examples"), &mut files);
    let allowed = root().join("crates/trident-server/src/trim.rs");
    for file in files {
        let text = read(&file);
        let allows = text.matches("allow(unsafe_code)").count()
            + text.matches("expect(unsafe_code)").count();
        let blocks = text.matches("unsafe {").count() + text.matches("unsafe fn").count();
        if file == allowed {
            assert_eq!((allows, blocks), (1, 1), "{}", file.display());
        } else {
            assert_eq!(
                (allows, blocks),
                (0, 0),
                "unsafe code in {}",
                file.display()
            );
        }
    }
}

/// The a2a-cli compliance reports stay true: `docs/a2a-cli-compliance.md` has a row for every
/// requirement of the specification's registry (`COMPLIANCE.md`, read from a checkout of the
/// specification beside the repository or from `A2ACLI_SPEC_DIR`; without one, the
/// requirements of the YAML report, which was filled from the specification's template),
/// `docs/a2a-cli-compliance.yaml` has the same requirements with the same statuses, each
/// report's tally agrees with its rows, and every test a `✅` or `◐` row or an `evidence`
/// entry names is a function in `tests/it`.
#[test]
fn the_a2a_cli_reports_agree() {
    use std::collections::{BTreeMap, BTreeSet};
    let root = root();
    let md = read(&root.join("docs/a2a-cli-compliance.md"));
    let yaml = read(&root.join("docs/a2a-cli-compliance.yaml"));

    // The test functions of tests/it, by file.
    let mut files = Vec::new();
    rust_files(&root.join("tests/it"), &mut files);
    let mut defined: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let text = read(file);
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        let names = text
            .split("fn ")
            .skip(1)
            .filter_map(|s| s.split(['(', '<']).next())
            .map(str::to_owned)
            .collect();
        defined.insert(rel, names);
    }
    let exists = |name: &str| defined.values().any(|names| names.contains(name));

    // The Markdown report: id -> (tier, status, notes).
    let status_of = |mark: &str| match mark {
        "✅" => "pass",
        "◐" => "partial",
        "❌" => "fail",
        "⊘" => "not_measured",
        "— N/A" => "na",
        "⊗" => "withdrawn",
        other => panic!("unknown mark {other:?}"),
    };
    let mut tier = 0;
    let mut rows: BTreeMap<String, (u32, &str, String)> = BTreeMap::new();
    for line in md.lines() {
        if let Some(t) = line
            .strip_prefix("## ")
            .and_then(|h| h.split(". Tier ").nth(1))
            .and_then(|t| t.chars().next())
            .and_then(|c| c.to_digit(10))
        {
            tier = t;
        }
        if !line.starts_with("| `A2ACLI_") || line.starts_with("| `A2ACLI_ERR_") {
            continue;
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
        let id = cells[0].trim().trim_matches('`').to_owned();
        let status = status_of(cells[3].trim());
        let notes = cells[4..].join(" | ");
        if matches!(status, "pass" | "partial") {
            for name in notes.split('`').filter(|w| {
                w.starts_with("a2acli_") && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }) {
                assert!(
                    exists(name),
                    "{id} names {name}, which is no test in tests/it"
                );
            }
            for cited in notes.split('`').filter(|w| w.starts_with("tests/it/")) {
                if let Some((file, name)) = cited.split_once("::") {
                    assert!(
                        defined.get(file).is_some_and(|n| n.contains(name)),
                        "{id} names {cited}, which does not exist"
                    );
                }
            }
        }
        assert!(
            rows.insert(id.clone(), (tier, status, notes)).is_none(),
            "{id} has two rows"
        );
    }

    // The YAML report: id -> (tier, status, evidence).
    let mut entries: BTreeMap<String, (u32, String, Vec<String>)> = BTreeMap::new();
    let mut in_requirements = false;
    let mut current: Option<String> = None;
    for line in yaml.lines() {
        if !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty() {
            in_requirements = line == "requirements:";
            current = None;
            continue;
        }
        if !in_requirements {
            continue;
        }
        if let Some(id) = line
            .strip_prefix("  A2ACLI_")
            .and_then(|r| r.strip_suffix(':'))
        {
            let id = format!("A2ACLI_{id}");
            entries.insert(id.clone(), (0, String::new(), Vec::new()));
            current = Some(id);
        } else if let Some(entry) = current.as_ref().and_then(|id| entries.get_mut(id)) {
            if let Some(t) = line.strip_prefix("    tier: ") {
                entry.0 = t.trim().parse().expect("a tier");
            } else if let Some(s) = line.strip_prefix("    status: ") {
                entry.1 = s.trim().to_owned();
            } else if let Some(e) = line.strip_prefix("      - ") {
                entry.2.push(e.trim().to_owned());
            }
        }
    }

    // The registry: the specification's, when a checkout of it is at hand.
    let spec_dir = std::env::var_os("A2ACLI_SPEC_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            root.ancestors()
                .map(|a| a.join("shared/spec/a2a-cli"))
                .find(|d| d.join("COMPLIANCE.md").is_file())
        });
    let registry: BTreeSet<String> = match &spec_dir {
        Some(dir) => read(&dir.join("COMPLIANCE.md"))
            .lines()
            .filter(|l| l.starts_with("| `A2ACLI_") && !l.starts_with("| `A2ACLI_ERR_"))
            .filter_map(|l| l.split('`').nth(1))
            .map(str::to_owned)
            .collect(),
        None => {
            eprintln!("no a2a-cli specification checkout: the YAML report's requirements stand in");
            entries.keys().cloned().collect()
        }
    };
    assert_eq!(registry.len(), 66, "the v0.2 registry: {registry:?}");
    let md_ids: BTreeSet<String> = rows.keys().cloned().collect();
    let yaml_ids: BTreeSet<String> = entries.keys().cloned().collect();
    assert_eq!(
        registry.difference(&md_ids).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "requirements without a row in docs/a2a-cli-compliance.md"
    );
    assert_eq!(md_ids, registry, "rows that are not requirements");
    assert_eq!(
        yaml_ids, md_ids,
        "the YAML report has the same requirements"
    );

    for (id, (tier, status, _)) in &rows {
        let (yaml_tier, yaml_status, evidence) = &entries[id];
        assert_eq!(yaml_tier, tier, "{id}: the tier of its section");
        assert_eq!(yaml_status, status, "{id}: the same status in both reports");
        for e in evidence {
            let (file, name) = e
                .split_once("::")
                .unwrap_or_else(|| panic!("{id}: evidence {e:?} is FILE::TEST"));
            assert!(
                defined.get(file).is_some_and(|n| n.contains(name)),
                "{id}: evidence {e} does not exist"
            );
        }
        if *status == "pass" {
            assert!(!evidence.is_empty(), "{id} passes without evidence");
        }
    }

    // Each report's tally is its rows'.
    for t in 1..=3u32 {
        let count = |s: &str| rows.values().filter(|r| r.0 == t && r.1 == s).count();
        let total = rows.values().filter(|r| r.0 == t).count();
        let [pass, partial, fail, not_measured, na] =
            ["pass", "partial", "fail", "not_measured", "na"].map(count);
        let satisfied = total > 0 && pass + na == total;
        let yaml_line = format!(
            "  tier_{t}: {{total: {total}, pass: {pass}, partial: {partial}, fail: {fail}, \
             not_measured: {not_measured}, na: {na}, satisfied: {satisfied}}}"
        );
        assert!(
            yaml.lines().any(|l| l == yaml_line),
            "the YAML summary says {yaml_line}"
        );
        let md_row = md
            .lines()
            .find(|l| l.starts_with(&format!("| Tier {t} — ")))
            .unwrap_or_else(|| panic!("no tally row for tier {t}"));
        let cells: Vec<&str> = md_row.trim().trim_matches('|').split(" | ").collect();
        let numbers: Vec<usize> = cells[1..7]
            .iter()
            .map(|c| c.trim().parse().expect("a count"))
            .collect();
        assert_eq!(
            numbers,
            [total, pass, partial, fail, not_measured, na],
            "the Markdown tally of tier {t}"
        );
        assert_eq!(
            cells[7].trim(),
            if satisfied { "yes" } else { "no" },
            "tier {t} satisfied?"
        );
    }
}

/// A crate's source as tokens: identifiers, `::` and single punctuation characters, each with
/// its line; comments, strings and character literals are gone.
fn tokens_of(text: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == 'r' && (at(i + 1) == '"' || (at(i + 1) == '#' && at(i + 2) != '[')) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) != '"' {
                out.push(("r".to_owned(), line));
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                line += usize::from(chars[j] == '\n');
                j += 1;
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime (kept out: no path).
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((chars[start..i].iter().collect(), line));
        } else if c == ':' && at(i + 1) == ':' {
            out.push(("::".to_owned(), line));
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push((c.to_string(), line));
            i += 1;
        }
    }
    out
}

/// Expands a `use` tree (its tokens, without `use` and `;`) into paths, each with the name
/// it binds (`*` for a glob).
fn use_paths(tokens: &[String]) -> Vec<(Vec<String>, String)> {
    fn tree(
        tokens: &[String],
        i: &mut usize,
        prefix: &[String],
        out: &mut Vec<(Vec<String>, String)>,
    ) {
        let mut path = prefix.to_vec();
        while *i < tokens.len() {
            match tokens[*i].as_str() {
                "::" => *i += 1,
                "{" => {
                    *i += 1;
                    while *i < tokens.len() && tokens[*i] != "}" {
                        tree(tokens, i, &path, out);
                        if *i < tokens.len() && tokens[*i] == "," {
                            *i += 1;
                        }
                    }
                    *i += 1;
                    return;
                }
                "*" => {
                    *i += 1;
                    out.push((path, "*".to_owned()));
                    return;
                }
                "," | "}" => break,
                "as" => {
                    let alias = tokens.get(*i + 1).cloned().unwrap_or_default();
                    *i += 2;
                    out.push((path, alias));
                    return;
                }
                "self" if !path.is_empty() => *i += 1,
                name => {
                    path.push(name.to_owned());
                    *i += 1;
                }
            }
        }
        if let Some(last) = path.last().cloned() {
            out.push((path, last));
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    let start = tokens.iter().position(|t| t != "::").unwrap_or(0);
    i += start;
    tree(tokens, &mut i, &[], &mut out);
    out
}

/// One crate's modules: each module's path (`engine::live`), what its `use` declarations
/// bind (name → the declaring module and the path), and the paths it names, with lines.
#[derive(Default)]
struct ModuleTree {
    files: std::collections::BTreeMap<Vec<String>, PathBuf>,
    aliases:
        std::collections::BTreeMap<Vec<String>, std::collections::BTreeMap<String, Vec<String>>>,
    /// (module, path it names, file, line).
    refs: Vec<(Vec<String>, Vec<String>, PathBuf, usize)>,
    /// Modules compiled for tests only (`#[cfg(test)]`): what they name is no edge, as a
    /// dev-dependency is none in Cargo's graph (a store's test may build an engine).
    tests: std::collections::BTreeSet<Vec<String>>,
}

/// Whether the `mod` on `line` (1-based) of `text` is under `#[cfg(test)]`: on its line or on
/// the attribute lines right above it.
fn under_cfg_test(text: &str, line: usize) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let Some(own) = lines.get(line.wrapping_sub(1)) else {
        return false;
    };
    if own
        .split("mod ")
        .next()
        .is_some_and(|before| before.contains("cfg(test)"))
    {
        return true;
    }
    lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("#["))
        .any(|l| l.contains("cfg(test)"))
}

impl ModuleTree {
    /// Reads the crate whose root file is `root` (lib.rs or main.rs) and every module file it
    /// declares.
    fn read(root: &Path) -> Self {
        let mut tree = Self::default();
        let mut queue = vec![(Vec::new(), root.to_path_buf())];
        while let Some((module, file)) = queue.pop() {
            let text = read(&file);
            let tokens = tokens_of(&text);
            let dir = match file.file_name().and_then(|n| n.to_str()) {
                Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().map(Path::to_path_buf),
                _ => Some(file.with_extension("")),
            }
            .unwrap_or_default();
            tree.files.insert(module.clone(), file.clone());
            // The modules open at each point of the file (inline `mod x { … }` nest), with the
            // brace depth each closes at.
            let mut open: Vec<(Vec<String>, PathBuf, usize)> = vec![(module.clone(), dir, 0)];
            let mut depth = 0usize;
            let mut i = 0;
            let words: Vec<&str> = tokens.iter().map(|(t, _)| t.as_str()).collect();
            let path_attr = |at: usize| -> Option<String> {
                // `#[path = "…"]` just before `mod`: strings are gone from the tokens, so read it
                // from the text of the line before.
                let line = tokens[at].1;
                let prev = text.lines().nth(line.checked_sub(2)?)?.trim();
                let rest = prev.strip_prefix("#[path = \"")?;
                Some(rest.split('"').next()?.to_owned())
            };
            while i < words.len() {
                let (current, current_dir, _) = open.last().cloned().unwrap_or_default();
                match words[i] {
                    "{" => depth += 1,
                    "}" => {
                        depth = depth.saturating_sub(1);
                        if open.len() > 1 && open.last().is_some_and(|o| o.2 == depth) {
                            open.pop();
                        }
                    }
                    "mod" if i + 2 < words.len() && (i == 0 || words[i - 1] != "::") => {
                        let name = words[i + 1].to_owned();
                        let mut child = current.clone();
                        child.push(name.clone());
                        if under_cfg_test(&text, tokens[i].1) {
                            tree.tests.insert(child.clone());
                        }
                        if words[i + 2] == ";" {
                            let path = match path_attr(i) {
                                Some(p) => file.parent().unwrap_or(Path::new("")).join(p),
                                None => {
                                    let flat = current_dir.join(format!("{name}.rs"));
                                    if flat.is_file() {
                                        flat
                                    } else {
                                        current_dir.join(&name).join("mod.rs")
                                    }
                                }
                            };
                            if path.is_file() {
                                queue.push((child, path));
                            }
                            i += 3;
                            continue;
                        } else if words[i + 2] == "{" {
                            tree.files.insert(child.clone(), file.clone());
                            open.push((child, current_dir.join(&name), depth));
                            depth += 1;
                            i += 3;
                            continue;
                        }
                    }
                    "use" => {
                        let end = (i..words.len())
                            .find(|&j| words[j] == ";")
                            .unwrap_or(words.len());
                        let body: Vec<String> =
                            words[i + 1..end].iter().map(|w| w.to_string()).collect();
                        for (path, name) in use_paths(&body) {
                            if name != "*" {
                                tree.aliases
                                    .entry(current.clone())
                                    .or_default()
                                    .insert(name, path.clone());
                            }
                            tree.refs
                                .push((current.clone(), path, file.clone(), tokens[i].1));
                        }
                        i = end + 1;
                        continue;
                    }
                    "crate" | "super" | "self"
                        if words.get(i + 1) == Some(&"::") && (i == 0 || words[i - 1] != "::") =>
                    {
                        let mut path = vec![words[i].to_owned()];
                        let mut j = i + 1;
                        while words.get(j) == Some(&"::")
                            && words
                                .get(j + 1)
                                .is_some_and(|w| w.chars().all(|c| c.is_alphanumeric() || c == '_'))
                        {
                            path.push(words[j + 1].to_owned());
                            j += 2;
                        }
                        tree.refs
                            .push((current.clone(), path, file.clone(), tokens[i].1));
                        i = j;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        tree
    }

    /// The module a path written in `module` names (the deepest module it goes through),
    /// following `use` re-exports; `None` for another crate's.
    fn resolve(&self, module: &[String], path: &[String], hops: usize) -> Option<Vec<String>> {
        if hops > 16 || path.is_empty() {
            return None;
        }
        let mut cur: Vec<String>;
        let mut i = 0;
        match path[0].as_str() {
            "crate" => {
                cur = Vec::new();
                i = 1;
            }
            "self" => {
                cur = module.to_vec();
                i = 1;
            }
            "super" => {
                cur = module.to_vec();
                while path.get(i).is_some_and(|s| s == "super") {
                    cur.pop();
                    i += 1;
                }
            }
            first => {
                let mut child = module.to_vec();
                child.push(first.to_owned());
                if self.files.contains_key(&child) {
                    cur = module.to_vec();
                } else if let Some(target) = self.aliases.get(module).and_then(|a| a.get(first))
                    && target.first().map(String::as_str) != Some(first)
                {
                    let mut full = target.clone();
                    full.extend(path[1..].iter().cloned());
                    return self.resolve(module, &full, hops + 1);
                } else {
                    return None;
                }
            }
        }
        while let Some(name) = path.get(i) {
            let mut child = cur.clone();
            child.push(name.clone());
            if self.files.contains_key(&child) {
                cur = child;
                i += 1;
            } else if let Some(target) = self.aliases.get(&cur).and_then(|a| a.get(name)) {
                let declaring = cur.clone();
                return self
                    .resolve(&declaring, &target.clone(), hops + 1)
                    .or(Some(cur));
            } else {
                break;
            }
        }
        Some(cur)
    }

    /// The edges between modules under one parent: a path in `a` naming something in `b`,
    /// neither inside the other, is an edge between the children of their deepest common
    /// module that hold them. Each edge with where it is written.
    fn edges(&self) -> std::collections::BTreeMap<(Vec<String>, Vec<String>), String> {
        let mut edges = std::collections::BTreeMap::new();
        for (module, path, file, line) in &self.refs {
            if self.tests.iter().any(|t| module.starts_with(t)) {
                continue;
            }
            let Some(target) = self.resolve(module, path, 0) else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue;
            }
            let from = module[..=common].to_vec();
            let to = target[..=common].to_vec();
            edges
                .entry((from, to))
                .or_insert_with(|| format!("{}:{line} ({})", file.display(), path.join("::")));
        }
        edges
    }
}

/// Issue 28: no two modules of a crate import each other, directly or around a circle. Each
/// crate's modules (files and inline `mod`s) form a graph: a module that names another by
/// `use` or by a `crate::`/`super::`/`self::` path (re-exports followed to where the item is
/// defined) depends on it, at the level of the children of their deepest common module
/// (`engine::live` on `engine::push`; a module using its parent's items is no edge). Every
/// circle (a strongly connected set of modules) fails, named with where each of its edges is
/// written.
#[test]
fn no_import_circle_inside_a_crate() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut roots = Vec::new();
    for dir in std::fs::read_dir(root().join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for file in ["src/lib.rs", "src/main.rs"] {
            let path = dir.path().join(file);
            if path.is_file() {
                roots.push(path);
            }
        }
    }
    roots.push(root().join("src/main.rs"));
    roots.sort();
    let mut circles = Vec::new();
    let mut modules = 0;
    for crate_root in &roots {
        let name = crate_root
            .strip_prefix(root())
            .unwrap_or(crate_root)
            .display()
            .to_string();
        let tree = ModuleTree::read(crate_root);
        modules += tree.files.len();
        let edges = tree.edges();
        let mut next: BTreeMap<&Vec<String>, Vec<&Vec<String>>> = BTreeMap::new();
        for (from, to) in edges.keys() {
            next.entry(from).or_default().push(to);
        }
        let reach = |start: &Vec<String>| {
            let mut seen = BTreeSet::new();
            let mut stack = vec![start.clone()];
            while let Some(m) = stack.pop() {
                for n in next.get(&m).into_iter().flatten() {
                    if seen.insert((*n).clone()) {
                        stack.push((*n).clone());
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
            next.keys().map(|m| (*m, reach(m))).collect();
        // The strongly connected sets: modules that reach each other.
        let mut sets: BTreeSet<BTreeSet<Vec<String>>> = BTreeSet::new();
        for (m, reached) in &reaches {
            if !reached.contains(*m) {
                continue;
            }
            let set: BTreeSet<Vec<String>> = reached
                .iter()
                .filter(|n| reaches.get(n).is_some_and(|r| r.contains(*m)))
                .cloned()
                .collect();
            sets.insert(set);
        }
        for set in sets {
            let names: Vec<String> = set.iter().map(|m| m.join("::")).collect();
            let inside: Vec<String> = edges
                .iter()
                .filter(|((a, b), _)| set.contains(a) && set.contains(b))
                .map(|((a, b), at)| format!("  {} -> {} at {at}", a.join("::"), b.join("::")))
                .collect();
            circles.push(format!(
                "{name}: {}\n{}",
                names.join(", "),
                inside.join("\n")
            ));
        }
    }
    assert!(
        modules > 100,
        "only {modules} modules found: is the parser reading the crates?"
    );
    assert!(
        circles.is_empty(),
        "modules that import each other (around a circle):\n{}",
        circles.join("\n")
    );
}

/// Every case of `trident conformance` names the A2A requirement it checks: at least one
/// section of the A2A v1.0 digest (`trident_conformance::spec::SECTIONS`), each one the digest
/// has, and that table is the digest's headings, number and title (read from a checkout beside
/// the repository, `shared/spec/A2A-V1-DIGEST.md`, or from `A2A_DIGEST`; without one, the
/// table stands in for it and only the cases are checked against it).
#[test]
fn every_conformance_case_cites_a_section_of_the_digest() {
    use std::collections::BTreeMap;
    use trident_conformance::spec::{SECTIONS, section};

    let table: BTreeMap<&str, &str> = SECTIONS.iter().map(|s| (s.number, s.title)).collect();
    assert_eq!(table.len(), SECTIONS.len(), "a section is listed twice");
    let digest = std::env::var_os("A2A_DIGEST")
        .map(PathBuf::from)
        .or_else(|| {
            root()
                .ancestors()
                .map(|a| a.join("shared/spec/A2A-V1-DIGEST.md"))
                .find(|d| d.is_file())
        });
    match digest {
        Some(path) => {
            // Its numbered headings: `## 8. Title`, `### 8.4 Title [SPEC]`, `## Appendix A. Title`.
            let mut headings = BTreeMap::new();
            for line in read(&path).lines() {
                let Some(heading) = line
                    .strip_prefix("## ")
                    .or_else(|| line.strip_prefix("### "))
                    .or_else(|| line.strip_prefix("#### "))
                else {
                    continue;
                };
                let heading = heading.strip_prefix("Appendix ").unwrap_or(heading);
                let Some((number, title)) = heading.split_once(' ') else {
                    continue;
                };
                let number = number.trim_end_matches('.');
                let numbered = number.chars().all(|c| c.is_ascii_digit() || c == '.')
                    || (number.len() == 1 && number.chars().all(|c| c.is_ascii_uppercase()));
                if !numbered || number == "0" {
                    continue;
                }
                let mut title = title.replace('`', "");
                while let Some(open) = title.rfind(" [").filter(|_| title.ends_with(']')) {
                    title.truncate(open);
                }
                headings.insert(number.to_owned(), title);
            }
            assert!(
                headings.len() > 50,
                "read the digest's headings: {headings:?}"
            );
            for (number, title) in &table {
                assert_eq!(
                    headings.get(*number).map(String::as_str),
                    Some(*title),
                    "§{number} of trident_conformance::spec::SECTIONS against {}",
                    path.display()
                );
            }
            assert_eq!(
                headings.len(),
                table.len(),
                "the digest's sections are all in the table"
            );
        }
        None => eprintln!("no A2A digest beside the repository: the table stands in for it"),
    }
    for case in trident_conformance::CASES {
        assert!(!case.spec.is_empty(), "{} cites no section", case.name);
        for number in case.spec {
            assert!(
                section(number).is_some(),
                "{} cites §{number}, which the digest does not have",
                case.name
            );
        }
    }
}
