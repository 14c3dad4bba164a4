use serde::{Deserialize, Serialize};
use zlink::object::{Spot, SpotContext};

/// A request to a Tally: add this much. Its reply is the new total.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Total)]
pub struct Add(pub u64);

/// What a Tally answers.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Total(pub u64);

/// A counter with a global ID: whichever node calls it, one instance runs it, one
/// message at a time.
#[derive(Default)]
pub struct Tally {
    total: u64,
}

#[zlink::spot(type = "tally", relocation = disable)]
impl Tally {
    #[handler]
    async fn add(&mut self, add: Add, _ctx: &SpotContext) -> zlink::Result<Total> {
        self.total += add.0;
        Ok(Total(self.total))
    }
}

impl Spot for Tally {}
