struct Match;

// `instance` is a flag, not a key with a value.
#[zlink::spot(type = "match", relocation = disable, instance = true)]
impl Match {}

impl zlink::object::Spot for Match {}

fn main() {}
