#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "")]
struct Empty;

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "line\nbreak")]
struct ControlCharacter;

fn main() {}
