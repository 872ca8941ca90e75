//! `trident openapi`: writes the OpenAPI 3.1 document of the HTTP+JSON binding (generated from
//! the descriptor set by `trident_rest::openapi`) to `docs/openapi.json`, or elsewhere.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `trident openapi`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Where to write the document (`-` for standard output).
    #[arg(long, default_value = "docs/openapi.json")]
    out: PathBuf,
}

/// The document as committed: pretty-printed JSON with a final newline.
pub(crate) fn rendered() -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(&trident_rest::openapi::document())?;
    text.push('\n');
    Ok(text)
}

/// Writes the document where `args` says.
pub(crate) fn run(args: &Args) -> ExitCode {
    let text = match rendered() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("trident: cannot encode the OpenAPI document: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.out.as_os_str() == "-" {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("trident: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    match std::fs::write(&args.out, text) {
        Ok(()) => {
            eprintln!("wrote {}", args.out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("trident: cannot write {}: {e}", args.out.display());
            ExitCode::FAILURE
        }
    }
}
