struct Player;

#[zlink::actor(type = "player", relocation = disable)]
impl Player {}

impl zlink::object::Actor for Player {}

struct Match;

// An Instance Spot is activated by its first message and takes no Actors.
#[zlink::spot(type = "match", relocation = disable, instance, actors = Player)]
impl Match {}

impl zlink::object::Spot for Match {}

fn main() {}
