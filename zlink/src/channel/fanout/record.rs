//! Fanout records on the wire.
//!
//! An event is three frames: the topic (its own first frame, so SUB prefix filtering works),
//! the envelope head (`5A 4D 03 28 <flags>` + the binary call head carrying the packet
//! name and the event's operation identity), the metadata frame when flag 0x01 is set, and the payload (the codec's bytes). The liveness beacon is two frames: the reserved topic
//! `01 5A 4C 46 31` and `5A 46 01 01`.

use bytes::Bytes;

use crate::link::zmtp::Record;
use crate::wire::{Command, Envelope, Metadata};

/// The reserved topic of the liveness beacon. Publishing on exactly this topic is refused.
pub const BEACON_TOPIC: &[u8] = &[0x01, 0x5A, 0x4C, 0x46, 0x31];
/// The beacon's only payload.
pub const BEACON_PAYLOAD: &[u8] = &[0x5A, 0x46, 0x01, 0x01];

/// The record of one event, the publisher's `operation`.
pub(crate) fn event(
    topic: Bytes,
    (packet, operation): (&str, u64),
    metadata: &Metadata,
    payload: Bytes,
) -> Record {
    let mut frames = vec![topic];
    frames.extend(crate::wire::encode_call(
        Command::FanoutEvent,
        (0, operation),
        0,
        crate::wire::Addressed {
            target: "",
            packet,
            fence: None,
            hops: 0,
            session: None,
            topic: None,
            push: None,
        },
        metadata,
        payload,
    ));
    frames.into()
}

/// The beacon record.
pub(crate) fn beacon() -> Record {
    vec![
        Bytes::from_static(BEACON_TOPIC),
        Bytes::from_static(BEACON_PAYLOAD),
    ]
    .into()
}

/// What a subscriber received.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Inbound {
    Beacon,
    Event {
        packet: String,
        metadata: Metadata,
        payload: Bytes,
    },
}

/// Parses one received record; anything malformed (including a reserved-topic record
/// that is not an exact beacon) is a protocol error.
pub(crate) fn parse(frames: &[Bytes]) -> Result<Inbound, String> {
    let topic = frames.first().ok_or("empty record")?;
    if topic.as_ref() == BEACON_TOPIC {
        return match frames {
            [_, payload] if payload.as_ref() == BEACON_PAYLOAD => Ok(Inbound::Beacon),
            _ => Err("malformed liveness beacon".into()),
        };
    }
    match Envelope::decode(&frames[1..]).map_err(|e| e.reason)? {
        Envelope::Call(call) if call.command == Command::FanoutEvent => Ok(Inbound::Event {
            packet: call.head.packet.as_str().to_string(),
            metadata: call.metadata,
            payload: call.payload,
        }),
        other => Err(format!("{:?} is not a fanout event", other.command())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_beacons_round_trip_and_impostors_are_refused() {
        let record = event(
            Bytes::from_static(b"prices"),
            ("PriceChanged", 1),
            &Metadata::new(),
            Bytes::from_static(b"\xa0"),
        );
        assert_eq!(record.len(), 3);
        assert_eq!(
            &record[1][..5],
            &[0x5A, 0x4D, crate::wire::PROTOCOL_MAJOR, 40, 0x00]
        );
        assert_eq!(
            parse(&record),
            Ok(Inbound::Event {
                packet: "PriceChanged".into(),
                metadata: Metadata::new(),
                payload: Bytes::from_static(b"\xa0")
            })
        );
        let mut metadata = Metadata::new();
        metadata
            .insert("trace", "t-1")
            .expect("metadata within bounds");
        let with_metadata = event(
            Bytes::from_static(b"prices"),
            ("PriceChanged", 2),
            &metadata,
            Bytes::new(),
        );
        assert_eq!(with_metadata.len(), 4);
        assert!(
            matches!(parse(&with_metadata), Ok(Inbound::Event { metadata: m, .. }) if m == metadata)
        );
        assert_eq!(parse(&beacon()), Ok(Inbound::Beacon));
        let impostor = [Bytes::from_static(BEACON_TOPIC), Bytes::from_static(b"no")];
        assert!(parse(&impostor).is_err());
        let three = [beacon()[0].clone(), beacon()[1].clone(), Bytes::new()];
        assert!(parse(&three).is_err());
        assert!(parse(&[Bytes::from_static(b"t"), Bytes::from_static(b"junk")]).is_err());
    }
}
