//! The code shown in the book's "Spots" chapter: a chat room Spot declared with
//! `#[zlink::spot]`, created through the Location Store and called by ID from another
//! node over real TCP on 127.0.0.1.

use serde::{Deserialize, Serialize};

zlink_book_snippets::snippet!("spots.md", "messages");

zlink_book_snippets::snippet!("spots.md", "spot");

#[tokio::test]
async fn spots_chapter() -> zlink::Result<()> {
    zlink_book_snippets::statements!("spots.md", "nodes");

    zlink_book_snippets::statements!("spots.md", "create");

    zlink_book_snippets::statements!("spots.md", "call");

    zlink_book_snippets::statements!("spots.md", "close");

    lobby.shutdown().await;
    server.shutdown().await;
    Ok(())
}
