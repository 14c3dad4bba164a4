//! A chat room: a Spot on the hall node that numbers every line said in it and tells each
//! member player, wherever that player runs now.

use zlink::object::{Spot, SpotContext};

use super::messages::{Enter, Entered, Hear, LastSeq, Leave, Spoken, Tally};
use super::player::PlayerClient;

/// One room's members and the number of its last line.
#[derive(Default)]
pub struct Room {
    members: Vec<String>,
    seq: u64,
}

#[zlink::spot(type = "chat-room", relocation = disable)]
impl Room {
    #[handler]
    async fn enter(&mut self, enter: Enter, _ctx: &SpotContext) -> zlink::Result<Entered> {
        if !self.members.contains(&enter.player) {
            self.members.push(enter.player);
        }
        Ok(Entered {
            members: self.members.clone(),
            next_seq: self.seq + 1,
        })
    }

    #[handler]
    async fn leave(&mut self, leave: Leave, _ctx: &SpotContext) -> zlink::Result<()> {
        self.members.retain(|member| *member != leave.player);
        Ok(())
    }

    #[handler]
    async fn spoken(&mut self, spoken: Spoken, ctx: &SpotContext) -> zlink::Result<()> {
        self.seq += 1;
        for member in &self.members {
            // One-way by ID: the room never waits for a player, and the player's node
            // (or the node it just left, following it) takes the line in order.
            let told = PlayerClient::new(ctx.handle(), member.as_str())
                .hear(&Hear {
                    room: ctx.id().to_string(),
                    seq: self.seq,
                    from: spoken.player.clone(),
                    text: spoken.text.clone(),
                })
                .await;
            if let Err(e) = told {
                tracing::warn!(room = %ctx.id(), %member, error = %e, "a member was not told a line");
            }
        }
        Ok(())
    }

    #[handler]
    async fn tally(&mut self, _tally: Tally, _ctx: &SpotContext) -> zlink::Result<LastSeq> {
        Ok(LastSeq(self.seq))
    }
}

impl Spot for Room {}
