//! The builders of `src/builders.rs`, checked through the ProtoJSON they produce.

use serde_json::json;

use crate::{AgentCard, AgentExtension, AgentSkill, Artifact, Message, Part, SecurityScheme};

#[test]
fn a_raw_part_with_media_type_and_filename_in_one_call() {
    let part = Part::file(b"%PDF".to_vec(), "application/pdf", "report.pdf");
    assert_eq!(
        serde_json::to_value(&part).expect("json"),
        json!({"raw": "JVBERg==", "mediaType": "application/pdf", "filename": "report.pdf"})
    );
    let linked = Part::file_url("https://x.example/a.png", "image/png", "a.png");
    assert_eq!(
        serde_json::to_value(&linked).expect("json"),
        json!({"url": "https://x.example/a.png", "mediaType": "image/png", "filename": "a.png"})
    );
    let data = Part::data(json!({"k": 1}))
        .with_media_type("application/json")
        .with_metadata(json!({"source": "test"}));
    assert_eq!(
        serde_json::to_value(&data).expect("json"),
        json!({"data": {"k": 1}, "mediaType": "application/json", "metadata": {"source": "test"}})
    );
}

#[test]
fn messages_and_artifacts_chain() {
    let message = Message::user("m-1", vec![Part::text("a")])
        .with_part(Part::text("b"))
        .with_context_id("c-1")
        .with_task_id("t-1")
        .with_reference_task_ids(["t-0"])
        .with_extensions(["urn:x"]);
    assert_eq!(
        serde_json::to_value(&message).expect("json"),
        json!({
            "messageId": "m-1", "contextId": "c-1", "taskId": "t-1", "role": "ROLE_USER",
            "parts": [{"text": "a"}, {"text": "b"}], "extensions": ["urn:x"],
            "referenceTaskIds": ["t-0"]
        })
    );
    let artifact = Artifact::new("a-1", vec![Part::text("x")])
        .with_name("Result")
        .with_description("The result")
        .with_part(Part::text("y"));
    assert_eq!(artifact.name, "Result");
    assert_eq!(artifact.description, "The result");
    assert_eq!(artifact.parts.len(), 2);
}

#[test]
fn a_card_with_skills_capabilities_security_and_interfaces() {
    let card = AgentCard::builder("Agent", "Does things")
        .version("2.0.0")
        .provider("Example", "https://example.com")
        .skill(
            AgentSkill::new("s", "Skill", "A skill")
                .with_tags(["t"])
                .with_examples(["do it"]),
        )
        .streaming(false)
        .push_notifications(false)
        .extended_agent_card(true)
        .extension(AgentExtension {
            uri: "urn:ext".into(),
            ..Default::default()
        })
        .security_scheme("bearer", SecurityScheme::bearer("JWT"))
        .security_scheme("key", SecurityScheme::api_key_header("X-API-Key"))
        .require(["bearer"])
        .interface("https://agent.example/", "JSONRPC")
        .build();
    let json = serde_json::to_value(&card).expect("json");
    assert_eq!(json["version"], "2.0.0");
    assert_eq!(json["skills"][0]["tags"], json!(["t"]));
    assert_eq!(
        json["capabilities"],
        json!({"streaming": false, "pushNotifications": false, "extendedAgentCard": true,
               "extensions": [{"uri": "urn:ext"}]})
    );
    assert_eq!(
        json["securitySchemes"]["bearer"],
        json!({"httpAuthSecurityScheme": {"scheme": "bearer", "bearerFormat": "JWT"}})
    );
    assert_eq!(
        json["securitySchemes"]["key"],
        json!({"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}})
    );
    assert_eq!(
        json["securityRequirements"],
        json!([{"schemes": {"bearer": {}}}])
    );
    assert_eq!(
        json["supportedInterfaces"],
        json!([{"url": "https://agent.example/", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0"}])
    );
}

#[test]
fn a_card_without_skills_gets_one() {
    let card = AgentCard::builder("Agent", "Does things").build();
    assert_eq!(card.skills.len(), 1);
    assert_eq!(card.skills[0].name, "Agent");
    assert_eq!(card.default_input_modes, ["text/plain"]);
    assert_eq!(card.capabilities.and_then(|c| c.streaming), Some(true));
}
