//! The gateway's session type: one per connected browser. `login` binds the session to the
//! client's player Actor (wherever it runs) and enters it into the world; every other
//! packet goes to that player over the binding, untouched. The player's pushes (acks and
//! views) reach the client through the binding, whichever node the player moved to.

use zlink::object::ActorCreation;
use zlink::session::{CloseReason, Packet, SessionContext};

use super::messages::{Enter, Login, Welcome};
use super::player::{Player, PlayerClient};

/// One client's session: the player it plays.
#[derive(Default)]
pub struct ZoneSession {
    player: Option<String>,
}

#[zlink::session]
impl ZoneSession {
    #[handler]
    async fn login(&mut self, login: Login, ctx: &SessionContext) -> zlink::Result<Welcome> {
        let player = match ctx
            .handle()
            .actors()
            .get_or_create(&login.name, Player::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(player) | ActorCreation::Existing(player) => player,
        };
        ctx.bind(&player).await?;
        self.player = Some(login.name.clone());
        PlayerClient::new(ctx.handle(), login.name.as_str())
            .enter(&Enter { bot: None })
            .await
    }

    #[on_packet]
    async fn relay_to_player(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        crate::logged_in::relay_to_player(self.player.as_deref(), packet, ctx).await
    }

    #[on_disconnected]
    async fn gone(&mut self, reason: CloseReason, _ctx: &SessionContext) {
        tracing::info!(player = ?self.player, ?reason, "client gone");
    }
}
