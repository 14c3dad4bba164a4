//! The code of the book's "Performance and sizing" chapter: a node whose route cache is
//! sized for the objects it calls, and the status that shows it.

#[tokio::test]
async fn performance_chapter() -> zlink::Result<()> {
    zlink_book_snippets::statements!("performance.md", "route-cache-size");
    assert_eq!(routes.routes, 0, "a new node holds no routes");
    gateway.shutdown().await;
    Ok(())
}
