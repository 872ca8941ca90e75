//! [`Remote`]: the cases against an agent somebody else runs, over one binding of its card.

use std::collections::HashMap;
use std::sync::Arc;

use trident_client::Binding;
use trident_proto as pb;

use crate::{Fixture, Skip, Target, Variant};

/// An agent at a URL, reached over one binding its card declares.
///
/// Every fixture gets a client of its own addressing a fresh tenant (`conformance-<uuid>`)
/// unless the card's interface names one, so cases that count tasks see only their own on a
/// server that other cases (and other people) use at the same time. The server cannot be
/// rebuilt: a [`Variant`] is provided only when the card already says so (streaming or push
/// notifications off), and every other variant is a [`Skip`].
#[derive(Debug, Clone)]
pub struct Remote {
    card: pb::AgentCard,
    binding: Binding,
    interface: pb::AgentInterface,
    tokens: Arc<HashMap<String, String>>,
}

impl Remote {
    /// The agent whose card is `card`, over `binding`; `None` when the card does not declare
    /// that binding for A2A 1.x. `tokens` maps principal names to `Authorization` values.
    pub fn new(
        card: pb::AgentCard,
        binding: Binding,
        tokens: Arc<HashMap<String, String>>,
    ) -> Option<Self> {
        let (binding, interface) = trident_client::choose(&card, &[binding])?;
        Some(Self {
            card,
            binding,
            interface,
            tokens,
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

#[async_trait::async_trait]
impl Target for Remote {
    async fn fixture(&self, variant: Variant) -> Result<Fixture, Skip> {
        if variant != Variant::default() && variant != self.variant() {
            return Err(Skip::new(format!(
                "needs a server built with {}",
                variant.describe()
            )));
        }
        let mut interface = self.interface.clone();
        if interface.tenant.is_empty() {
            interface.tenant = format!("conformance-{}", uuid::Uuid::new_v4().simple());
        }
        let svc = trident_client::client(self.binding, &interface)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "cannot connect over {} to {}: {e}",
                    self.binding.card_name(),
                    interface.url
                )
            });
        Ok(Fixture::of(svc)
            .with_card(self.card.clone())
            .with_tokens(self.tokens.clone()))
    }
}
