//! The optional configuration file: a TOML table whose keys are the `TRIDENT_*` environment
//! variables without the prefix, lower-case (`store = "sqlite:/var/lib/trident.db"`,
//! `lease_ttl = 5`, `max_body = 1048576`); a list flag also takes an array of strings
//! (`trusted_proxy = ["10.0.0.0/8", "fd00::/8"]`, the same as `"10.0.0.0/8,fd00::/8"`). Precedence: command-line flags, then the
//! environment, then the file. A file setting becomes the matching flag of the command being
//! run (the environment is never modified); keys no command knows are refused, keys another
//! command knows are ignored.

use std::path::{Path, PathBuf};

/// The file named by `--config FILE` (or `--config=FILE`) in `args`, else by `TRIDENT_CONFIG`.
pub(crate) fn path(args: &[String]) -> Option<PathBuf> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        if arg == "--config" {
            return iter.next().map(PathBuf::from);
        }
        if let Some(v) = arg.strip_prefix("--config=") {
            return Some(PathBuf::from(v));
        }
    }
    std::env::var_os("TRIDENT_CONFIG").map(PathBuf::from)
}

/// Reads `file` and returns `(TRIDENT_KEY, value)` for each key the environment does not set.
pub(crate) fn load(file: &Path) -> Result<Vec<(String, String)>, String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("config {}: {e}", file.display()))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| format!("config {}: {e}", file.display()))?;
    let mut vars = Vec::new();
    for (key, value) in table {
        let name = format!("TRIDENT_{}", key.to_ascii_uppercase().replace('-', "_"));
        let value = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            // A list flag's values, as its comma-separated environment variable has them.
            toml::Value::Array(items) if items.iter().all(toml::Value::is_str) => items
                .iter()
                .filter_map(toml::Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            other => {
                return Err(format!(
                    "config {}: {key} must be a string, number, boolean or array of strings, not {}",
                    file.display(),
                    other.type_str()
                ));
            }
        };
        if std::env::var_os(&name).is_none() {
            vars.push((name, value));
        }
    }
    Ok(vars)
}

/// Inserts the file's settings into `args` as flags of the command `args` runs.
pub(crate) fn apply(
    cli: &clap::Command,
    mut args: Vec<String>,
    vars: &[(String, String)],
) -> Result<Vec<String>, String> {
    // Walk to the (deepest) subcommand named in args; settings go right after its name.
    let mut command = cli;
    let mut insert_at = 1;
    let mut i = 1;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--config" {
            i += 2;
            continue;
        }
        if arg.starts_with('-') {
            i += 1;
            continue;
        }
        match command.find_subcommand(arg) {
            Some(sub) => {
                command = sub;
                insert_at = i + 1;
                i += 1;
            }
            None => break,
        }
    }
    let known = |c: &clap::Command, name: &str| {
        fn walk(c: &clap::Command, name: &str) -> bool {
            c.get_arguments()
                .any(|a| a.get_env().is_some_and(|e| e == name))
                || c.get_subcommands().any(|s| walk(s, name))
        }
        walk(c, name)
    };
    let mut flags = Vec::new();
    for (name, value) in vars {
        if name == "TRIDENT_CONFIG" {
            continue;
        }
        // The client's bearer token kept its old setting name (`token`); the flag's variable
        // is now the a2a-cli one.
        let name = if name == "TRIDENT_TOKEN" {
            "A2ACLI_BEARER"
        } else {
            name.as_str()
        };
        if !known(cli, name) {
            return Err(format!(
                "config: no command has a setting {:?}",
                name.trim_start_matches("TRIDENT_").to_ascii_lowercase()
            ));
        }
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_env().is_some_and(|e| e == name))
        else {
            continue;
        };
        let Some(long) = arg.get_long() else {
            continue;
        };
        let flag = format!("--{long}");
        if args
            .iter()
            .any(|a| a == &flag || a.starts_with(&format!("{flag}=")))
        {
            continue;
        }
        if arg.get_action().takes_values() {
            flags.push(format!("{flag}={value}"));
        } else if matches!(value.as_str(), "true" | "1" | "yes" | "on") {
            flags.push(flag);
        }
    }
    args.splice(insert_at..insert_at, flags);
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_config_flag_in_both_forms() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            path(&args(&["trident", "--config", "a.toml", "serve"])),
            Some(PathBuf::from("a.toml"))
        );
        assert_eq!(
            path(&args(&["trident", "serve", "--config=b.toml"])),
            Some(PathBuf::from("b.toml"))
        );
    }

    #[test]
    fn maps_keys_to_environment_names() {
        let dir = std::env::temp_dir().join(format!("trident-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("t.toml");
        std::fs::write(
            &file,
            "lease-ttl = 2.5\nmax_body = 1024\nstrict_version = true\nnode_id = \"n1\"\n",
        )
        .expect("write");
        let mut vars = load(&file).expect("load");
        vars.sort();
        assert_eq!(
            vars,
            [
                ("TRIDENT_LEASE_TTL".to_owned(), "2.5".to_owned()),
                ("TRIDENT_MAX_BODY".to_owned(), "1024".to_owned()),
                ("TRIDENT_NODE_ID".to_owned(), "n1".to_owned()),
                ("TRIDENT_STRICT_VERSION".to_owned(), "true".to_owned()),
            ]
        );
        std::fs::write(
            &file,
            "trusted_proxy = [\"10.0.0.0/8\", \"127.0.0.1\"]\nproxy_protocol = true\n",
        )
        .expect("write");
        let mut vars = load(&file).expect("load");
        vars.sort();
        assert_eq!(
            vars,
            [
                ("TRIDENT_PROXY_PROTOCOL".to_owned(), "true".to_owned()),
                (
                    "TRIDENT_TRUSTED_PROXY".to_owned(),
                    "10.0.0.0/8,127.0.0.1".to_owned()
                ),
            ]
        );
        std::fs::write(&file, "listen = [1]\n").expect("write");
        assert!(
            load(&file)
                .expect_err("arrays are refused")
                .contains("listen")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
