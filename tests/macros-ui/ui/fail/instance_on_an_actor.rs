struct Player;

// Only a Spot type can be an Instance Spot type.
#[zlink::actor(type = "player", relocation = disable, instance)]
impl Player {}

impl zlink::object::Actor for Player {}

fn main() {}
