//! `scribe-agent`: serves Scribe until Ctrl-C or SIGTERM.
//!
//! Environment: `SCRIBE_BIND` (default `127.0.0.1:8080`), `SCRIBE_PUBLIC_URL`, `SCRIBE_STORE`
//! (default `memory`), `SCRIBE_TOKENS` (`token=name,…`), `SCRIBE_ALLOW_WEBHOOKS_TO`
//! (`127.0.0.1,10.0.0.0/8,…`).

use scribe_agent::{Config, server};
use trident::WebhookPolicy;

fn list(name: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let defaults = Config::default();
    let config = Config {
        bind: std::env::var("SCRIBE_BIND").unwrap_or(defaults.bind),
        public_url: std::env::var("SCRIBE_PUBLIC_URL").ok(),
        store: std::env::var("SCRIBE_STORE").unwrap_or(defaults.store),
        tokens: list("SCRIBE_TOKENS")
            .into_iter()
            .filter_map(|pair| {
                let (token, name) = pair.split_once('=')?;
                Some((token.to_owned(), name.to_owned()))
            })
            .collect(),
        webhooks: list("SCRIBE_ALLOW_WEBHOOKS_TO")
            .iter()
            .try_fold(WebhookPolicy::new(), |policy, entry| policy.allow(entry))?,
    };
    let server = server(&config).await?;
    println!("Scribe serving on {}", server.local_addr());
    server.serve().await?;
    Ok(())
}
