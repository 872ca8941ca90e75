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
    let root = manifest.join("../../proto");
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
    let required = required_fields(&compiler.descriptor_pool());
    let out = PathBuf::from(env::var("OUT_DIR").map_err(io::Error::other)?);
    fs::write(out.join("a2a_descriptor.bin"), &bytes)?;

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

    let serde_rs = out.join("lf.a2a.v1.serde.rs");
    let code = fs::read_to_string(&serde_rs)?;
    fs::write(
        &serde_rs,
        emit_required(&data_null_is_set(&accept_null(&code))?, &required)?,
    )?;
    Ok(())
}

/// The one exception to "null is unset": `Part.data` is a `google.protobuf.Value`, for which
/// JSON `null` is a value (`NullValue`), so `{"data": null}` is a data part holding null. pbjson
/// reads every oneof member through `Option`, which turned it into a Part without content.
fn data_null_is_set(code: &str) -> io::Result<String> {
    const READ: &str =
        "content__ = map_.next_value::<::std::option::Option<_>>()?.map(part::Content::Data)";
    if code.matches(READ).count() != 1 {
        return Err(io::Error::other("Part.data decoder not found"));
    }
    Ok(code.replace(
        READ,
        "content__ = Some(part::Content::Data(map_.next_value()?))",
    ))
}

/// ProtoJSON reads `null` as "field not set" for every field; pbjson only does so for fields with
/// explicit presence. Rewrite the other decoders to go through `Option`.
fn accept_null(code: &str) -> String {
    code.replace(
        "__ = Some(map_.next_value()?);",
        "__ = map_.next_value::<::std::option::Option<_>>()?;",
    )
    .replace(
        "Some(map_.next_value::<::pbjson::private::NumberDeserialize<_>>()?.0)",
        "map_.next_value::<::std::option::Option<::pbjson::private::NumberDeserialize<_>>>()?.map(|x| x.0)",
    )
    .replace(
        "Some(\n                                map_.next_value::<std::collections::HashMap<_, _>>()?\n                            )",
        "map_.next_value::<::std::option::Option<std::collections::HashMap<_, _>>>()?",
    )
    .replace("Some(map_.next_value::<TaskState>()? as i32)", "map_.next_value::<::std::option::Option<TaskState>>()?.map(|x| x as i32)")
    .replace("Some(map_.next_value::<Role>()? as i32)", "map_.next_value::<::std::option::Option<Role>>()?.map(|x| x as i32)")
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
        let mut replaced = false;
        for guard in [
            format!("if !self.{field}.is_empty() {{"),
            format!("if self.{field} != 0 {{"),
            format!("if self.{field} {{"),
        ] {
            if body.contains(&guard) {
                body = body.replace(&guard, "{");
                replaced = true;
            }
        }
        if !replaced {
            return Err(io::Error::other(format!(
                "no default guard for {message}.{field}"
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
