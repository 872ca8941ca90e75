//! The process's `tracing` subscriber: logs to stderr, and in a build with the `otlp` feature
//! the spans of `serve` and `gateway` to an OTLP collector (`--otlp-endpoint`).

/// What must be flushed before the process exits.
pub(crate) struct Telemetry {
    #[cfg(feature = "otlp")]
    traces: Option<trident_server::otlp::Traces>,
}

impl Telemetry {
    /// Sends the spans still buffered.
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otlp")]
        if let Some(traces) = self.traces {
            traces.shutdown();
        }
    }
}

/// Installs the subscriber: logs at `default_level` unless `RUST_LOG` says otherwise, and
/// with `otlp` (the endpoint, and whether a flag asked for it) the spans exported there.
/// Call it inside the Tokio runtime.
pub(crate) fn init(default_level: &str, otlp: Option<(String, bool)>) -> Result<Telemetry, String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_level.into());
    // Colour only for a person at a terminal: a pipe or a log file gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    #[cfg(feature = "otlp")]
    if let Some((endpoint, _)) = otlp {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let (traces, layer) = trident_server::otlp::traces(&endpoint).map_err(|e| e.to_string())?;
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(ansi)
                    .with_filter(filter),
            )
            // The spans of calls (info), whatever RUST_LOG asks of the logs.
            .with(layer.with_filter(tracing_subscriber::filter::LevelFilter::INFO))
            .init();
        return Ok(Telemetry {
            traces: Some(traces),
        });
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_env_filter(filter)
        .init();
    #[cfg(not(feature = "otlp"))]
    match otlp {
        Some((_, true)) => {
            return Err(
                "--otlp-endpoint: this trident was built without OTLP export \
                        (cargo feature `otlp`)"
                    .into(),
            );
        }
        Some((endpoint, false)) => tracing::warn!(
            %endpoint,
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but this trident was built without OTLP \
             export (cargo feature `otlp`): nothing is exported"
        ),
        None => {}
    }
    Ok(Telemetry {
        #[cfg(feature = "otlp")]
        traces: None,
    })
}
