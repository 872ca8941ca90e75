//! Architecture invariants, checked on the source tree (see ARCHITECTURE.md).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Names of the `[dependencies]` (not dev or build) of a crate manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps
            && !line.is_empty()
            && !line.starts_with('#')
            && let Some(name) = line.split(['=', '.', ' ']).next()
        {
            deps.push(name.to_owned());
        }
    }
    deps
}

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
    let deps = dependencies(&read(&root().join("crates/trident-core/Cargo.toml")));
    for banned in [
        "tonic",
        "axum",
        "hyper",
        "reqwest",
        "jsonrpsee",
        "sqlx",
        "rusqlite",
        "tower",
        "http",
    ] {
        assert!(
            !deps.iter().any(|d| d == banned),
            "trident-core must not depend on {banned}"
        );
    }
}

#[test]
fn bindings_depend_on_neither_each_other_nor_the_store() {
    let bindings = ["trident-grpc", "trident-jsonrpc", "trident-rest"];
    for b in bindings {
        let path = root().join("crates").join(b).join("Cargo.toml");
        if !path.exists() {
            continue;
        }
        let deps = dependencies(&read(&path));
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
        .flat_map(|c| dependencies(&read(&root().join("crates").join(c).join("Cargo.toml"))))
        .collect();
    for banned in [
        "trident-grpc",
        "trident-jsonrpc",
        "trident-rest",
        "trident-server",
        "trident-client",
        "tonic",
        "axum",
    ] {
        assert!(
            !deps.iter().any(|d| d == banned),
            "trident-store and trident-security must not depend on {banned}"
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

/// Wire codes exist in exactly one match: `ErrorKind::wire` in trident-core's error.rs. Test
/// files restating the spec table are exempt.
#[test]
fn wire_codes_are_written_only_in_the_error_table() {
    let table = root().join("crates/trident-core/src/error.rs");
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("src"), &mut files);
    let needles = [
        "-32001",
        "-32602",
        "-32603",
        "\"TASK_NOT_FOUND\"",
        "\"INVALID_PARAMS\"",
        "\"FAILED_PRECONDITION\"",
    ];
    for f in files {
        let is_test = f.components().any(|c| c.as_os_str() == "tests")
            || f.file_name().is_some_and(|n| n == "tests.rs");
        if f == table || is_test {
            continue;
        }
        let text = read(&f);
        for n in needles {
            assert!(
                !text.contains(n),
                "{} writes the wire code {n}; read it from ErrorKind::wire()",
                f.display()
            );
        }
    }
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
