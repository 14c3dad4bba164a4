//! The gateway's session type: one per connected client. `login` binds the session to
//! the client's player Actor (on whichever player node runs it); every other packet goes
//! to that player over the binding, untouched.

use zlink::object::{ActorCreation, ActorRef};
use zlink::session::{CloseReason, Packet, SessionContext};

use super::messages::{Login, Replaced, Welcome};
use super::player::Player;

/// One client's session: the player it logged in as.
#[derive(Default)]
pub struct ChatSession {
    player: Option<String>,
}

#[zlink::session]
impl ChatSession {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<Welcome> {
        let actors = ctx.handle().actors();
        let player = match actors
            .get_or_create(&login.name, Player::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(player) | ActorCreation::Existing(player) => player,
        };
        // Binding a name already bound elsewhere takes it over: that session is told.
        let bound = ctx.bind(&player).await?;
        self.player = Some(login.name.clone());
        Ok(Welcome {
            player: login.name,
            node: bound.rid,
        })
    }

    #[on_packet]
    async fn relay_to_player(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        crate::logged_in::relay_to_player(self.player.as_deref(), packet, ctx).await
    }

    #[on_actor_binding_replaced]
    async fn logged_in_elsewhere(&mut self, player: ActorRef, ctx: &SessionContext) {
        let told = ctx
            .send(&Replaced {
                player: player.id.to_string(),
            })
            .await;
        if let Err(e) = told {
            tracing::debug!(error = %e, "a replaced session's client was not told");
        }
    }

    #[on_disconnected]
    async fn gone(&mut self, reason: CloseReason, _ctx: &SessionContext) {
        tracing::info!(player = ?self.player, ?reason, "client gone");
    }
}
