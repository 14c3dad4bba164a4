//! A player: an Actor on a player node, bound to its client's session on the gateway.
//! What the client sends reaches it over the binding; what it pushes reaches the client.
//! It moves between player nodes with its state while the client stays connected.

use serde::{Deserialize, Serialize};
use zlink::object::{Actor, ActorContext, RelocationState};
use zlink::ErrorKind;

use super::messages::{Enter, Hear, Here, Join, Joined, Leave, Line, Say, Spoken, Where};
use super::room::RoomClient;

/// One player: the room it is in.
#[derive(Default, Serialize, Deserialize)]
pub struct Player {
    room: Option<String>,
}

impl RelocationState for Player {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        crate::json_state::capture(self)
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        *self = crate::json_state::restore(state)?;
        Ok(())
    }
}

#[zlink::actor(type = "chat-player", relocation = preserve)]
impl Player {
    #[handler]
    async fn join(&mut self, join: Join, ctx: &ActorContext) -> zlink::Result<Joined> {
        let room = RoomClient::get_or_create(ctx.handle(), join.room.as_str()).await?;
        let entered = room
            .enter(&Enter {
                player: ctx.id().to_string(),
            })
            .await?;
        self.room = Some(join.room.clone());
        Ok(Joined {
            room: join.room,
            members: entered.members,
            next_seq: entered.next_seq,
        })
    }

    #[handler]
    async fn say(&mut self, say: Say, ctx: &ActorContext) -> zlink::Result<()> {
        let Some(room) = &self.room else {
            return Err(zlink::Error::new(
                ErrorKind::InvalidOperation,
                "join a room first",
            ));
        };
        RoomClient::new(ctx.handle(), room.as_str())
            .spoken(&Spoken {
                player: ctx.id().to_string(),
                text: say.text,
            })
            .await
    }

    #[handler]
    async fn hear(&mut self, hear: Hear, ctx: &ActorContext) -> zlink::Result<()> {
        let line = Line {
            room: hear.room,
            seq: hear.seq,
            from: hear.from,
            text: hear.text,
            via: ctx.handle().rid().to_string(),
        };
        match ctx.push(&line).await {
            Ok(()) => Ok(()),
            // No session is bound any more: the client left, so the player leaves too.
            Err(e) if e.is(ErrorKind::InvalidOperation) || e.is(ErrorKind::Unavailable) => {
                if let Some(room) = self.room.take() {
                    RoomClient::new(ctx.handle(), room.as_str())
                        .leave(&Leave {
                            player: ctx.id().to_string(),
                        })
                        .await?;
                }
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    #[handler]
    async fn locate(&mut self, _where: Where, ctx: &ActorContext) -> zlink::Result<Here> {
        Ok(Here {
            node: ctx.handle().rid().to_string(),
        })
    }
}

impl Actor for Player {}
