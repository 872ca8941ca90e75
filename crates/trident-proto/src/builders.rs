//! Builders for what users construct: chained `with_*` methods on the generated types
//! themselves (no twin structs), and [`AgentCardBuilder`], which holds an [`AgentCard`] and
//! fills it in.
//!
//! ```
//! use trident_proto::{AgentCard, AgentSkill, Artifact, Message, Part, SecurityScheme};
//!
//! let report = Part::file(b"%PDF-1.7".to_vec(), "application/pdf", "report.pdf");
//! assert_eq!((report.filename.as_str(), report.media_type.as_str()), ("report.pdf", "application/pdf"));
//!
//! let message = Message::user("m-1", vec![Part::text("summarise this"), report])
//!     .with_context_id("ctx-1")
//!     .with_reference_task_ids(["t-0"]);
//! let artifact = Artifact::new("summary", vec![Part::text("…")]).with_name("Summary");
//!
//! let card = AgentCard::builder("Summariser", "Summarises documents")
//!     .version("2.1.0")
//!     .skill(AgentSkill::new("summarise", "Summarise", "Summarises a document").with_tags(["pdf"]))
//!     .input_modes(["text/plain", "application/pdf"])
//!     .security_scheme("bearer", SecurityScheme::bearer("JWT"))
//!     .require(["bearer"])
//!     .push_notifications(false)
//!     .build();
//! assert_eq!(card.skills[0].id, "summarise");
//! # let _ = (message, artifact);
//! ```

use crate::lf::a2a::v1::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    ApiKeySecurityScheme, Artifact, HttpAuthSecurityScheme, Message, Part, SecurityRequirement,
    SecurityScheme, StringList, security_scheme,
};
use crate::wkt::Struct;

/// A JSON object as a `google.protobuf.Struct` (anything else: an empty one).
fn metadata(value: serde_json::Value) -> Struct {
    match value {
        serde_json::Value::Object(map) => Struct::from_json(map),
        _ => Struct::default(),
    }
}

impl Part {
    /// A part holding inline bytes with their media type and file name, in one call.
    pub fn file(
        bytes: impl Into<Vec<u8>>,
        media_type: impl Into<String>,
        filename: impl Into<String>,
    ) -> Self {
        Self::raw(bytes, media_type).with_filename(filename)
    }

    /// A part referring to a file by URL, with its media type and file name.
    pub fn file_url(
        url: impl Into<String>,
        media_type: impl Into<String>,
        filename: impl Into<String>,
    ) -> Self {
        Self::url(url)
            .with_media_type(media_type)
            .with_filename(filename)
    }

    /// This part with `filename`.
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = filename.into();
        self
    }

    /// This part with `media_type` (e.g. `application/json` on a data part).
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = media_type.into();
        self
    }

    /// This part with `metadata` (a JSON object; anything else clears it).
    pub fn with_metadata(mut self, metadata_: serde_json::Value) -> Self {
        self.metadata = Some(metadata(metadata_));
        self
    }
}

impl Message {
    /// This message in the context `context_id`.
    pub fn with_context_id(mut self, context_id: impl Into<String>) -> Self {
        self.context_id = context_id.into();
        self
    }

    /// This message as a follow-up to the task `task_id`.
    pub fn with_task_id(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = task_id.into();
        self
    }

    /// This message with one more part.
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// This message with `metadata` (a JSON object; anything else clears it).
    pub fn with_metadata(mut self, metadata_: serde_json::Value) -> Self {
        self.metadata = Some(metadata(metadata_));
        self
    }

    /// This message with the URIs of the extensions it uses.
    pub fn with_extensions<S: Into<String>>(mut self, uris: impl IntoIterator<Item = S>) -> Self {
        self.extensions.extend(uris.into_iter().map(Into::into));
        self
    }

    /// This message referring to other tasks.
    pub fn with_reference_task_ids<S: Into<String>>(
        mut self,
        ids: impl IntoIterator<Item = S>,
    ) -> Self {
        self.reference_task_ids
            .extend(ids.into_iter().map(Into::into));
        self
    }
}

impl Artifact {
    /// This artifact with a human-readable `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// This artifact with a `description`.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// This artifact with one more part.
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// This artifact with `metadata` (a JSON object; anything else clears it).
    pub fn with_metadata(mut self, metadata_: serde_json::Value) -> Self {
        self.metadata = Some(metadata(metadata_));
        self
    }

    /// This artifact with the URIs of the extensions it uses.
    pub fn with_extensions<S: Into<String>>(mut self, uris: impl IntoIterator<Item = S>) -> Self {
        self.extensions.extend(uris.into_iter().map(Into::into));
        self
    }
}

impl AgentSkill {
    /// A skill with its id, name and description.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            ..Default::default()
        }
    }

    /// This skill with `tags` added.
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// This skill with example prompts added.
    pub fn with_examples<S: Into<String>>(mut self, examples: impl IntoIterator<Item = S>) -> Self {
        self.examples.extend(examples.into_iter().map(Into::into));
        self
    }

    /// This skill accepting these media types (instead of the card's defaults).
    pub fn with_input_modes<S: Into<String>>(mut self, modes: impl IntoIterator<Item = S>) -> Self {
        self.input_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// This skill producing these media types (instead of the card's defaults).
    pub fn with_output_modes<S: Into<String>>(
        mut self,
        modes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.output_modes = modes.into_iter().map(Into::into).collect();
        self
    }
}

impl SecurityScheme {
    /// HTTP `Authorization: Bearer …`, with a hint of the token format (e.g. `JWT`; may be
    /// empty).
    pub fn bearer(bearer_format: impl Into<String>) -> Self {
        Self::http("bearer", bearer_format)
    }

    /// HTTP authentication with `scheme` (`bearer`, `basic`, …).
    pub fn http(scheme: impl Into<String>, bearer_format: impl Into<String>) -> Self {
        Self {
            scheme: Some(security_scheme::Scheme::HttpAuthSecurityScheme(
                HttpAuthSecurityScheme {
                    description: String::new(),
                    scheme: scheme.into(),
                    bearer_format: bearer_format.into(),
                },
            )),
        }
    }

    /// An API key in the header `name`.
    pub fn api_key_header(name: impl Into<String>) -> Self {
        Self {
            scheme: Some(security_scheme::Scheme::ApiKeySecurityScheme(
                ApiKeySecurityScheme {
                    description: String::new(),
                    location: "header".to_owned(),
                    name: name.into(),
                },
            )),
        }
    }
}

impl AgentCard {
    /// A card built step by step; see [`AgentCardBuilder`].
    pub fn builder(name: impl Into<String>, description: impl Into<String>) -> AgentCardBuilder {
        AgentCardBuilder::new(name, description)
    }
}

/// Builds an [`AgentCard`]. Starts with version `1.0.0`, streaming and push notifications
/// on, no extended card, `text/plain` in and out; a card built without any skill gets one
/// named after the agent (the spec requires at least one). A server fills in the interfaces
/// from where it listens unless [`interface`](Self::interface) gives them.
#[derive(Debug, Clone)]
#[must_use = "call build() for the card"]
pub struct AgentCardBuilder {
    card: AgentCard,
}

impl AgentCardBuilder {
    fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            card: AgentCard {
                name: name.into(),
                description: description.into(),
                version: "1.0.0".to_owned(),
                capabilities: Some(AgentCapabilities {
                    streaming: Some(true),
                    push_notifications: Some(true),
                    extended_agent_card: Some(false),
                    extensions: Vec::new(),
                }),
                default_input_modes: vec!["text/plain".to_owned()],
                default_output_modes: vec!["text/plain".to_owned()],
                ..Default::default()
            },
        }
    }

    fn capabilities(&mut self) -> &mut AgentCapabilities {
        self.card.capabilities.get_or_insert_with(Default::default)
    }

    /// The agent's version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.card.version = version.into();
        self
    }

    /// Who provides the agent.
    pub fn provider(mut self, organization: impl Into<String>, url: impl Into<String>) -> Self {
        self.card.provider = Some(AgentProvider {
            organization: organization.into(),
            url: url.into(),
        });
        self
    }

    /// Where its documentation is.
    pub fn documentation_url(mut self, url: impl Into<String>) -> Self {
        self.card.documentation_url = Some(url.into());
        self
    }

    /// Its icon.
    pub fn icon_url(mut self, url: impl Into<String>) -> Self {
        self.card.icon_url = Some(url.into());
        self
    }

    /// One more skill.
    pub fn skill(mut self, skill: AgentSkill) -> Self {
        self.card.skills.push(skill);
        self
    }

    /// The media types it accepts by default.
    pub fn input_modes<S: Into<String>>(mut self, modes: impl IntoIterator<Item = S>) -> Self {
        self.card.default_input_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// The media types it produces by default.
    pub fn output_modes<S: Into<String>>(mut self, modes: impl IntoIterator<Item = S>) -> Self {
        self.card.default_output_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether it streams (SendStreamingMessage, SubscribeToTask).
    pub fn streaming(mut self, on: bool) -> Self {
        self.capabilities().streaming = Some(on);
        self
    }

    /// Whether it sends push notifications.
    pub fn push_notifications(mut self, on: bool) -> Self {
        self.capabilities().push_notifications = Some(on);
        self
    }

    /// Whether authenticated callers get an extended card (GetExtendedAgentCard).
    pub fn extended_agent_card(mut self, on: bool) -> Self {
        self.capabilities().extended_agent_card = Some(on);
        self
    }

    /// One more extension it supports.
    pub fn extension(mut self, extension: AgentExtension) -> Self {
        self.capabilities().extensions.push(extension);
        self
    }

    /// A security scheme, by the name requirements refer to it.
    pub fn security_scheme(mut self, name: impl Into<String>, scheme: SecurityScheme) -> Self {
        self.card.security_schemes.insert(name.into(), scheme);
        self
    }

    /// One more accepted way to authenticate: all of these schemes together (the card's
    /// requirements are alternatives).
    pub fn require<S: Into<String>>(mut self, schemes: impl IntoIterator<Item = S>) -> Self {
        self.card.security_requirements.push(SecurityRequirement {
            schemes: schemes
                .into_iter()
                .map(|s| (s.into(), StringList { list: Vec::new() }))
                .collect(),
        });
        self
    }

    /// One more interface (URL, `protocol_binding` `JSONRPC`, `GRPC` or `HTTP+JSON`),
    /// speaking A2A 1.0. Given interfaces are served as they are.
    pub fn interface(
        mut self,
        url: impl Into<String>,
        protocol_binding: impl Into<String>,
    ) -> Self {
        self.card.supported_interfaces.push(AgentInterface {
            url: url.into(),
            protocol_binding: protocol_binding.into(),
            tenant: String::new(),
            protocol_version: "1.0".to_owned(),
        });
        self
    }

    /// The card.
    pub fn build(mut self) -> AgentCard {
        if self.card.skills.is_empty() {
            let skill = AgentSkill::new("default", &self.card.name, &self.card.description);
            self.card.skills.push(skill);
        }
        self.card
    }
}
