//! The agent card endpoint: three interfaces, caching headers, conditional GET, and a client
//! that picks a binding from it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Fixture, Transport, cx, send_task};
use trident_client::Binding;
use trident_proto as pb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_lists_three_interfaces_and_supports_conditional_get() {
    let f = Fixture::default(Transport::Rest).await;
    let interfaces = f.interfaces.clone().expect("server");
    let url = format!("{}/.well-known/agent-card.json", interfaces.rest);
    let http = reqwest::Client::new();
    let response = http.get(&url).send().await.expect("card");
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/json");
    assert!(
        headers["cache-control"]
            .to_str()
            .expect("ascii")
            .contains("max-age=")
    );
    let etag = headers["etag"].clone();
    let last_modified = headers["last-modified"].clone();
    let card: pb::AgentCard =
        serde_json::from_slice(&response.bytes().await.expect("body")).expect("card JSON");
    let bindings: Vec<_> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            (
                i.protocol_binding.as_str(),
                i.url.as_str(),
                i.protocol_version.as_str(),
            )
        })
        .collect();
    assert_eq!(
        bindings,
        [
            ("JSONRPC", interfaces.jsonrpc.as_str(), "1.0"),
            ("HTTP+JSON", interfaces.rest.as_str(), "1.0"),
            ("GRPC", interfaces.grpc.as_str(), "1.0"),
            // The v0.3 twins (`--protocols 1.0,0.3`, the default): same URLs.
            ("JSONRPC", interfaces.jsonrpc.as_str(), "0.3"),
            ("HTTP+JSON", interfaces.rest.as_str(), "0.3"),
            ("GRPC", interfaces.grpc.as_str(), "0.3"),
        ]
    );
    assert!(
        !interfaces.grpc.contains("://"),
        "gRPC url is bare host:port"
    );
    let caps = card.capabilities.as_ref().expect("capabilities");
    assert_eq!(
        (caps.streaming, caps.push_notifications),
        (Some(true), Some(true))
    );

    let again = http
        .get(&url)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .expect("conditional");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag);
    let since = http
        .get(&url)
        .header("if-modified-since", last_modified)
        .send()
        .await
        .expect("conditional");
    assert_eq!(since.status(), 304);
    let changed = http
        .get(&url)
        .header("if-none-match", "\"other\"")
        .send()
        .await
        .expect("conditional");
    assert_eq!(changed.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reads_the_card_and_connects_over_each_preferred_binding() {
    let f = Fixture::default(Transport::Rest).await;
    let origin = f.interfaces.clone().expect("server").rest;
    for binding in Binding::ALL {
        let agent = trident_client::connect(&origin, &[binding])
            .await
            .expect("connect");
        assert_eq!(agent.binding, binding);
        assert_eq!(agent.interface.protocol_binding, binding.card_name());
        let task = send_task(&*agent.service, &cx(), "hello").await;
        assert_eq!(task.state(), pb::TaskState::Completed, "{binding:?}");
    }
    let default = trident_client::connect(&origin, &[])
        .await
        .expect("connect");
    assert_eq!(
        default.binding,
        Binding::JsonRpc,
        "no preference: the card's order decides among all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_can_have_a_listener_of_its_own() {
    use trident_server::{Bindings, ServerOptions};
    let engine = trident_engine::Engine::builder(Arc::new(trident_testkit::agents::Demo)).build();
    let svc: Arc<dyn trident_core::A2aService> = Arc::new(engine);
    let http = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let mut interfaces = trident_server::Interfaces::local(http.local_addr().expect("addr"));
    interfaces.grpc = grpc.local_addr().expect("addr").to_string();
    let card = trident_server::card_with_interfaces(
        trident_core::default_card("Split", "Split listeners"),
        &interfaces,
    );
    let http_app = trident_server::app(
        svc.clone(),
        &card,
        &ServerOptions {
            bindings: Bindings::HTTP,
            ..Default::default()
        },
    )
    .expect("app");
    let grpc_app = trident_server::app(
        svc,
        &card,
        &ServerOptions {
            bindings: Bindings::GRPC,
            ..Default::default()
        },
    )
    .expect("app");
    let servers = [
        tokio::spawn(async move {
            let _ = trident_server::serve(
                http,
                http_app,
                std::future::pending(),
                std::time::Duration::ZERO,
            )
            .await;
        }),
        tokio::spawn(async move {
            let _ = trident_server::serve(
                grpc,
                grpc_app,
                std::future::pending(),
                std::time::Duration::ZERO,
            )
            .await;
        }),
    ];
    for binding in Binding::ALL {
        let agent = trident_client::connect(&interfaces.rest, &[binding])
            .await
            .expect("connect");
        let task = send_task(&*agent.service, &cx(), "hello").await;
        assert_eq!(task.state(), pb::TaskState::Completed, "{binding:?}");
    }
    // Each listener serves only its bindings.
    let http_port_grpc = trident_grpc::GrpcClient::connect(&interfaces.rest.replace("http://", ""))
        .await
        .expect("h2c connects");
    assert!(
        send_task_result(&http_port_grpc).await.is_err(),
        "no gRPC on the HTTP listener"
    );
    let card_on_grpc = reqwest::get(format!(
        "http://{}/.well-known/agent-card.json",
        interfaces.grpc
    ))
    .await
    .expect("http");
    assert_eq!(card_on_grpc.status(), 404, "no card on the gRPC listener");
    for s in servers {
        s.abort();
    }
}

async fn send_task_result(
    svc: &dyn trident_core::A2aService,
) -> Result<pb::SendMessageResponse, trident_core::A2aError> {
    svc.send_message(&cx(), crate::harness::req(crate::harness::msg("hello")))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activated_extensions_are_echoed_on_every_binding() {
    const GEO: &str = "https://example.com/ext/geo/v1";
    let mut card = trident_core::default_card("Ext", "Declares one extension");
    card.capabilities
        .get_or_insert_with(Default::default)
        .extensions
        .push(pb::AgentExtension {
            uri: GEO.into(),
            ..Default::default()
        });
    let engine = trident_engine::Engine::builder(Arc::new(trident_testkit::agents::Demo))
        .card(card)
        .build();
    let (interfaces, server) = crate::harness::spawn_server(engine).await;
    let http = reqwest::Client::new();
    let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let rest = http
        .post(format!("{}/message:send", interfaces.rest))
        .header("content-type", "application/json")
        .header(
            "a2a-extensions",
            format!("https://unknown.example/x, {GEO}"),
        )
        .body(body)
        .send()
        .await
        .expect("rest");
    assert_eq!(rest.status(), 200);
    assert_eq!(
        rest.headers()["a2a-extensions"],
        GEO,
        "only declared extensions are activated"
    );
    let plain = http
        .post(format!("{}/message:send", interfaces.rest))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("rest");
    assert!(plain.headers().get("a2a-extensions").is_none());
    let mut grpc = trident_grpc::GrpcClient::connect(&interfaces.grpc)
        .await
        .expect("grpc")
        .raw();
    let mut request = tonic::Request::new(crate::harness::req(crate::harness::msg("hi")));
    request
        .metadata_mut()
        .insert("a2a-extensions", GEO.parse().expect("ascii"));
    let response = grpc.send_message(request).await.expect("grpc");
    assert_eq!(
        response
            .metadata()
            .get("a2a-extensions")
            .and_then(|v| v.to_str().ok()),
        Some(GEO)
    );
    server.abort();
}

/// GETs `url` with `headers`: the response's headers and its JSON.
async fn get_card(url: &str, headers: &[(&str, &str)]) -> (reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new().get(url);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("card");
    assert_eq!(response.status(), 200, "GET {url} {headers:?}");
    let headers = response.headers().clone();
    let json = response.json().await.expect("card JSON");
    (headers, json)
}

/// Serves `card` (its interfaces those of the listener, then signed with `sign` if given) with
/// the default server options (`--protocols 1.0,0.3`).
async fn serve_card(
    card: pb::AgentCard,
    sign: Option<&trident_security::SigningKey>,
) -> (
    trident_server::Interfaces,
    pb::AgentCard,
    tokio::task::JoinHandle<()>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let interfaces = trident_server::Interfaces::local(listener.local_addr().expect("addr"));
    let mut card = trident_server::card_with_interfaces(card, &interfaces);
    if let Some(key) = sign {
        trident_security::sign_card(&mut card, key);
    }
    let engine = trident_engine::Engine::builder(Arc::new(trident_testkit::agents::Demo))
        .card(card.clone())
        .build();
    let options = trident_server::ServerOptions::default();
    let app = trident_server::app(Arc::new(engine), &card, &options).expect("app");
    let server = tokio::spawn(async move {
        let _ = trident_server::serve(listener, app, std::future::pending(), Duration::ZERO).await;
    });
    (interfaces, card, server)
}

/// A card with a member of every kind a card may have: provider, links, an extension, the
/// extended card, every security scheme kind, requirements on the card and on a skill.
fn rich_card() -> pb::AgentCard {
    use pb::security_scheme::Scheme;
    let mut card = trident_core::default_card("Rich", "Every member a card may have");
    card.provider = Some(pb::AgentProvider {
        url: "https://example.com".into(),
        organization: "Example".into(),
    });
    card.documentation_url = Some("https://example.com/docs".into());
    card.icon_url = Some("https://example.com/icon.png".into());
    let caps = card.capabilities.get_or_insert_with(Default::default);
    caps.extended_agent_card = Some(true);
    caps.extensions.push(pb::AgentExtension {
        uri: "https://example.com/ext/v1".into(),
        description: "an extension".into(),
        required: false,
        params: None,
    });
    let scheme = |s: Scheme| pb::SecurityScheme { scheme: Some(s) };
    let flows = pb::OAuthFlows {
        flow: Some(pb::o_auth_flows::Flow::ClientCredentials(
            pb::ClientCredentialsOAuthFlow {
                token_url: "https://example.com/token".into(),
                refresh_url: String::new(),
                scopes: [("read".to_owned(), "Read tasks".to_owned())].into(),
            },
        )),
    };
    card.security_schemes = [
        (
            "key",
            scheme(Scheme::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
                description: "a key".into(),
                location: "header".into(),
                name: "X-Key".into(),
            })),
        ),
        ("bearer", pb::SecurityScheme::bearer("JWT")),
        (
            "oauth",
            scheme(Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
                description: String::new(),
                flows: Some(flows),
                oauth2_metadata_url: String::new(),
            })),
        ),
        (
            "oidc",
            scheme(Scheme::OpenIdConnectSecurityScheme(
                pb::OpenIdConnectSecurityScheme {
                    description: String::new(),
                    open_id_connect_url: "https://example.com/.well-known/openid-configuration"
                        .into(),
                },
            )),
        ),
        (
            "mtls",
            scheme(Scheme::MtlsSecurityScheme(pb::MutualTlsSecurityScheme {
                description: "client certificates".into(),
            })),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let requirement = |name: &str, scopes: &[&str]| pb::SecurityRequirement {
        schemes: [(
            name.to_owned(),
            pb::StringList {
                list: scopes.iter().map(|s| (*s).to_owned()).collect(),
            },
        )]
        .into(),
    };
    card.security_requirements = vec![requirement("oauth", &["read"]), requirement("key", &[])];
    let skill = &mut card.skills[0];
    skill.examples = vec!["hello".into()];
    skill.input_modes = vec!["text/plain".into()];
    skill.output_modes = vec!["application/json".into()];
    skill.security_requirements = vec![requirement("bearer", &[])];
    card
}

/// The card 1.0 clients get validates against the v1.0 AgentCard schema, generated from our
/// proto as strict as the official one (`additionalProperties: false`): with 0.3 on (the
/// default) it carries no v0.3 member. 1.0 clients say so with `A2A-Version: 1.0` (the
/// official 1.0 SDKs send it on the card fetch too), as a header or as the query parameter a
/// GET may use instead. It still lists the 0.3 twins of the interfaces (an `AgentInterface`
/// with `protocolVersion: "0.3"` is a valid one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_1_0_clients_get_validates_against_the_v1_schema() {
    let schema = crate::schema::of("lf.a2a.v1.AgentCard");
    let f = Fixture::default(Transport::Rest).await;
    let default_origin = f.interfaces.clone().expect("server").rest;
    let (rich_interfaces, _, _server) = serve_card(rich_card(), None).await;
    for origin in [default_origin, rich_interfaces.rest] {
        let url = format!("{origin}/.well-known/agent-card.json");
        for (how, url, headers) in [
            ("header", url.clone(), vec![("a2a-version", "1.0")]),
            ("query", format!("{url}?A2A-Version=1.0"), vec![]),
        ] {
            let (response, card) = get_card(&url, &headers).await;
            assert_eq!(
                crate::schema::violations(&schema, &card),
                Vec::<String>::new(),
                "the card a 1.0 client gets ({how}) fails the v1.0 schema: {card:#}"
            );
            assert_eq!(response["vary"], "A2A-Version", "{how}");
            let versions: Vec<&str> = card["supportedInterfaces"]
                .as_array()
                .expect("interfaces")
                .iter()
                .filter_map(|i| i["protocolVersion"].as_str())
                .collect();
            assert_eq!(
                versions,
                ["1.0", "1.0", "1.0", "0.3", "0.3", "0.3"],
                "{how}"
            );
        }
    }
}

/// A card request without `A2A-Version` (what both official v0.3 clients send: a2a-sdk 0.3.26
/// and @a2a-js/sdk 0.3.14 fetch the card with no version; absent means 0.3, spec §6.2), or
/// with 0.3, gets the card with what v0.3's parsers require: `url` (required by the v0.3
/// model), `preferredTransport`, `additionalInterfaces`, `protocolVersion`, the extended-card
/// flag, `security`, each scheme's v0.3 `type`. Each form has its own ETag, revalidates on
/// its own, and says `Vary: A2A-Version`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_request_without_a_1_0_version_gets_the_v03_members() {
    let (interfaces, _, _server) = serve_card(rich_card(), None).await;
    let url = format!("{}/.well-known/agent-card.json", interfaces.rest);
    let (v1_headers, v1) = get_card(&url, &[("a2a-version", "1.0")]).await;
    for headers in [
        vec![],
        vec![("a2a-version", "0.3")],
        vec![("a2a-version", "")],
    ] {
        let (response, card) = get_card(&url, &headers).await;
        assert_eq!(response["vary"], "A2A-Version", "{headers:?}");
        assert_ne!(response["etag"], v1_headers["etag"], "{headers:?}");
        // The v0.3 model's required members (a2a-sdk 0.3.26 `AgentCard`).
        for member in [
            "name",
            "description",
            "url",
            "version",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ] {
            assert!(card.get(member).is_some(), "{member} missing: {card:#}");
        }
        assert_eq!(card["url"], interfaces.jsonrpc.as_str(), "{card:#}");
        assert_eq!(card["preferredTransport"], "JSONRPC");
        assert_eq!(card["protocolVersion"], "0.3.0");
        assert_eq!(card["supportsAuthenticatedExtendedCard"], true);
        let transports: Vec<(&str, &str)> = card["additionalInterfaces"]
            .as_array()
            .expect("additionalInterfaces")
            .iter()
            .filter_map(|i| Some((i["transport"].as_str()?, i["url"].as_str()?)))
            .collect();
        assert_eq!(
            transports,
            [
                ("JSONRPC", interfaces.jsonrpc.as_str()),
                ("HTTP+JSON", interfaces.rest.as_str()),
                ("GRPC", interfaces.grpc.as_str()),
            ]
        );
        assert_eq!(card["security"], json!([{"oauth": ["read"]}, {"key": []}]));
        assert_eq!(card["securitySchemes"]["key"]["type"], "apiKey");
        assert_eq!(card["securitySchemes"]["key"]["in"], "header");
        // The 1.0 card's members are all there, unchanged.
        for (member, value) in v1.as_object().expect("object") {
            if member == "securitySchemes" {
                continue;
            }
            assert_eq!(card.get(member), Some(value), "{member}");
        }
        for (name, scheme) in v1["securitySchemes"].as_object().expect("schemes") {
            for (k, v) in scheme.as_object().expect("scheme") {
                assert_eq!(&card["securitySchemes"][name][k], v, "{name}.{k}");
            }
        }
    }
    // Each form revalidates with its own ETag.
    let etag = v1_headers["etag"].to_str().expect("ascii");
    let again = reqwest::Client::new()
        .get(&url)
        .header("a2a-version", "1.0")
        .header("if-none-match", etag)
        .send()
        .await
        .expect("conditional");
    assert_eq!(again.status(), 304);
    let other = reqwest::Client::new()
        .get(&url)
        .header("if-none-match", etag)
        .send()
        .await
        .expect("conditional");
    assert_eq!(
        other.status(),
        200,
        "the v0.3 form is another representation"
    );
}

/// A signed card verifies in each form: 1.0 clients get it exactly as signed (and it
/// validates against the v1.0 schema); the form for requests without a 1.x version adds v0.3's
/// members (v0.3 clients need `url`) but changes none of the signed ones, so a verifier that
/// reads the 1.0 card verifies it too. (Before, a signed card reached v0.3 clients without
/// the members they need.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_card_verifies_in_each_form() {
    let key = trident_security::SigningKey::generate().with_kid("k1");
    let keys = trident_security::JwkSet::new(vec![key.public_jwk()]);
    let (interfaces, signed, _server) = serve_card(rich_card(), Some(&key)).await;
    let url = format!("{}/.well-known/agent-card.json", interfaces.rest);

    let (_, v1) = get_card(&url, &[("a2a-version", "1.0")]).await;
    assert_eq!(
        v1,
        serde_json::to_value(&signed).expect("JSON"),
        "as signed"
    );
    let schema = crate::schema::of("lf.a2a.v1.AgentCard");
    assert_eq!(
        crate::schema::violations(&schema, &v1),
        Vec::<String>::new()
    );
    let (_, legacy) = get_card(&url, &[]).await;
    assert_eq!(legacy["url"], interfaces.jsonrpc.as_str(), "{legacy:#}");
    assert_eq!(legacy["protocolVersion"], "0.3.0");
    for (what, json) in [("1.0", v1), ("v0.3", legacy)] {
        let card: pb::AgentCard = serde_json::from_value(json).expect("reads as a 1.0 card");
        assert_eq!(
            trident_security::verify_card(&card, &keys).as_deref(),
            Ok("k1"),
            "the {what} form"
        );
    }
}
