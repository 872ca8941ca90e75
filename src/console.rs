//! `trident console [AGENT]`: a web page to see, talk to and test any A2A agent (issue 26).
//!
//! The console is a small server on a loopback address: it serves one hand-written page
//! (HTML, CSS and JavaScript embedded in the binary, [`assets`]) and a JSON API under
//! `/api/` ([`api`]) through which the page reads the agent's card and makes its calls. The
//! calls to the agent are made here, with the client commands' card resolution and client
//! ([`crate::client`]), so every binding the card offers works from the browser (gRPC
//! included) and the agent needs no CORS. Credentials typed into the page come with each
//! API request and are forgotten when it is answered: nothing is stored or logged.
//!
//! The console's server is also a push-notification receiver ([`push`]): the page configures a
//! webhook of the console's on a task (`/hooks/{id}` with a random token) and watches the
//! deliveries arrive, with their headers (secrets masked); they are kept in memory, bounded.
//!
//! Beside the card, the talk and the tasks, the page runs `trident conformance` against the agent
//! ([`conformance`], each case's result streamed as it finishes) and makes one call over each
//! binding the card offers to show where the answers differ ([`compare`]).

use std::net::SocketAddr;
use std::process::ExitCode;

mod api;
mod assets;
mod compare;
mod conformance;
mod push;
mod wire;

#[cfg(test)]
mod tests;

/// `console`
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// The agent to point the page at: a host, an origin or a card URL (as the client
    /// commands' -a). Without it, the page asks for one.
    #[arg(value_name = "AGENT")]
    pub(crate) agent: Option<String>,
    /// Where to serve the console (a loopback address unless --allow-remote; port 0 picks a
    /// free one).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub(crate) listen: SocketAddr,
    /// Serve on a non-loopback address too. Whoever reaches it can make the console call
    /// agents from this machine: use it only on a network you trust.
    #[arg(long)]
    pub(crate) allow_remote: bool,
}

/// Why the console could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConsoleError {
    /// `--listen` names an address others can reach, without `--allow-remote`.
    #[error(
        "--listen {0}: not a loopback address; the console calls agents for whoever reaches \
         it, so it serves on loopback only (pass --allow-remote to serve there anyway)"
    )]
    NotLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Serving stopped on an error.
    #[error("the console stopped: {0}")]
    Serve(std::io::Error),
}

/// Refuses a non-loopback `--listen` unless `--allow-remote`.
pub(crate) fn check_listen(args: &Args) -> Result<(), ConsoleError> {
    if args.listen.ip().is_loopback() || args.allow_remote {
        Ok(())
    } else {
        Err(ConsoleError::NotLoopback(args.listen))
    }
}

/// Runs `trident console`: prints the page's URL and serves until stopped.
pub(crate) async fn run(args: Args) -> ExitCode {
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ ConsoleError::NotLoopback(_)) => {
            eprintln!("trident console: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("trident console: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The API calls of the sections beside the card, Talk, Tasks and Push: conformance and the
/// bindings side by side (at `api/NAME`).
const EXTRA: &[(&str, api::Extra)] = &[
    ("conformance", conformance::answer),
    ("compare/get", compare::get),
    ("compare/list", compare::list),
    ("compare/send", compare::send),
];

async fn serve(args: Args) -> Result<(), ConsoleError> {
    check_listen(&args)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| ConsoleError::Bind {
            addr: args.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ConsoleError::Bind {
        addr: args.listen,
        source,
    })?;
    let router = api::router(
        api::State {
            preset: args.agent.clone(),
            allow_remote: args.allow_remote,
            served: None,
            hooks: std::sync::Arc::new(push::Hooks::new(format!("{}hooks/", page_url(addr)))),
        },
        EXTRA,
    );
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        // A line a script can read; nothing is opened.
        let _ = writeln!(out, "  console  {}", page_url(addr)).and_then(|()| out.flush());
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ConsoleError::Serve)
}

/// `trident serve --console`: the console beside the agent being served, at
/// [`/console/`](api::SERVED_PREFIX). Returns the page's public routes and the API's (to go
/// behind the server's authentication), and where to put the agent's card URL once the server
/// is bound: the console talks to that agent alone.
pub(crate) fn served() -> (axum::Router, axum::Router, Served) {
    let agent = std::sync::Arc::new(std::sync::OnceLock::new());
    let hooks = std::sync::Arc::new(push::Hooks::unbound());
    let (page, api) = api::routes(
        api::State {
            preset: None,
            allow_remote: false,
            served: Some(agent.clone()),
            hooks: hooks.clone(),
        },
        api::SERVED_PREFIX,
        EXTRA,
    );
    (page, api, Served { agent, hooks })
}

/// The console beside a served agent, until its server is bound.
pub(crate) struct Served {
    agent: std::sync::Arc<std::sync::OnceLock<String>>,
    hooks: std::sync::Arc<push::Hooks>,
}

impl Served {
    /// The server is bound to `addr`: the console calls the agent there (a wildcard address is
    /// reached on loopback), and its webhooks are there. Returns the page's URL.
    pub(crate) fn bound(&self, addr: SocketAddr) -> String {
        let origin = page_url(addr);
        let origin = origin.trim_end_matches('/');
        let _ = self.agent.set(format!("{origin}{}", trident::CARD_PATH));
        self.hooks
            .bind(format!("{origin}{}/hooks/", api::SERVED_PREFIX));
        format!("{origin}{}/", api::SERVED_PREFIX)
    }
}

/// The page's URL at `addr` (an unspecified address is reached on loopback).
pub(crate) fn page_url(addr: SocketAddr) -> String {
    let mut shown = addr;
    if shown.ip().is_unspecified() {
        shown.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    format!("http://{shown}/")
}
