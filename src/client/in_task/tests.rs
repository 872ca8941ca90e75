use super::*;
use crate::render::scrub;

fn status(parts: Vec<pb::Part>) -> pb::TaskStatus {
    pb::TaskStatus {
        state: pb::TaskState::AuthRequired as i32,
        message: Some(pb::Message::user("m", parts)),
        ..Default::default()
    }
}

#[test]
fn the_ask_is_read_from_the_status_message() {
    let ask = Ask::of(Some(&status(vec![
        pb::Part::text("Sign in to the calendar"),
        pb::Part::data(serde_json::json!({"note": "not this one"})),
        pb::Part::data(serde_json::json!({
            "securityScheme": "calendar",
            "scopes": ["calendar.read", 7],
            "authUrl": "https://id.example/authorize"
        })),
    ])));
    assert_eq!(
        ask,
        Ask {
            text: "Sign in to the calendar".into(),
            scheme: Some("calendar".into()),
            url: Some("https://id.example/authorize".into()),
            scopes: vec!["calendar.read".into()],
        }
    );
    assert_eq!(
        ask.describe(),
        "Sign in to the calendar; scheme \"calendar\"; scopes calendar.read; sign in at \
         https://id.example/authorize"
    );
    // The other spellings, and nothing at all.
    let other = Ask::of(Some(&status(vec![pb::Part::data(
        serde_json::json!({"authScheme": "oauth2"}),
    )])));
    assert_eq!(other.scheme.as_deref(), Some("oauth2"));
    assert_eq!(Ask::of(None), Ask::default());
    assert_eq!(Ask::default().describe(), "(no explanation given)");
}

#[test]
fn scrub_redacts_the_credential_wherever_it_is_nested() {
    let mut value = serde_json::json!({
        "task": {"history": [
            {"parts": [{"data": {"authorization": {"scheme": "s", "credentials": "sekrit"}}}]},
            {"parts": [{"text": "credentials sekrit-looking but text"}]}
        ]},
        "authorization": "a plain string stays"
    });
    scrub(&mut value);
    let text = value.to_string();
    assert!(!text.contains("\"sekrit\""), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
    assert!(text.contains("\"scheme\":\"s\""), "{text}");
    assert!(text.contains("a plain string stays"), "{text}");
}
