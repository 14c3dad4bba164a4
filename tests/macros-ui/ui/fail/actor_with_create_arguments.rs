struct Player;

// An Actor's creation carries no arguments: `create` is a Spot's.
#[zlink::actor(type = "player", relocation = disable, create = u32)]
impl Player {}

impl zlink::object::Actor for Player {}

fn main() {}
