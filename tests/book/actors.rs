//! The Actor code shown in the book's "Spots and Actors" chapter: a player Actor declared
//! with `#[zlink::actor]`, created in its node's Entry Spot, called by ID from another
//! node, joining a table Spot on its node and leaving it, over real TCP on 127.0.0.1.

use serde::{Deserialize, Serialize};

zlink_book_snippets::snippet!("spots.md", "actor");

zlink_book_snippets::snippet!("spots.md", "table");

#[tokio::test]
async fn actors_chapter() -> zlink::Result<()> {
    zlink_book_snippets::statements!("spots.md", "actors-nodes");

    zlink_book_snippets::statements!("spots.md", "actors-create");

    zlink_book_snippets::statements!("spots.md", "join");

    zlink_book_snippets::statements!("spots.md", "destroy");

    gateway.shutdown().await;
    game.shutdown().await;
    Ok(())
}
