//! Putting bots into the world: each is a player Actor, created where placement puts it,
//! entered with its plan and then walking by itself (see [`player`](super::player)).

use zlink::object::ActorCreation;
use zlink::Handle;

use super::messages::{Enter, Welcome};
use super::patrol::BotPlan;
use super::player::{Player, PlayerClient};

/// Creates the bots of `plans` (or finds them) and enters each into the world; entering
/// one already in it changes nothing. Their welcomes, in the plans' order.
pub async fn start_bots(handle: &Handle, plans: &[BotPlan]) -> zlink::Result<Vec<Welcome>> {
    let mut welcomes = Vec::with_capacity(plans.len());
    for plan in plans {
        match handle
            .actors()
            .get_or_create(&plan.name, Player::STABLE_TYPE)
            .await?
        {
            ActorCreation::Created(_) | ActorCreation::Existing(_) => {}
        }
        let enter = Enter {
            bot: Some(plan.clone()),
        };
        welcomes.push(
            PlayerClient::new(handle, plan.name.as_str())
                .enter(&enter)
                .await?,
        );
    }
    Ok(welcomes)
}
