//! The code of the Relocation chapter's "Moving a Spot" section: a table Spot whose guests
//! (Actors) sit at it, moved with them as one unit, state and all.

use bytes::Bytes;

use std::sync::Arc;

use zlink::store::{LocationStore, RelocationStore};
use zlink::Runtime;

zlink_book_snippets::snippet!("relocation.md", "table");

/// A node that serves tables and guests, on the stores the test's nodes share.
async fn node(
    rid: &str,
    location: &Arc<dyn LocationStore>,
    relocation: &Arc<dyn RelocationStore>,
) -> zlink::Result<Runtime> {
    let host = rid.to_string();
    Runtime::builder()
        .mesh_name("book-tables")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(location.clone())
        .relocation_store(relocation.clone())
        .spot_type(Table::spot_type(move |_| Table {
            node: host.clone(),
            said: Vec::new(),
            guests: Vec::new(),
        })?)
        .actor_type(Guest::actor_type(|_| Guest)?)
        .build()?
        .start()
        .await
}

#[tokio::test]
async fn a_table_moves_with_its_guests_and_what_was_said() -> zlink::Result<()> {
    let location = <dyn LocationStore>::in_memory();
    let relocation = <dyn RelocationStore>::in_memory();
    let a = node("a", &location, &relocation).await?;
    let b = node("b", &location, &relocation).await?;
    a.spots().ready(Table::STABLE_TYPE, 2).await?;
    // The table on a, and two guests there (a guest sits at a table on its own node;
    // placement picks the node of each creation, so creations elsewhere are skipped).
    let mut table = String::new();
    for n in 0.. {
        table = format!("t{n}");
        let created = a
            .spots()
            .get_or_create(&table, Table::STABLE_TYPE, Bytes::new())
            .await?;
        if matches!(created, zlink::object::SpotCreation::Created(ref at, _) if at.rid == "a") {
            break;
        }
    }
    let mut guests = Vec::new();
    for n in 0.. {
        let guest = format!("guest-{n}");
        if a.actors().create(&guest, Guest::STABLE_TYPE).await?.rid == "a" {
            GuestClient::new(&a, &guest).sit(Sit(table.clone())).await?;
            guests.push(guest);
        }
        if guests.len() == 2 {
            break;
        }
    }
    // A join completes after the guest's turn: wait until the table has seated both.
    let at_table = TableClient::new(&b, &table);
    zlink_testkit::wait_until(
        std::time::Duration::from_secs(5),
        "both guests seated",
        || async {
            at_table
                .look(Look)
                .await
                .is_ok_and(|scene| scene.guests.len() == 2)
        },
    )
    .await;
    at_table.say(Say("welcome".into())).await?;

    zlink_book_snippets::statements!("relocation.md", "move_unit");

    let scene = TableClient::new(&a, &table).look(Look).await?;
    assert_eq!(scene.node, "b");
    assert_eq!(scene.said, ["welcome"]);
    assert_eq!(scene.guests, guests);
    for guest in &guests {
        assert_eq!(
            a.actors().find(guest).await?.map(|g| g.rid),
            Some("b".to_string())
        );
    }
    b.shutdown().await;
    a.shutdown().await;
    Ok(())
}
