//! The page, embedded in the binary: plain hand-written HTML, CSS and JavaScript (no build
//! step, nothing fetched from elsewhere).

/// `/`: the page.
pub(crate) const INDEX_HTML: &str = include_str!("assets/index.html");
/// `/console.css`.
pub(crate) const CONSOLE_CSS: &str = include_str!("assets/console.css");
/// `/console.js`.
pub(crate) const CONSOLE_JS: &str = include_str!("assets/console.js");
/// `/push.js`: the Push section (the console's webhook receiver).
pub(crate) const PUSH_JS: &str = include_str!("assets/push.js");
/// `/conformance.js`: the Conformance and Compare bindings sections.
pub(crate) const CONFORMANCE_JS: &str = include_str!("assets/conformance.js");
