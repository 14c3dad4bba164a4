//! A crate that reaches zlink under another name, as an application does when a platform
//! crate re-exports it. `::zlink` does not resolve here, so this compiles only if the
//! macros' generated code uses the path given with `crate = "..."`.

use platform::HandlerContext;
use serde::{Deserialize, Serialize};

/// A request for the length of a text.
#[derive(Debug, Serialize, Deserialize, platform::Message)]
#[message(crate = "::platform", reply = Length)]
pub struct Measure(pub String);

/// The reply to [`Measure`].
#[derive(Debug, PartialEq, Serialize, Deserialize, platform::Message)]
#[message(crate = "::platform")]
pub struct Length(pub usize);

/// Measures texts.
#[derive(Clone)]
pub struct Ruler;

#[platform::channel(server, name = "ruler", crate = "::platform")]
impl Ruler {
    #[handler]
    async fn measure(&self, m: Measure, _ctx: &HandlerContext) -> platform::Result<Length> {
        Ok(Length(m.0.len()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use platform::{PeerSpec, Runtime};

    use super::*;

    #[tokio::test]
    async fn generated_code_uses_the_crate_path_override() -> platform::Result<()> {
        let server = Runtime::builder()
            .mesh_name("crate-path")
            .listen("tcp://127.0.0.1:0")
            .serve(Ruler)
            .build()?
            .start()
            .await?;
        let client = Runtime::builder()
            .mesh_name("crate-path")
            .listen("tcp://127.0.0.1:0")
            .peer(PeerSpec::new(server.endpoint()))
            .channel_client("ruler")
            .build()?
            .start()
            .await?;
        client
            .nodes()
            .wait_for(Duration::from_secs(10), |peers| !peers.is_empty())
            .await?;
        let length = RulerClient::on_default_channel(&client)
            .measure(&Measure("four".into()))
            .await?;
        assert_eq!(length, Length(4));
        client.shutdown().await;
        server.shutdown().await;
        Ok(())
    }
}
