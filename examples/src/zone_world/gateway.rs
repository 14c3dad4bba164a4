//! The gateway's session type: one per connected browser. `login` binds the session to the
//! client's player Actor (wherever it runs) and enters it into the world; every other
//! packet goes to that player over the binding, untouched. The player's pushes (acks and
//! views) reach the client through the binding, whichever node the player moved to.

use zlink::object::ActorCreation;
use zlink::session::{CloseReason, Packet, SessionContext};
use zlink::ErrorKind;

use super::messages::{Enter, Login, Welcome};
use super::player::{Player, PlayerClient};

/// One client's session: the player it plays.
#[derive(Default)]
pub struct ZoneSession {
    player: Option<String>,
}

#[zlink::session]
impl ZoneSession {
    // ANCHOR: login
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
    // ANCHOR_END: login

    /// A packet for the player. When the player cannot be reached (its node died), the
    /// session closes telling the client why: it logs in again once the world took the
    /// player's zone back (a replacement node after a reclaim).
    #[on_packet]
    async fn relay_to_player(&mut self, packet: Packet, ctx: &SessionContext) -> zlink::Result<()> {
        let relayed = crate::logged_in::relay_to_player(self.player.as_deref(), packet, ctx).await;
        if let Err(e) = &relayed {
            if e.kind() == Some(ErrorKind::Unavailable) {
                tracing::info!(player = ?self.player, error = %e, "closing a session whose player cannot be reached");
                ctx.close_because(&format!(
                    "your player cannot be reached ({e}); log in again in a moment"
                ));
            }
        }
        relayed
    }

    #[on_disconnected]
    async fn gone(&mut self, reason: CloseReason, _ctx: &SessionContext) {
        tracing::info!(player = ?self.player, ?reason, "client gone");
    }
}
