//! The sections of the A2A v1.0 specification a case cites ([`Case::spec`](crate::Case::spec)),
//! numbered and titled as the project's digest of the specification numbers them (the digest
//! Trident is implemented from: `A2A-V1-DIGEST.md`, a restatement of `a2aproject/A2A`'s
//! `docs/specification.md` and `specification/a2a.proto`, at its commit `16ba526`, v1.0.1
//! plus editorial changes). The digest groups the rules by binding (§3–§5), cross-cutting
//! headers (§6), card (§7) and server behaviour (§8) rather than in the specification's own
//! order, so its numbers are not the specification's: its §8.2 restates the specification's
//! §3.1.1–§3.1.2, for instance. `tests/it/tidy.rs` checks this table against the digest's
//! headings when the digest is at hand.

/// One section of the digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// Its number: `"8.4"`, or `"A"` for Appendix A.
    pub number: &'static str,
    /// Its heading, without the number (and without the digest's `[SPEC]` markers).
    pub title: &'static str,
}

impl Section {
    const fn new(number: &'static str, title: &'static str) -> Self {
        Self { number, title }
    }

    /// `§8.4`, or `Appendix A`.
    pub fn label(&self) -> String {
        if self.number.starts_with(|c: char| c.is_ascii_digit()) {
            format!("§{}", self.number)
        } else {
            format!("Appendix {}", self.number)
        }
    }
}

/// Every numbered section of the digest, in its order.
pub const SECTIONS: &[Section] = &[
    Section::new("1", "Protocol Buffers schema (specification/a2a.proto)"),
    Section::new("1.1", "File header"),
    Section::new("1.2", "Well-known / Google types used"),
    Section::new("1.3", "Service A2AService — RPCs and HTTP annotations"),
    Section::new("1.4", "Enums"),
    Section::new("1.5", "Messages"),
    Section::new("1.5.1", "Core objects"),
    Section::new("1.5.2", "Streaming events"),
    Section::new("1.5.3", "Push-notification objects"),
    Section::new("1.5.4", "Agent discovery objects"),
    Section::new("1.5.5", "Security objects"),
    Section::new("1.5.6", "Request and response messages"),
    Section::new(
        "2",
        "JSON mapping (applies to JSON-RPC, HTTP+JSON, push-notification bodies, and the Agent Card)",
    ),
    Section::new("2.1", "Field names"),
    Section::new("2.2", "Enums"),
    Section::new("2.3", "Oneofs (no kind discriminators anywhere)"),
    Section::new("2.4", "Presence, defaults and optional"),
    Section::new("2.5", "Scalar and well-known type encodings"),
    Section::new("2.6", "Metadata"),
    Section::new("3", "JSON-RPC 2.0 binding"),
    Section::new("3.1", "Transport basics"),
    Section::new("3.2", "Methods"),
    Section::new("3.3", "Streaming over SSE"),
    Section::new("3.4", "Error object"),
    Section::new("4", "HTTP+JSON (REST) binding"),
    Section::new("4.1", "Basics"),
    Section::new("4.2", "Routes"),
    Section::new("4.3", "Query parameters"),
    Section::new("4.4", "Error responses"),
    Section::new("4.5", "Streaming (SSE)"),
    Section::new("5", "gRPC binding"),
    Section::new("5.1", "Basics"),
    Section::new("5.2", "Metadata (service parameters)"),
    Section::new("5.3", "Errors"),
    Section::new(
        "6",
        "Service parameters, versioning, extensions, authentication, tenancy",
    ),
    Section::new("6.1", "Service parameters"),
    Section::new("6.2", "Version negotiation"),
    Section::new("6.3", "Extensions"),
    Section::new("6.4", "Authentication and authorization"),
    Section::new("6.5", "tenant"),
    Section::new("7", "Agent Card"),
    Section::new("7.1", "Discovery"),
    Section::new("7.2", "Fields (JSON names; see §1.5.4 for numbers)"),
    Section::new("7.3", "Extended Agent Card"),
    Section::new("7.4", "Card signing (JWS + JCS)"),
    Section::new("8", "Behaviour the server must implement"),
    Section::new("8.1", "Task lifecycle"),
    Section::new("8.2", "Send Message / Send Streaming Message"),
    Section::new(
        "8.3",
        "Blocking vs returnImmediately (non-streaming SendMessage)",
    ),
    Section::new("8.4", "Streams (SendStreamingMessage and SubscribeToTask)"),
    Section::new("8.5", "Artifact updates"),
    Section::new("8.6", "historyLength"),
    Section::new("8.7", "ListTasks"),
    Section::new("8.8", "CancelTask"),
    Section::new("8.9", "Authorization scoping"),
    Section::new("8.10", "Capability checks"),
    Section::new("8.11", "Push notifications"),
    Section::new("8.12", "Multi-turn patterns"),
    Section::new("9", "v0.3 → v1.0: traps when reading older material"),
    Section::new(
        "10",
        "Inconsistencies, stale text and open questions (as of the commit read)",
    ),
    Section::new("A", "One-table error reference"),
    Section::new("B", "End-to-end examples (ours)"),
];

/// The section numbered `number`, if the digest has one.
pub fn section(number: &str) -> Option<&'static Section> {
    SECTIONS.iter().find(|s| s.number == number)
}

/// The label of each section `numbers` names (`§8.4`; a number without a section as itself),
/// joined by `, `: how the reports print a case's references.
pub fn labels(numbers: &[&str]) -> String {
    numbers
        .iter()
        .map(|n| section(n).map_or_else(|| (*n).to_owned(), Section::label))
        .collect::<Vec<_>>()
        .join(", ")
}
