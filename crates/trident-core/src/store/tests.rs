use std::sync::Arc;

use super::Scope;

#[test]
fn a_scope_of_a_request_shares_its_empty_strings_and_equals_a_new_one() {
    let (a, b) = (Scope::of("", ""), Scope::of("", ""));
    assert!(
        Arc::ptr_eq(&a.tenant, &b.tenant),
        "no tenant: one shared string"
    );
    assert!(
        Arc::ptr_eq(&a.owner, &b.tenant),
        "anonymous: the same shared string"
    );
    assert_eq!(a, Scope::new("", ""));
    let named = Scope::of("acme", "alice");
    assert_eq!(named, Scope::new("acme", "alice"));
    assert_eq!((&*named.tenant, &*named.owner), ("acme", "alice"));
    assert_eq!(Scope::of("", "bob"), Scope::new("", "bob"));
}
