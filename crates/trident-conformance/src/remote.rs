//! [`Remote`]: the cases against an agent somebody else runs, over one binding of its card.

use std::collections::HashMap;
use std::sync::Arc;

use trident_client::Binding;
use trident_proto as pb;

use crate::{Fixture, Skip, Target, Variant, Wire};

/// An agent at a URL, reached over one binding its card declares.
///
/// Every fixture gets a client of its own, sending the interface's `tenant` exactly as the card
/// declares it (none when it declares none: spec, "tenant"); cases that count tasks count only
/// those in a context of their own, so they hold on a server that other cases (and other
/// people) use at the same time. The server cannot be rebuilt: a [`Variant`] is provided only
/// when the card already says so (streaming or push notifications off), and every other
/// variant is a [`Skip`].
#[derive(Debug, Clone)]
pub struct Remote {
    card: pb::AgentCard,
    binding: Binding,
    interface: pb::AgentInterface,
    tokens: Arc<HashMap<String, String>>,
    card_url: String,
    script: Arc<tokio::sync::OnceCell<Result<(), Skip>>>,
}

impl Remote {
    /// The agent whose card is `card`, over `binding`; `None` when the card does not declare
    /// that binding for A2A 1.x. `card_url` is where the card was read; `tokens` maps
    /// principal names to `Authorization` values.
    pub fn new(
        card: pb::AgentCard,
        card_url: &str,
        binding: Binding,
        tokens: Arc<HashMap<String, String>>,
    ) -> Option<Self> {
        let (binding, interface) = trident_client::choose(&card, &[binding])?;
        Some(Self {
            card,
            binding,
            interface,
            tokens,
            card_url: card_url.to_owned(),
            script: Arc::default(),
        })
    }

    /// The binding.
    pub fn binding(&self) -> Binding {
        self.binding
    }

    /// The variant the card says this server is (only the capability switches a card shows).
    fn variant(&self) -> Variant {
        let caps = self.card.capabilities.clone().unwrap_or_default();
        Variant {
            no_push: caps.push_notifications != Some(true),
            no_streaming: caps.streaming != Some(true),
            ..Default::default()
        }
    }
}

impl Remote {
    /// `Ok` when the agent offers the A2A 1.1 preview on this binding: its card, asked for
    /// with `A2A-Version: 1.1`, lists an interface of this binding with `protocolVersion`
    /// 1.1 (an agent that merely admits `A2A-Version: 1.1`, as a2a-sdk's does any 1.x, does
    /// not offer the preview's semantics).
    async fn offers_preview(&self) -> Result<(), Skip> {
        let answer = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(15))
            .build()
            .map_err(|e| Skip::new(format!("an HTTP client: {e}")))?
            .get(&self.card_url)
            .header("a2a-version", trident_core::PREVIEW_VERSION)
            .send()
            .await;
        let body = match answer {
            Ok(r) if r.status().is_success() => r.bytes().await.ok(),
            _ => None,
        };
        let card = body.and_then(|b| trident_client::read_card(&b).ok());
        match card {
            Some(card) if trident_client::preview_interface(&card, self.binding).is_some() => {
                Ok(())
            }
            _ => Err(Skip::new(format!(
                "the agent does not offer the A2A 1.1 preview: its card, asked for with \
                 A2A-Version 1.1, lists no {} interface of protocolVersion 1.1",
                self.binding.card_name()
            ))),
        }
    }
}

#[async_trait::async_trait]
impl Target for Remote {
    async fn fixture(&self, variant: Variant) -> Result<Fixture, Skip> {
        // The preview is not a card capability: whether the agent offers it is asked below.
        let preview = variant.preview;
        let variant = Variant {
            preview: false,
            ..variant
        };
        if variant != Variant::default() && variant != self.variant() {
            return Err(Skip::new(format!(
                "needs a server built with {}",
                variant.describe()
            )));
        }
        let svc = trident_client::client(self.binding, &self.interface)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "cannot connect over {} to {}: {e}",
                    self.binding.card_name(),
                    self.interface.url
                )
            });
        if preview {
            self.offers_preview().await?;
            crate::cases::preview::admits_v1_1(&*svc).await?;
        }
        Ok(Fixture::of(svc)
            .with_card(self.card.clone())
            .with_tokens(self.tokens.clone())
            .with_wire(Wire {
                binding: self.binding,
                interface: self.interface.clone(),
                card_url: self.card_url.clone(),
                card: self.card.clone(),
            }))
    }

    async fn scripted(&self) -> Result<(), Skip> {
        self.script
            .get_or_init(|| async {
                let f = self.fixture(Variant::default()).await?;
                crate::helpers::probe_script(&*f.svc).await
            })
            .await
            .clone()
    }
}
