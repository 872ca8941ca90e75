//! Tidy checks of the case list.

use std::collections::BTreeSet;

use crate::{CASES, Tier};

/// The names of the `pub async fn NAME(t: &dyn Target)` items of cases.rs, cases/raw.rs and
/// cases/preview.rs: every case as written.
fn written_cases() -> BTreeSet<String> {
    let source = [
        include_str!("cases.rs"),
        include_str!("cases/raw.rs"),
        include_str!("cases/preview.rs"),
    ];
    source
        .iter()
        .flat_map(|s| s.lines())
        .filter_map(|l| l.trim_start().strip_prefix("pub async fn "))
        .filter_map(|rest| rest.split_once('(').map(|(name, _)| name.trim().to_owned()))
        .collect()
}

#[test]
fn every_case_is_registered() {
    let written = written_cases();
    assert!(
        written.len() > 20,
        "found the cases in cases.rs: {written:?}"
    );
    let registered: BTreeSet<String> = CASES.iter().map(|c| c.name.to_owned()).collect();
    let unregistered: Vec<_> = written.difference(&registered).collect();
    assert!(
        unregistered.is_empty(),
        "cases written in cases.rs, cases/raw.rs or cases/preview.rs but missing from with_cases! in lib.rs (so they never run): \
         {unregistered:?}"
    );
    assert_eq!(registered.len(), CASES.len(), "a case is registered twice");
}

#[test]
fn every_case_cites_a_section_and_protocol_cases_come_first() {
    for c in CASES {
        assert!(!c.spec.is_empty(), "{} cites no section", c.name);
        for number in c.spec {
            assert!(
                crate::spec::section(number).is_some(),
                "{} cites §{number}, which the digest does not have",
                c.name
            );
        }
    }
    let first_scripted = CASES
        .iter()
        .position(|c| c.tier == Tier::Scripted)
        .unwrap_or(CASES.len());
    assert!(
        CASES[first_scripted..]
            .iter()
            .all(|c| c.tier == Tier::Scripted),
        "the report lists the protocol tier, then the scripted one"
    );
}
