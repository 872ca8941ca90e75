//! The only protobuf codegen in the workspace: `proto/` → protox (pure Rust, no `protoc`) → prost
//! messages + tonic stubs (behind the `grpc` feature) + pbjson ProtoJSON serde, and the encoded
//! descriptor set for reflection and HTTP route derivation.

use std::{env, fs, io, path::PathBuf};

/// Well-known types whose JSON form we write ourselves (see `src/wkt.rs`); the rest come from
/// pbjson-types.
const OWN_WKT: [(&str, &str); 3] = [
    (".google.protobuf.Timestamp", "crate::wkt::Timestamp"),
    (".google.protobuf.Struct", "crate::wkt::Struct"),
    (".google.protobuf.Value", "crate::wkt::Value"),
];

fn main() -> io::Result<()> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(io::Error::other)?);
    // `proto` is a link to the repository's `proto/` (so `cargo package` ships the files).
    let root = manifest.join("proto");
    let file = root.join("lf/a2a/v1/a2a.proto");
    for entry in walk(&root)? {
        println!("cargo:rerun-if-changed={}", entry.display());
    }

    let mut compiler =
        protox::Compiler::new([&root]).map_err(|e| io::Error::other(e.to_string()))?;
    compiler.include_imports(true).include_source_info(true);
    compiler
        .open_file(&file)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let fds = compiler.file_descriptor_set();
    // Encoded with extension options (google.api.http, field_behavior) kept.
    let bytes = compiler.encode_file_descriptor_set();
    let pool = compiler.descriptor_pool();
    let required = required_fields(&pool);
    let out = PathBuf::from(env::var("OUT_DIR").map_err(io::Error::other)?);
    fs::write(out.join("a2a_descriptor.bin"), &bytes)?;
    fs::write(out.join("rpcs.rs"), rpc_list(&pool)?)?;

    let mut tonic = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_well_known_types(true)
        .server_mod_attribute("lf.a2a.v1", "#[cfg(feature = \"grpc\")]")
        .client_mod_attribute("lf.a2a.v1", "#[cfg(feature = \"grpc\")]")
        .codec_path("crate::codec::A2aCodec");
    for (proto, rust) in OWN_WKT {
        tonic = tonic.extern_path(proto, rust);
    }
    tonic
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;

    let mut json = pbjson_build::Builder::new();
    json.register_descriptors(&bytes)?.ignore_unknown_fields();
    for (proto, rust) in OWN_WKT {
        json.extern_path(proto, rust);
    }
    json.extern_path(".google.protobuf", "::pbjson_types")
        .build(&[".lf.a2a.v1"])?;

    compile_v03(&root, &out)?;

    let serde_rs = out.join("lf.a2a.v1.serde.rs");
    let code = fs::read_to_string(&serde_rs)?;
    fs::write(
        &serde_rs,
        emit_required(&data_null_is_set(&accept_null(&code)?)?, &required)?,
    )?;
    Ok(())
}

/// The A2A v0.3 schema (`proto/a2a/v1/a2a.proto`, package `a2a.v1`): prost messages, tonic
/// stubs (behind `grpc`) and pbjson serde, which is exactly v0.3's HTTP+JSON body format (the
/// v0.3 SDKs' REST transport is ProtoJSON of this schema). Compiled on its own so the 1.0
/// descriptor set, `for_each_rpc!` and the 1.0 serde patches stay about 1.0 only.
fn compile_v03(root: &std::path::Path, out: &std::path::Path) -> io::Result<()> {
    let mut compiler =
        protox::Compiler::new([root]).map_err(|e| io::Error::other(e.to_string()))?;
    compiler.include_imports(true);
    compiler
        .open_file(root.join("a2a/v1/a2a.proto"))
        .map_err(|e| io::Error::other(e.to_string()))?;
    let fds = compiler.file_descriptor_set();
    let bytes = compiler.encode_file_descriptor_set();
    fs::write(out.join("a2a_v03_descriptor.bin"), &bytes)?;
    fs::write(
        out.join("v03_rpcs.rs"),
        v03_rpc_list(&compiler.descriptor_pool())?,
    )?;
    let mut tonic = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_well_known_types(true)
        .server_mod_attribute("a2a.v1", "#[cfg(feature = \"grpc\")]")
        .client_mod_attribute("a2a.v1", "#[cfg(feature = \"grpc\")]")
        .codec_path("crate::codec::A2aCodec");
    for (proto, rust) in OWN_WKT {
        tonic = tonic.extern_path(proto, rust);
    }
    tonic
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;
    let mut json = pbjson_build::Builder::new();
    json.register_descriptors(&bytes)?.ignore_unknown_fields();
    for (proto, rust) in OWN_WKT {
        json.extern_path(proto, rust);
    }
    json.extern_path(".google.protobuf", "::pbjson_types")
        .build(&[".a2a.v1"])?;
    Ok(())
}

/// `for_each_rpc!`, the RPC list of `lf.a2a.v1.A2AService` read from the descriptor: the one
/// list `trident-core` builds `Operation`, `A2aRequest`/`A2aReply` and the `AroundCall`
/// service from, so an RPC added to the proto reaches every adapter through the compiler. And
/// `for_each_grpc_rpc!`, the same with tonic's stream type names, for the gRPC adapter.
fn rpc_list(pool: &prost_reflect::DescriptorPool) -> io::Result<String> {
    let (entries, grpc_entries) = rpc_entries(pool, "lf.a2a.v1", "A2AService")?;
    Ok(format!(
        "/// Calls the macro `$m` with every RPC of `lf.a2a.v1.A2AService`, in proto order, as\n\
         /// `{{ RpcName, method_name, RequestMessage, ResponseMessage, kind }}` items, where `kind` is\n\
         /// `unary`, `stream` (server streaming: the response is each event's message) or `empty`\n\
         /// (the response is `google.protobuf.Empty`). Generated from the descriptor by `build.rs`.\n\
         #[macro_export]\n\
         macro_rules! for_each_rpc {{\n    ($m:ident) => {{\n        $m! {{\n{entries}        }}\n    }};\n}}\n\n\
         /// [`for_each_rpc!`] with a sixth item per RPC: `{{ .., kind, RpcNameStream }}`, the name\n\
         /// tonic's generated server trait gives a streaming RPC's response stream type (the gRPC\n\
         /// adapter declares it for the `stream` kind). Generated from the descriptor by `build.rs`.\n\
         #[macro_export]\n\
         macro_rules! for_each_grpc_rpc {{\n    ($m:ident) => {{\n        $m! {{\n{grpc_entries}        }}\n    }};\n}}\n"
    ))
}

/// `for_each_v03_rpc!`, the RPC list of v0.3's `a2a.v1.A2AService`, for its gRPC adapter.
fn v03_rpc_list(pool: &prost_reflect::DescriptorPool) -> io::Result<String> {
    let (_, grpc_entries) = rpc_entries(pool, "a2a.v1", "A2AService")?;
    Ok(format!(
        "/// Calls the macro `$m` with every RPC of A2A v0.3's `a2a.v1.A2AService`, in proto order,\n\
         /// as `{{ RpcName, method_name, RequestMessage, ResponseMessage, kind, RpcNameStream }}`\n\
         /// items (messages of [`v03`], kinds and stream type names as in [`for_each_grpc_rpc!`]).\n\
         /// Generated from the v0.3 descriptor by `build.rs`.\n\
         #[macro_export]\n\
         macro_rules! for_each_v03_rpc {{\n    ($m:ident) => {{\n        $m! {{\n{grpc_entries}        }}\n    }};\n}}\n"
    ))
}

/// The entries of `package.service`'s RPC list, `{ RpcName, method_name, RequestMessage,
/// ResponseMessage, kind }` each, and the same with tonic's stream type name appended (`{Rpc}Stream`,
/// which `macro_rules!` cannot build from the name).
fn rpc_entries(
    pool: &prost_reflect::DescriptorPool,
    package: &str,
    service: &str,
) -> io::Result<(String, String)> {
    let service = pool
        .get_service_by_name(&format!("{package}.{service}"))
        .ok_or_else(|| io::Error::other(format!("no {package}.{service} in the proto")))?;
    let mut entries = String::new();
    let mut grpc_entries = String::new();
    for method in service.methods() {
        if method.is_client_streaming() {
            return Err(io::Error::other(format!(
                "{}: client streaming has no A2A binding",
                method.name()
            )));
        }
        let input = method.input();
        let output = method.output();
        if input.package_name() != package {
            return Err(io::Error::other(format!(
                "{}: the request must be an {package} message",
                method.name()
            )));
        }
        let kind = if method.is_server_streaming() {
            "stream"
        } else if output.full_name() == "google.protobuf.Empty" {
            "empty"
        } else if output.package_name() == package {
            "unary"
        } else {
            return Err(io::Error::other(format!(
                "{}: the response must be an {package} message or google.protobuf.Empty",
                method.name()
            )));
        };
        let entry = format!(
            "            {{ {}, {}, {}, {}, {kind}",
            method.name(),
            snake_case(method.name()),
            input.name(),
            output.name(),
        );
        entries.push_str(&format!("{entry} }}\n"));
        grpc_entries.push_str(&format!("{entry}, {}Stream }}\n", method.name()));
    }
    Ok((entries, grpc_entries))
}

/// `GetExtendedAgentCard` → `get_extended_agent_card`, as tonic names the methods.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Replaces `from` by `to` in `code`, and fails the build naming `patch` when pbjson's output
/// no longer holds `from` exactly `expected` times (`None`: at least once): a patch that
/// silently matched nothing would ship the unpatched behaviour.
fn patch(
    code: &str,
    patch: &str,
    from: &str,
    to: &str,
    expected: Option<usize>,
) -> io::Result<String> {
    let found = code.matches(from).count();
    let ok = match expected {
        Some(n) => found == n,
        None => found > 0,
    };
    if !ok {
        let wanted = expected.map_or_else(|| "at least one".to_owned(), |n| n.to_string());
        return Err(io::Error::other(format!(
            "build.rs patch `{patch}`: pbjson's output changed shape: expected {wanted} \
             match(es) of {from:?}, found {found}"
        )));
    }
    Ok(code.replace(from, to))
}

/// The one exception to "null is unset": `Part.data` is a `google.protobuf.Value`, for which
/// JSON `null` is a value (`NullValue`), so `{"data": null}` is a data part holding null. pbjson
/// reads every oneof member through `Option`, which turned it into a Part without content.
fn data_null_is_set(code: &str) -> io::Result<String> {
    patch(
        code,
        "data_null_is_set",
        "content__ = map_.next_value::<::std::option::Option<_>>()?.map(part::Content::Data)",
        "content__ = Some(part::Content::Data(map_.next_value()?))",
        Some(1),
    )
}

/// ProtoJSON reads `null` as "field not set" for every field; pbjson only does so for fields with
/// explicit presence. Rewrite the other decoders to go through `Option`. Each rewrite must
/// match, and afterwards no decoder may still wrap a value in `Some(..)` itself: a field type
/// pbjson decodes in a shape none of these patches knows fails the build instead of refusing
/// `null` at run time.
fn accept_null(code: &str) -> io::Result<String> {
    let code = patch(
        code,
        "accept_null: scalars and repeated fields",
        "__ = Some(map_.next_value()?);",
        "__ = map_.next_value::<::std::option::Option<_>>()?;",
        None,
    )?;
    let code = patch(
        &code,
        "accept_null: numbers",
        "Some(map_.next_value::<::pbjson::private::NumberDeserialize<_>>()?.0)",
        "map_.next_value::<::std::option::Option<::pbjson::private::NumberDeserialize<_>>>()?.map(|x| x.0)",
        None,
    )?;
    let code = patch(
        &code,
        "accept_null: maps",
        "Some(\n                                map_.next_value::<std::collections::HashMap<_, _>>()?\n                            )",
        "map_.next_value::<::std::option::Option<std::collections::HashMap<_, _>>>()?",
        None,
    )?;
    let code = enums_accept_null(&code)?;
    let unpatched = code.match_indices("Some(").find(|(at, _)| {
        code[at + "Some(".len()..]
            .trim_start()
            .starts_with("map_.next_value")
    });
    if let Some((at, _)) = unpatched {
        let line = code[..at].lines().count();
        let text = code[at..].lines().next().unwrap_or_default();
        return Err(io::Error::other(format!(
            "build.rs patch `accept_null`: pbjson's output changed shape: line {line} of \
             lf.a2a.v1.serde.rs decodes a field with no null handling: {text}"
        )));
    }
    Ok(code)
}

/// `Some(map_.next_value::<AnyEnum>()? as i32)` → through `Option`, for every enum type.
fn enums_accept_null(code: &str) -> io::Result<String> {
    const HEAD: &str = "Some(map_.next_value::<";
    const TAIL: &str = ">()? as i32)";
    let mut out = String::with_capacity(code.len() + 4096);
    let mut rest = code;
    let mut found = 0;
    while let Some(at) = rest.find(HEAD) {
        let after = &rest[at + HEAD.len()..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(after.len());
        let (name, tail) = after.split_at(name_len);
        if name.is_empty() || !tail.starts_with(TAIL) {
            // Not an enum decoder: left for the shape check to judge.
            out.push_str(&rest[..at + HEAD.len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        out.push_str(&format!(
            "map_.next_value::<::std::option::Option<{name}>>()?.map(|x| x as i32)"
        ));
        rest = &tail[TAIL.len()..];
        found += 1;
    }
    out.push_str(rest);
    if found == 0 {
        return Err(io::Error::other(
            "build.rs patch `accept_null: enums`: pbjson's output changed shape: no enum \
             decoder `Some(map_.next_value::<Enum>()? as i32)` found",
        ));
    }
    Ok(out)
}

/// (message, field) pairs marked `(google.api.field_behavior) = REQUIRED` whose presence is
/// implicit (scalars, repeated, maps): ProtoJSON would omit them at their default value.
fn required_fields(pool: &prost_reflect::DescriptorPool) -> Vec<(String, String)> {
    let Some(ext) = pool.get_extension_by_name("google.api.field_behavior") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for msg in pool
        .all_messages()
        .filter(|m| m.package_name() == "lf.a2a.v1")
    {
        for field in msg.fields() {
            let implicit = field.is_list()
                || field.is_map()
                || (field.containing_oneof().is_none() && !field.supports_presence());
            let opts = field.options();
            let required = match opts.get_extension(&ext).as_ref() {
                prost_reflect::Value::List(values) => {
                    values.iter().any(|v| v.as_enum_number() == Some(2))
                }
                _ => false,
            };
            if implicit && required {
                out.push((msg.name().to_owned(), field.name().to_owned()));
            }
        }
    }
    out
}

/// The spec asks for REQUIRED fields to be present even at their default value (for example
/// `ListTasksResponse.nextPageToken: ""` on the last page): drop the "is default" guards of
/// those fields in the generated serializers.
fn emit_required(code: &str, required: &[(String, String)]) -> io::Result<String> {
    let mut code = code.to_owned();
    for (message, field) in required {
        // Located by the proto name, which prost's Rust naming (APIKey -> ApiKey) leaves alone.
        // The closing quote matters: `"lf.a2a.v1.Task` is also a prefix of `"lf.a2a.v1.TaskStatus`.
        let marker = format!("serialize_struct(\"lf.a2a.v1.{message}\",");
        let start = code
            .find(&marker)
            .and_then(|at| code[..at].rfind("impl serde::Serialize for "))
            .ok_or_else(|| io::Error::other(format!("no serializer for {message}")))?;
        let end = start
            + code[start..].find("struct_ser.end()").ok_or_else(|| {
                io::Error::other(format!("unterminated serializer for {message}"))
            })?;
        let mut body = code[start..end].to_owned();
        let mut replaced = 0;
        for guard in [
            format!("if !self.{field}.is_empty() {{"),
            format!("if self.{field} != 0 {{"),
            format!("if self.{field} {{"),
        ] {
            replaced += body.matches(&guard).count();
            body = body.replace(&guard, "{");
        }
        // Two guards per field: one where the serializer counts the fields it will write,
        // one where it writes this one.
        if replaced != 2 {
            return Err(io::Error::other(format!(
                "build.rs patch `emit_required`: pbjson's output changed shape: expected two \
                 default guards for {message}.{field} in its serializer (count and write), \
                 found {replaced}"
            )));
        }
        code.replace_range(start..end, &body);
    }
    Ok(code)
}

fn walk(dir: &std::path::Path) -> io::Result<Vec<PathBuf>> {
    let mut files = vec![dir.to_path_buf()];
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(walk(&path)?);
        } else {
            files.push(path);
        }
    }
    Ok(files)
}
