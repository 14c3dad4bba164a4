//! What a gateway's sessions share: a packet from a logged-in client goes to its player
//! over the binding; before login, it is refused with a clear error.

use zlink::session::{Packet, SessionContext};
use zlink::ErrorKind;

/// Relays `packet` to `player` (the Actor the session is bound to), or refuses it when
/// the client has not logged in.
pub async fn relay_to_player(
    player: Option<&str>,
    packet: Packet,
    ctx: &SessionContext,
) -> zlink::Result<()> {
    match player {
        Some(player) => ctx.relay(player, packet).await,
        None => Err(zlink::Error::new(
            ErrorKind::InvalidOperation,
            format!("log in before {:?}", packet.name()),
        )),
    }
}
