//! The store contract suite against the in-memory store (the durable stores run the same
//! suite in `trident-store`).

#[tokio::test]
async fn memory_store_passes_the_contract() {
    trident_core::store::contract::run(&trident_engine::store::in_memory()).await;
}
